#!/usr/bin/env bash
# crates/capi/install.sh PREFIX — install libdirectnfs (built by
# `cargo build --release`), include/directnfs.h and a directnfs.pc made from
# the top-level directnfs.pc.in into PREFIX/{lib,include,lib/pkgconfig}.
#   crates/capi/install.sh /usr/local && pkg-config --libs directnfs
set -euo pipefail
PREFIX=${1:?usage: install.sh PREFIX}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LIBDIR=$ROOT/target/release
for f in libdirectnfs.so libdirectnfs.a; do
    [[ -f $LIBDIR/$f ]] || { echo "install.sh: $LIBDIR/$f missing: run cargo build --release" >&2; exit 1; }
done
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 0755 "$LIBDIR/libdirectnfs.so" "$PREFIX/lib/"
install -m 0644 "$LIBDIR/libdirectnfs.a" "$PREFIX/lib/"
install -m 0644 "$ROOT/include/directnfs.h" "$PREFIX/include/"
grep -v '^#' "$ROOT/directnfs.pc.in" | sed \
    -e "s|@PREFIX@|$PREFIX|" -e "s|@LIBDIR@|\${prefix}/lib|" \
    -e "s|@INCLUDEDIR@|\${prefix}/include|" -e "s|@VERSION@|$VERSION|" \
    -e 's| @RPATH@||' >"$PREFIX/lib/pkgconfig/directnfs.pc"
echo "installed libdirectnfs $VERSION into $PREFIX"

#!/usr/bin/env bash
# package.sh — builds the Debian package target/debian/directnfs_VERSION_ARCH.deb
# from a release build, with dpkg-deb (no cargo plugin needed):
#
#   /usr/bin/dnfs                               the tool
#   /usr/lib/<triplet>/libdirectnfs.so, .a      the C library
#   /usr/lib/<triplet>/libdirectnfs_sqlite.so   the SQLite VFS extension
#   /usr/lib/<triplet>/libdirectnfs_preload.so  the interception library (when built)
#   /usr/include/directnfs.h
#   /usr/lib/<triplet>/pkgconfig/directnfs.pc   (from directnfs.pc.in, no rpath)
#   /usr/share/man/man1/dnfs.1.gz, dnfs-COMMAND.1.gz   generated from the CLI definition
#   bash, zsh and fish completions               generated from the CLI definition
#   /usr/share/doc/directnfs/                    README, RELIABILITY, copyright
#
#   scripts/package/package.sh    # prints the path of the .deb
#
# Needs dpkg-deb (dpkg) and gzip; installs dpkg-dev when missing (root).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

command -v dpkg-architecture >/dev/null || {
    log "installing dpkg-dev"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev >/dev/null
}

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
OUT=$ROOT/target/debian
STAGE=$OUT/directnfs_${VERSION}_${ARCH}
DEB=$OUT/directnfs_${VERSION}_${ARCH}.deb

log "cargo build --release"
cargo build --release --workspace >&2
REL=$ROOT/target/release

rm -rf "$STAGE"
LIB=$STAGE/usr/lib/$TRIPLET
install -d "$STAGE/DEBIAN" "$STAGE/usr/bin" "$LIB/pkgconfig" "$STAGE/usr/include" \
    "$STAGE/usr/share/man/man1" "$STAGE/usr/share/doc/directnfs" \
    "$STAGE/usr/share/bash-completion/completions" "$STAGE/usr/share/zsh/vendor-completions" \
    "$STAGE/usr/share/fish/vendor_completions.d"

install -m 0755 -s "$REL/dnfs" "$STAGE/usr/bin/dnfs"
install -m 0644 -s "$REL/libdirectnfs.so" "$LIB/libdirectnfs.so"
install -m 0644 "$REL/libdirectnfs.a" "$LIB/libdirectnfs.a"
install -m 0644 -s "$REL/libdirectnfs_sqlite.so" "$LIB/libdirectnfs_sqlite.so"
if [[ -f $REL/libdirectnfs_preload.so ]]; then
    install -m 0644 -s "$REL/libdirectnfs_preload.so" "$LIB/libdirectnfs_preload.so"
fi
install -m 0644 include/directnfs.h "$STAGE/usr/include/directnfs.h"
grep -v '^#' directnfs.pc.in | sed \
    -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|\${prefix}/lib/$TRIPLET|" \
    -e "s|@INCLUDEDIR@|\${prefix}/include|" -e "s|@VERSION@|$VERSION|" \
    -e 's| @RPATH@||' >"$LIB/pkgconfig/directnfs.pc"

# Man pages and completions come from the command-line definition itself.
"$REL/dnfs" generate man "$STAGE/usr/share/man/man1"
gzip -9n "$STAGE"/usr/share/man/man1/*.1
"$REL/dnfs" generate completions bash "$OUT/completions"
"$REL/dnfs" generate completions zsh "$OUT/completions"
"$REL/dnfs" generate completions fish "$OUT/completions"
install -m 0644 "$OUT/completions/dnfs.bash" "$STAGE/usr/share/bash-completion/completions/dnfs"
install -m 0644 "$OUT/completions/_dnfs" "$STAGE/usr/share/zsh/vendor-completions/_dnfs"
install -m 0644 "$OUT/completions/dnfs.fish" "$STAGE/usr/share/fish/vendor_completions.d/dnfs.fish"

for doc in README.md RELIABILITY.md; do
    gzip -9nc "$doc" >"$STAGE/usr/share/doc/directnfs/$doc.gz"
done
cat >"$STAGE/usr/share/doc/directnfs/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: directnfs
Files: *
License: MIT OR Apache-2.0
COPYRIGHT

SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat >"$STAGE/DEBIAN/control" <<CONTROL
Package: directnfs
Version: $VERSION
Architecture: $ARCH
Maintainer: directnfs developers <directnfs@example.invalid>
Installed-Size: $SIZE
Depends: libc6 (>= 2.34), libgcc-s1
Section: net
Priority: optional
Homepage: https://example.invalid/directnfs
Description: in-process NFS client for databases (Direct NFS)
 directnfs is an NFSv3 client that runs inside the process that uses it:
 reads and writes go straight to the server over many TCP connections and
 several network paths, with no kernel NFS client and no page cache.
 .
 This package holds the dnfs tool (file commands, check, bench, and the
 live statistics of every directnfs process: stats, top, exporter), the C
 library libdirectnfs with its header and pkg-config file, and the SQLite
 VFS extension.
CONTROL
(cd "$STAGE" && find usr -type f -exec md5sum {} + | sort -k2) >"$STAGE/DEBIAN/md5sums"

rm -f "$DEB"
dpkg-deb --build --root-owner-group -Zxz "$STAGE" "$DEB" >&2
log "built $DEB"
echo "$DEB"

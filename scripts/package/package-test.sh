#!/usr/bin/env bash
# package-test.sh — builds the Debian package (scripts/package/package.sh), installs
# it on this machine with apt-get, checks it against a real server, and
# removes it again:
#
#   1. apt-get install ./target/debian/directnfs_*.deb
#   2. dnfs --version, dnfs check URL, man pages and completions in place
#   3. the C example built against the INSTALLED header and library with
#      pkg-config --cflags --libs directnfs, and run against the server
#   4. apt-get remove directnfs: every file of the package is gone
#
#   DNFS_TEST_URL='nfs://...' scripts/package/package-test.sh
#
# Needs root (apt-get). Without DNFS_TEST_URL the server steps are skipped
# loudly. Prints "N passed, N failed".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"
PASS=0
FAIL=0
check() {
    local what=$1
    shift
    if "$@" >/tmp/dnfs-package-test.out 2>&1; then
        echo "PASS $what"
        PASS=$((PASS + 1))
    else
        echo "FAIL $what"
        sed 's/^/    /' /tmp/dnfs-package-test.out | tail -20
        FAIL=$((FAIL + 1))
    fi
}

if [[ $(id -u) != 0 ]]; then
    log "package-test.sh needs root (apt-get install)"
    exit 1
fi
command -v pkg-config >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkg-config >/dev/null
}

DEB=$(bash scripts/package/package.sh | tail -n 1)
WORK=$(mktemp -d /tmp/dnfs-package-test.XXXXXX)
cleanup() {
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq directnfs >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

log "installing $DEB"
check "apt-get install ./$(basename "$DEB")" \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$DEB"
check "dnfs --version is the package's" bash -c \
    "/usr/bin/dnfs --version | grep -q \"$(dpkg-deb -f "$DEB" Version)\""
check "man pages for dnfs and its commands" bash -c \
    'test -s /usr/share/man/man1/dnfs.1.gz && zcat /usr/share/man/man1/dnfs-stats.1.gz | grep -q "TH dnfs-stats"'
check "bash, zsh and fish completions" bash -c \
    'grep -q exporter /usr/share/bash-completion/completions/dnfs && test -s /usr/share/zsh/vendor-completions/_dnfs && test -s /usr/share/fish/vendor_completions.d/dnfs.fish'
# The single quotes are meant: bash -c expands the command substitution.
# shellcheck disable=SC2016
check "pkg-config finds the installed library" bash -c \
    'pkg-config --cflags --libs directnfs | grep -q -- "-ldirectnfs" && test "$(pkg-config --variable=includedir directnfs)" = /usr/include'
check "the C example builds against the installed header" bash -c \
    "cc -std=c11 -Wall -Werror -o '$WORK/example' tests/c/example.c \$(pkg-config --cflags --libs directnfs) && libs=\$(ldd '$WORK/example') && [[ \$libs != *'$ROOT'* ]]"

if [[ -n ${DNFS_TEST_URL:-} ]]; then
    check "dnfs check URL (installed binary)" /usr/bin/dnfs check "$DNFS_TEST_URL"
    check "the installed C example runs against the server" "$WORK/example" "$DNFS_TEST_URL"
    check "dnfs df (installed binary)" /usr/bin/dnfs df "$DNFS_TEST_URL"
    # dnfs run with the installed interception library (found in the
    # library directory, not next to /usr/bin/dnfs): ls of the export.
    rest=${DNFS_TEST_URL#nfs://}
    host=${rest%%/*}
    export_path=/${rest#*/}
    export_path=${export_path%%\?*}
    {
        echo "server: pkgtest"
        echo "path: ${host%%:*}"
        echo "port: $(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$DNFS_TEST_URL")"
        echo "mount_port: $(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$DNFS_TEST_URL")"
        echo "export: $export_path mount: /dnfs-pkgtest"
    } >"$WORK/dnfstab"
    check "dnfs run finds the installed interception library" bash -c \
        "env -u DIRECTNFS_PRELOAD /usr/bin/dnfs run --config '$WORK/dnfstab' -- ls /dnfs-pkgtest >/dev/null"
else
    log "SKIPPED the server steps: DNFS_TEST_URL is not set"
fi

FILES=$(dpkg -L directnfs | grep -v '/$' || true)
check "apt-get remove directnfs" \
    env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq directnfs
check "every file of the package is gone" bash -c \
    "for f in $(echo "$FILES" | tr '\n' ' '); do [ -d \"\$f\" ] || [ ! -e \"\$f\" ] || { echo \"left: \$f\"; exit 1; }; done"
check "the package is no longer installed" bash -c \
    "! dpkg -s directnfs 2>/dev/null | grep -q '^Status: install ok installed'"

echo "package contents:"
dpkg-deb -c "$DEB" | awk '{print "    " $6}'
echo "$PASS passed, $FAIL failed"
[[ $FAIL == 0 ]]

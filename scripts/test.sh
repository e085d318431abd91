#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run calls it).
#
# 1. installs what the tests need when missing (Debian packages; root),
# 2. checks formatting and lints,
# 3. starts one local NFS-Ganesha (scripts/nfs-server.sh) and runs every
#    test against it: Rust unit/property/real-server tests, then the
#    C library and SQLite tests when those exist,
# 4. stops the server it started, whatever happened.
#
# Exit status is non-zero if anything failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STATE_DIR=${DNFS_TEST_STATE_DIR:-/tmp/dnfs-test-server}
EXPORT_DIR=${DNFS_TEST_EXPORT_DIR:-/tmp/dnfs-test-export}

log() { printf '== %s\n' "$*" >&2; }

install_packages() {
    local missing=()
    command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs)
    command -v rpcbind >/dev/null || [[ -x /usr/sbin/rpcbind ]] || missing+=(rpcbind)
    [[ -e /usr/lib/x86_64-linux-gnu/libnfs.so.13 ]] || missing+=(libnfs13)
    command -v nfs-cp >/dev/null || missing+=(libnfs-utils)
    command -v sqlite3 >/dev/null || missing+=(sqlite3)
    [[ -e /usr/include/sqlite3.h ]] || missing+=(libsqlite3-dev)
    command -v ip >/dev/null || missing+=(iproute2)
    if ((${#missing[@]})); then
        log "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

stop_server() {
    DNFS_STATE_DIR="$STATE_DIR" bash scripts/nfs-server.sh stop >/dev/null 2>&1 || true
}

main() {
    install_packages
    log "cargo fmt --check"
    cargo fmt --all -- --check
    log "cargo clippy"
    cargo clippy --workspace --all-targets -- -D warnings
    log "cargo build --release"
    cargo build --workspace --release

    log "starting NFS-Ganesha"
    stop_server
    trap stop_server EXIT
    local url
    url=$(DNFS_STATE_DIR="$STATE_DIR" DNFS_NFS_PORT=${DNFS_TEST_NFS_PORT:-2549} \
        DNFS_MNT_PORT=${DNFS_TEST_MNT_PORT:-20548} \
        bash scripts/nfs-server.sh start "$EXPORT_DIR" | tail -n 1)
    log "server: $url"
    export DNFS_TEST_URL="$url"
    export DNFS_TEST_EXPORT_DIR="$EXPORT_DIR"
    export DNFS_TEST_REQUIRE_SERVER=1
    export DNFS_TEST_SERVER_PID
    DNFS_TEST_SERVER_PID=$(cat "$STATE_DIR/ganesha.pid" 2>/dev/null || echo "")

    log "cargo test"
    cargo test --workspace --release

    if [[ -x tests/c/run.sh || -f tests/c/run.sh ]]; then
        log "C library tests"
        bash tests/c/run.sh
    fi
    if [[ -f crates/sqlite/tests/run.sh ]]; then
        log "SQLite VFS tests"
        bash crates/sqlite/tests/run.sh
    fi
    log "multipath tests (network namespaces, needs root)"
    if [[ $(id -u) == 0 ]]; then
        bash scripts/multipath-tests.sh
    else
        log "SKIPPED multipath tests: not root"
    fi

    run_fuzzers
    log "all tests passed"
}

# Every fuzz target for a short fixed time (DNFS_FUZZ_SECONDS, default 10).
# cargo-fuzz needs a nightly toolchain: used when this machine has one
# (rustup cannot download one here), otherwise said loudly and skipped.
run_fuzzers() {
    local secs=${DNFS_FUZZ_SECONDS:-10}
    if [[ $secs == 0 ]]; then
        log "SKIPPED fuzzing: DNFS_FUZZ_SECONDS=0"
        return
    fi
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        log "SKIPPED fuzzing: no nightly toolchain on this machine"
        return
    fi
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        log "installing cargo-fuzz"
        cargo install cargo-fuzz --locked --quiet
    fi
    log "fuzzing every target for ${secs}s"
    rm -rf fuzz/artifacts
    bash fuzz/run-all.sh "$secs"
}

main "$@"

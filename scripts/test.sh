#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run calls it).
#
# 1. installs what the tests need when missing (Debian packages; root),
# 2. checks formatting and lints, and that no import knot (a cycle of
#    modules) is new or grew (scripts/check-module-graph.py),
# 3. starts one local NFS-Ganesha (scripts/nfs-server.sh), serving NFSv3 and
#    NFSv4.1 (graceless: no grace period, so NFSv3 tests see no difference),
#    without a lock manager (NLM), and as root a second one with NLM in a
#    network namespace for the NFSv3 lock tests (preload run.sh `nlm`),
#    and runs every test against them: Rust unit/property/real-server tests
#    (DNFS_TEST_URL for NFSv3, DNFS_TEST_URL_V41 for NFSv4.1), then the C
#    library and SQLite tests when those exist; as root also the Debian
#    package test (scripts/package-test.sh), the multipath and operations
#    tests and the fault soak (scripts/soak.sh) in the network namespace
#    topology; then Miri and the fuzzers,
# 4. stops the server it started, whatever happened.
#
# Exit status is non-zero if anything failed, and if any test or step was
# skipped: a run that skipped something has not shown that it works. A
# test says it skipped all or part of what it checks on a line with
# "SKIPPED <name>: <why>" (directnfs_testkit::server::skipped; the shell
# test scripts print the same); this script looks for it in the output of
# every test step, adds the steps it skipped itself (Miri or the fuzzers
# without nightly, root-only steps when not root, DNFS_MIRI=0 and the
# like), and lists them all at the end. DNFS_TEST_ALLOW_SKIPS=1 (a run by
# hand, not as root) lists them without failing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STATE_DIR=${DNFS_TEST_STATE_DIR:-/tmp/dnfs-test-server}
EXPORT_DIR=${DNFS_TEST_EXPORT_DIR:-/tmp/dnfs-test-export}
# The second server, with a lock manager (NLM and rpc.statd, in a network
# namespace of its own): the NFSv3 lock tests. The main server runs
# without one, which the same tests use for the ENOLCK case.
NLM_STATE_DIR=${DNFS_TEST_NLM_STATE_DIR:-/tmp/dnfs-test-nlm-server}
NLM_EXPORT_DIR=${DNFS_TEST_NLM_EXPORT_DIR:-/tmp/dnfs-test-nlm-export}

# Each line says how long the run has taken so far (minutes:seconds), to see
# where CI's time goes.
log() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# The output of every test step, searched for skips at the end, and the
# steps this script skipped itself.
OUTPUT_LOG=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-output.XXXXXX")
SKIPPED_STEPS=()
# The marker of a skipped test in a step's output: "SKIPPED <name>: "
# (directnfs_testkit::server::SKIP_MARKER), anywhere in the line (libtest
# prints "test x ... " and the test's own stderr on one line).
SKIP_PATTERN='\bSKIPPED [^:]+: '

# step CMD...: runs a test step with its output (stdout and stderr) shown
# and kept in OUTPUT_LOG; its exit status is the step's. The copy goes
# through a process substitution, not a pipe: a process a step leaves
# running with the output inherited cannot hold this script up (a pipe's
# tee would wait for it); report_skips waits a while for the copies.
STEP_TEES=()
step() {
    local fd rc=0
    exec {fd}> >(tee -a "$OUTPUT_LOG")
    STEP_TEES+=("$!")
    "$@" >&"$fd" 2>&1 || rc=$?
    exec {fd}>&-
    return "$rc"
}

# skip_step WHY: this script skips a step; said now and counted at the end.
skip_step() {
    log "SKIPPED $*"
    SKIPPED_STEPS+=("$*")
}

# Every skip of the run, then the verdict: a failure unless
# DNFS_TEST_ALLOW_SKIPS=1.
report_skips() {
    local tests=() pid
    # Each step's copy ends once nothing writes to it (at most 10 s each:
    # a process a step left running may hold it open for ever).
    for pid in "${STEP_TEES[@]}"; do
        for _ in {1..100}; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
    mapfile -t tests < <(grep -oE "$SKIP_PATTERN.*" "$OUTPUT_LOG" | sort -u || true)
    local n=$((${#tests[@]} + ${#SKIPPED_STEPS[@]}))
    if ((n == 0)); then
        log "no test and no step was skipped"
        return 0
    fi
    log "$n skipped (tests, then steps of this script):"
    local line
    for line in "${tests[@]}"; do printf '   %s\n' "$line" >&2; done
    for line in "${SKIPPED_STEPS[@]}"; do printf '   SKIPPED %s\n' "$line" >&2; done
    if [[ ${DNFS_TEST_ALLOW_SKIPS:-} == 1 ]]; then
        log "DNFS_TEST_ALLOW_SKIPS=1: the skips above do not fail this run"
        return 0
    fi
    log "FAILED: a run with a skip has not shown that everything works (DNFS_TEST_ALLOW_SKIPS=1 allows them)"
    return 1
}
# shellcheck source=scripts/lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"

install_packages() {
    local missing=()
    command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs)
    command -v rpcbind >/dev/null || [[ -x /usr/sbin/rpcbind ]] || missing+=(rpcbind)
    [[ -e /usr/lib/x86_64-linux-gnu/libnfs.so.13 ]] || missing+=(libnfs13)
    command -v nfs-cp >/dev/null || missing+=(libnfs-utils)
    command -v sqlite3 >/dev/null || missing+=(sqlite3)
    [[ -e /usr/include/sqlite3.h ]] || missing+=(libsqlite3-dev)
    command -v ip >/dev/null || missing+=(iproute2)
    # Operations (issue 15): dnfs top under tmux, dnfs exporter scraped by
    # Prometheus and checked by promtool, the Debian package built and
    # installed (dpkg-dev, pkg-config for the C example against it).
    command -v tmux >/dev/null || missing+=(tmux)
    command -v prometheus >/dev/null || missing+=(prometheus)
    command -v promtool >/dev/null || missing+=(prometheus)
    command -v dpkg-architecture >/dev/null || missing+=(dpkg-dev)
    command -v pkg-config >/dev/null || missing+=(pkg-config)
    # The interception library's tests (crates/preload/tests/run.sh).
    command -v fio >/dev/null || missing+=(fio)
    command -v rsync >/dev/null || missing+=(rsync)
    command -v git >/dev/null || missing+=(git)
    command -v mariadbd >/dev/null || missing+=(mariadb-server)
    command -v mariadb-backup >/dev/null || missing+=(mariadb-backup)
    grep -q 'liburing\.so\.2 ' <(ldconfig -p) || missing+=(liburing2)
    command -v valgrind >/dev/null || missing+=(valgrind)
    # rpc.statd, the NSM side of the NLM test server's lock manager.
    [[ -x /usr/sbin/rpc.statd ]] || missing+=(nfs-common)
    command -v cc >/dev/null || missing+=(gcc libc6-dev)
    local pg_new=
    if [[ ! -x /usr/lib/postgresql/15/bin/postgres ]]; then
        missing+=(postgresql)
        pg_new=1
        # No "main" cluster: the tests make their own, and nothing the
        # install starts may keep running.
        mkdir -p /etc/postgresql-common
        [[ -e /etc/postgresql-common/createcluster.conf ]] ||
            echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
    fi
    if ((${#missing[@]})); then
        log "installing: ${missing[*]}"
        # Installing prometheus, postgresql or mariadb-server must not
        # start its daemon: the tests run their own.
        apt_install_quiet "${missing[@]}"
    fi
    if [[ -n $pg_new ]] && command -v pg_lsclusters >/dev/null; then
        # Stop any cluster the package started anyway (only ones it made).
        pg_lsclusters -h 2>/dev/null | awk '$4 == "online" {print $1, $2}' |
            while read -r ver name; do pg_ctlcluster "$ver" "$name" stop || true; done
    fi
}

stop_server() {
    DNFS_STATE_DIR="$STATE_DIR" bash scripts/nfs-server.sh stop >/dev/null 2>&1 || true
    DNFS_STATE_DIR="$NLM_STATE_DIR" bash scripts/nfs-server.sh stop >/dev/null 2>&1 || true
}

# The repository stands on its own: no file sends its reader to documents
# outside it, and every relative link of its Markdown files resolves.
check_docs() {
    local bad=0 file target dir
    if git ls-files -z | xargs -0 grep -nE '(\.\./)+shared/|shared/(DESIGN|STYLE|SERVER-NOTES)|SERVER-NOTES\.md|[^_]DESIGN\.md|STYLE\.md' \
        -- 2>/dev/null | grep -v '^scripts/test.sh:'; then
        log "the lines above refer to documents outside the repository (docs/ has them)"
        bad=1
    fi
    # A merge conflict committed by mistake (it happened once, in the docs).
    if git grep -nE '^(<<<<<<< |>>>>>>> )' -- ':!scripts/test.sh'; then
        log "the lines above are merge conflict markers"
        bad=1
    fi
    while IFS= read -r file; do
        dir=$(dirname "$file")
        while IFS= read -r target; do
            target=${target%%#*}
            [[ -z $target || $target == *://* || $target == mailto:* ]] && continue
            if [[ ! -e $dir/$target ]]; then
                log "$file: broken link to $target"
                bad=1
            fi
        done < <(grep -oE '\]\([^) ]+\)' "$file" | sed -E 's/^\]\((.*)\)$/\1/')
    done < <(git ls-files '*.md')
    # A test the documents name as proof must exist (a renamed test leaves
    # a promise without one).
    if ! python3 scripts/check-test-names.py; then
        log "the documents above name tests that do not exist"
        bad=1
    fi
    return "$bad"
}

main() {
    install_packages
    log "docs: no references outside the repository, no broken links, no conflict markers, no missing tests"
    check_docs
    log "module graph: no new or grown import knot (scripts/module-knots.txt only tightens)"
    python3 scripts/test_check_module_graph.py
    python3 scripts/check-module-graph.py
    log "cargo fmt --check"
    cargo fmt --all -- --check
    log "cargo clippy"
    cargo clippy --workspace --all-targets -- -D warnings
    log "cargo doc: no broken or private intra-doc links"
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
    RUSTDOCFLAGS="-D warnings" cargo rustdoc -p directnfs-capi --lib
    log "cargo build --release"
    cargo build --workspace --release

    log "starting NFS-Ganesha"
    stop_server
    trap stop_server EXIT
    local url
    url=$(DNFS_STATE_DIR="$STATE_DIR" DNFS_NFS_PORT=${DNFS_TEST_NFS_PORT:-2549} \
        DNFS_MNT_PORT=${DNFS_TEST_MNT_PORT:-20548} DNFS_NFS4=1 DNFS_NFS4_GRACE=0 \
        bash scripts/nfs-server.sh start "$EXPORT_DIR" | tail -n 1)
    log "server: $url"
    export DNFS_TEST_URL="$url"
    export DNFS_TEST_URL_V41
    DNFS_TEST_URL_V41=$(DNFS_STATE_DIR="$STATE_DIR" bash scripts/nfs-server.sh url --vers 4.1)
    log "server (NFSv4.1): $DNFS_TEST_URL_V41"
    export DNFS_TEST_EXPORT_DIR="$EXPORT_DIR"
    export DNFS_TEST_REQUIRE_SERVER=1
    export DNFS_TEST_SERVER_PID
    DNFS_TEST_SERVER_PID=$(cat "$STATE_DIR/ganesha.pid" 2>/dev/null || echo "")
    if [[ $(id -u) == 0 ]]; then
        log "starting the NLM test server (Enable_NLM, rpc.statd; network namespace nlm-dnfs)"
        export DNFS_TEST_URL_NLM DNFS_TEST_REQUIRE_NLM=1
        DNFS_TEST_URL_NLM=$(DNFS_STATE_DIR="$NLM_STATE_DIR" DNFS_NLM=1 DNFS_NFS4=1 DNFS_NFS4_GRACE=0 \
            bash scripts/nfs-server.sh start "$NLM_EXPORT_DIR" | tail -n 1)
        log "NLM server: $DNFS_TEST_URL_NLM"
    else
        log "SKIPPED the NLM test server: not root (a network namespace)"
    fi

    log "cargo test"
    # DIRECTNFS_SQLITE_VERBOSE: the SQLite VFS prints each I/O error it
    # returns, with its file and NFS error (sql.rs's failures otherwise
    # say only "disk I/O error"). DNFS_NETNS_TESTS=later: as root, the
    # network-namespace tests run in their own steps below, so here they
    # say DEFERRED, not SKIPPED.
    local netns=
    [[ $(id -u) == 0 ]] && netns=later
    step env DIRECTNFS_SQLITE_VERBOSE=1 DNFS_NETNS_TESTS="$netns" \
        cargo test --workspace --release --no-fail-fast

    if [[ -x tests/c/run.sh || -f tests/c/run.sh ]]; then
        log "C library tests"
        step bash tests/c/run.sh
    fi
    if [[ $(id -u) == 0 ]]; then
        log "Debian package: build, apt-get install, dnfs check, C example via pkg-config, remove"
        step bash scripts/package-test.sh
    else
        skip_step "the Debian package test: not root (apt-get install)"
    fi
    if [[ -f crates/sqlite/tests/run.sh ]]; then
        log "SQLite VFS tests"
        step bash crates/sqlite/tests/run.sh
        # The same on NFSv4.1, where the lock is a byte-range LOCK: every
        # SQL test and the sqlite3 shell, against the server restarted
        # with a 5 s lease: after each SIGKILL of a lock holder the next
        # open must get the lock within 2 s, well before that lease would
        # free it (it takes over the dead client's owner slot).
        log "SQLite VFS tests on NFSv4.1 (server restarted with a 5 s lease)"
        DNFS_STATE_DIR="$STATE_DIR" bash scripts/nfs-server.sh restart --down 1 --lease 5 >/dev/null
        step env DIRECTNFS_SQLITE_VERBOSE=1 DNFS_TEST_URL="$DNFS_TEST_URL_V41" \
            cargo test --release -p directnfs-sqlite --test sql
        step env DNFS_TEST_URL="$DNFS_TEST_URL_V41" bash crates/sqlite/tests/run.sh
        DNFS_STATE_DIR="$STATE_DIR" bash scripts/nfs-server.sh restart --down 1 --lease default >/dev/null
    fi
    if [[ -f crates/sqlite/tests/sanitized.sh ]]; then
        log "SQLite VFS tests again, SQLite built with ASan + UBSan"
        step bash crates/sqlite/tests/sanitized.sh
    fi
    log "interception library: PostgreSQL, MariaDB, sqlite3, fio, coreutils, git, NFSv3 locks through dnfs run (~10 min)"
    step bash crates/preload/tests/run.sh
    if [[ -n ${DNFS_TEST_URL_V41:-} ]]; then
        log "interception library on NFSv4.1 mounts: every served call, the edge cases, coreutils, sqlite3, fio, MariaDB (~1 min)"
        step env DNFS_PRELOAD_NFS_VERSION=4.1 bash crates/preload/tests/run.sh calls edges untouched coreutils sqlite fio mariadb
    fi
    log "multipath tests (network namespaces, needs root)"
    if [[ $(id -u) == 0 ]]; then
        step bash scripts/multipath-tests.sh
        log "ops: a cut path in dnfs stats/top/exporter and the alert log (network namespaces)"
        step bash scripts/ops-netns-tests.sh
    else
        skip_step "multipath and ops network-namespace tests: not root"
    fi
    run_soak

    run_miri
    run_fuzzers
    report_skips
    rm -f "$OUTPUT_LOG"
    log "all tests passed"
}

# The fault soak (scripts/soak.sh): DNFS_SOAK_MINUTES of faults (default
# 3, about 3.5 minutes in all; 0 skips it) with a fresh seed each run, or
# DNFS_SOAK_SEED. Needs root, like the multipath tests, and the same
# namespace: it runs after them, never beside them.
run_soak() {
    local minutes=${DNFS_SOAK_MINUTES:-3}
    if [[ $minutes == 0 ]]; then
        skip_step "fault soak: DNFS_SOAK_MINUTES=0"
        return
    fi
    if [[ $(id -u) != 0 ]]; then
        skip_step "fault soak: not root"
        return
    fi
    log "fault soak, ${minutes} min (network namespaces, needs root)"
    local args=(--minutes "$minutes")
    [[ -n ${DNFS_SOAK_SEED:-} ]] && args+=(--seed "$DNFS_SOAK_SEED")
    step bash scripts/soak.sh "${args[@]}"
}

# Miri on the unit tests that need neither a socket nor C: the SQLite VFS
# and C API entry points called from Rust (raw pointers, the unsafe blocks
# of crates/sqlite and crates/capi), and crates/wire and crates/engine
# (forbid(unsafe_code): checked for UB in what they call). Tests that need
# a server skip themselves: DNFS_TEST_URL is removed for this step.
# Proptest cases are lowered (PROPTEST_CASES), the slowest tests are
# #[cfg_attr(miri, ignore)], and wire's roundtrip and never_panics suites
# (property tests of safe code, also fuzzed) are left to cargo test.
# DNFS_MIRI=0 skips it; without the nightly toolchain or its miri component
# it is skipped loudly (and counted: report_skips). Its output is not
# searched for skipped tests (not run by `step`): the real-server tests
# skip here by design, and run in the cargo test step.
run_miri() {
    if [[ ${DNFS_MIRI:-1} == 0 ]]; then
        skip_step "Miri: DNFS_MIRI=0"
        return
    fi
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        skip_step "Miri: no nightly toolchain on this machine"
        return
    fi
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        log "installing the miri component"
        if ! rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1; then
            skip_step "Miri: rustup could not install the miri component"
            return
        fi
    fi
    if ! cargo +nightly miri setup >/dev/null 2>&1; then
        skip_step "Miri: cargo miri setup failed (it builds a sysroot from rust-src)"
        return
    fi
    log "Miri: unit tests of sqlite, capi, engine, wire; wire's statements, golden, ganesha (v3 and v4.1)"
    # dotlock:: asks the OS for the host name and process start times,
    # which Miri cannot do. -Zmiri-disable-isolation: proptest reads the
    # working directory. About 2 minutes; the timeout only stops a hang.
    env -u DNFS_TEST_URL -u DNFS_TEST_URL_V41 -u DNFS_TEST_REQUIRE_SERVER \
        PROPTEST_CASES="${DNFS_MIRI_PROPTEST_CASES:-8}" MIRIFLAGS=-Zmiri-disable-isolation \
        timeout 900 cargo +nightly miri test --no-fail-fast \
        -p directnfs-sqlite -p directnfs-capi -p directnfs-engine -p directnfs-wire \
        --lib --test statements --test golden --test ganesha --test golden_v41 \
        --test ganesha_v41 -- --skip dotlock::
    log "Miri: the client's call outcome and reuse, write log, batch and blocking reads"
    # The rest of the client's unit tests need sockets or the clock loop of
    # a transport; these are the ones whose memory ordering and unsafe
    # code Miri can check: the batch and read_at tests run against a
    # server played in-process (src/testing.rs) and would be reported as a
    # write into freed memory if a buffer were let go while the server
    # could still write into it (about 1 minute).
    env -u DNFS_TEST_URL -u DNFS_TEST_URL_V41 -u DNFS_TEST_REQUIRE_SERVER MIRIFLAGS=-Zmiri-disable-isolation \
        timeout 900 cargo +nightly miri test -p directnfs --lib -- \
        io::call::tests io::transport::shared::tests writelog:: batch::tests file::tests
}

# Every fuzz target for a fixed time (DNFS_FUZZ_SECONDS, default 20), two
# at a time (DNFS_FUZZ_JOBS, default 2: this machine's two cores; nothing
# else runs then): 35 x 20 s in about 6 minutes.
# cargo-fuzz needs a nightly toolchain: used when this machine has one
# (rustup cannot download one here), otherwise said loudly and skipped.
run_fuzzers() {
    local secs=${DNFS_FUZZ_SECONDS:-20}
    if [[ $secs == 0 ]]; then
        skip_step "fuzzing: DNFS_FUZZ_SECONDS=0"
        return
    fi
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        skip_step "fuzzing: no nightly toolchain on this machine"
        return
    fi
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        log "installing cargo-fuzz"
        cargo install cargo-fuzz --locked --quiet
    fi
    log "fuzzing every target for ${secs}s, ${DNFS_FUZZ_JOBS:-2} at a time"
    rm -rf fuzz/artifacts
    DNFS_FUZZ_JOBS=${DNFS_FUZZ_JOBS:-2} bash fuzz/run-all.sh "$secs"
}

main "$@"

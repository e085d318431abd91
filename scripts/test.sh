#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run calls it).
#
# 1. installs what the tests need when missing (Debian packages; root),
# 2. checks formatting and lints, and that no import knot (a cycle of
#    modules) is new or grew (scripts/ci/check-module-graph.py),
# 3. starts one local NFS-Ganesha (scripts/server/nfs-server.sh), serving NFSv3 and
#    NFSv4.1 (graceless: no grace period, so NFSv3 tests see no difference),
#    without a lock manager (NLM), and as root a second one with NLM in a
#    network namespace for the NFSv3 lock tests (preload run.sh `nlm`),
#    and a third that takes Kerberos, with its KDC (scripts/server/kdc.sh), for
#    the RPCSEC_GSS tests (DNFS_TEST_URL_KRB5; a second export of it takes
#    krb5p only: DNFS_TEST_URL_KRB5P), and an RPC-with-TLS front
#    (scripts/server/tls-front.py) before the first one's NFS port for the
#    TLS tests (crates/client/tests/tls.rs: DNFS_TEST_TLS_DIR, _PORT),
#    and runs every test against them: Rust unit/property/real-server tests
#    (DNFS_TEST_URL for NFSv3, DNFS_TEST_URL_V41 for NFSv4.1), then the C
#    library and SQLite tests when those exist; as root also the Debian
#    package test (scripts/package/package-test.sh), the multipath and operations
#    tests and the fault soak (scripts/ci/soak.sh) in the network namespace
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
#
# Modes:
#   scripts/test.sh              the whole run (CI: .ci/run)
#   scripts/test.sh --quick      before a commit: the lints, the build and
#                                `cargo test` (unit, property and real-server
#                                tests) against one Ganesha; it names the
#                                steps it leaves to the whole run
#   scripts/test.sh --dry-run    prints the steps in order, lanes included,
#                                and runs none of them
#
# At the end (also after a failure) a table gives each step's wall time,
# the CPU time of the processes it waited for (not the Ganesha daemons'),
# their ratio and its result. A ratio well under the number of cores marks
# a step that mostly waits (servers, sleeps, the network).
#
# Side by side (DNFS_TEST_JOBS, default 2; 1 runs every step in order):
# after the build, the steps against the main servers (one lane) and, as
# root, the network-namespace steps (multipath, ops, soak; the other lane)
# run at the same time. They share no server: the namespace topology has
# its own Ganesha, and only the first lane restarts the main one. Both
# lanes mostly wait on servers and timers. The CPU-bound steps (the
# builds, Miri, the fuzzers) run alone: side by side on two cores they
# would only take turns. The second lane's output is kept in a file and
# shown when it ends; its log lines are shown as they come, marked [netns].
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
# The Kerberos tests' realm (scripts/server/kdc.sh) and server (DNFS_KRB5=1, with
# an rpcbind of its own so it leaves the main server's registrations be).
KDC_STATE_DIR=${DNFS_TEST_KDC_STATE_DIR:-/tmp/dnfs-test-kdc}
KRB5_STATE_DIR=${DNFS_TEST_KRB5_STATE_DIR:-/tmp/dnfs-test-krb5-server}
KRB5_EXPORT_DIR=${DNFS_TEST_KRB5_EXPORT_DIR:-/tmp/dnfs-test-krb5-export}
# Its second export, which takes krb5p only (DNFS_TEST_URL_KRB5P): the front
# ends' Kerberos tests (tests/c/test_secure.c, crates/sqlite/tests/secure.rs,
# run.sh's secure group) work there, and other flavors are refused.
KRB5P_EXPORT_DIR=${DNFS_TEST_KRB5P_EXPORT_DIR:-/tmp/dnfs-test-krb5p-export}
# The RPC-with-TLS front (its certificates and PID) and its first port: four
# ports (STARTTLS, mtls, TLS from the first byte, no TLS) per server port,
# PORT to PORT+31 in all (start_servers; +20 to +31 for the NLM server, as
# root); tls.rs's reconnect test starts a front of its own on PORT+4.
TLS_STATE_DIR=${DNFS_TEST_TLS_STATE_DIR:-/tmp/dnfs-test-tls-front}
TLS_PORT=${DNFS_TEST_TLS_FRONT_PORT:-2560}

QUICK=0
DRY_RUN=0
JOBS=${DNFS_TEST_JOBS:-2}

# Each line says how long the run has taken so far (minutes:seconds), to see
# where CI's time goes. It also names the steps that follow it in the step
# table (STEP_TITLE). In the second lane it goes to the terminal too
# (LANE_TAG, TERMINAL_FD), since that lane's output is held until it ends.
STEP_TITLE=
LANE_TAG=
# The lane a step row belongs to, when lanes run side by side (or would).
ROW_TAG=
exec {TERMINAL_FD}>&2
log() {
    STEP_TITLE="$*"
    local line
    line=$(printf '== [%d:%02d] %s%s' $((SECONDS / 60)) $((SECONDS % 60)) "${LANE_TAG:+[$LANE_TAG] }" "$*")
    printf '%s\n' "$line" >&2
    if [[ -n $LANE_TAG ]]; then printf '%s\n' "$line" >&"$TERMINAL_FD"; fi
}

# The output of every test step, searched for skips at the end; the steps
# this script skipped itself (one a line); the step table (one row a line:
# title, wall seconds, CPU seconds, result, tab-separated). Files, not
# arrays: the second lane is a subshell, and writes to them too.
OUTPUT_LOG=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-output.XXXXXX")
SKIPPED_STEPS_FILE=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-skipped.XXXXXX")
STEP_TABLE=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-steps.XXXXXX")
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
    if ((DRY_RUN)); then
        timed "$@"
        return
    fi
    local fd rc=0
    exec {fd}> >(tee -a "$OUTPUT_LOG")
    STEP_TEES+=("$!")
    timed "$@" >&"$fd" 2>&1 || rc=$?
    exec {fd}>&-
    return "$rc"
}

# timed CMD...: runs CMD in this shell and adds its row to the step table,
# named by the last log line; its exit status is CMD's. With --dry-run it
# only says what it would run. CMD runs as a plain command, so `set -e`
# holds inside a function CMD as it did without timed: a failure there
# ends the script, and the EXIT trap writes the row (TIMED_*). Where timed
# itself is tested (`if ! timed ...`, `timed ... || rc=$?`), the status
# is taken from `$?` and returned.
# A second command under one log line gets a row of its own, named
# "+ COMMAND" (ROW_OF_TITLE: the log line the last row was named by).
TIMED_TITLE=
TIMED_START=
TIMED_CPU0=
ROW_OF_TITLE=
timed() {
    local title=$STEP_TITLE
    if [[ $title == "$ROW_OF_TITLE" ]]; then
        title="  + $*"
    fi
    ROW_OF_TITLE=$STEP_TITLE
    title="${ROW_TAG:+[$ROW_TAG] }$title"
    if ((DRY_RUN)); then
        printf '   would run: %s\n' "$*" >&2
        printf '%s\t-\t-\tdry run\n' "$title" >>"$STEP_TABLE"
        return 0
    fi
    TIMED_TITLE=$title
    TIMED_START=$EPOCHREALTIME
    children_cpu_ticks
    TIMED_CPU0=$CHILD_TICKS
    "$@"
    local rc=$?
    record_timed "$rc"
    return "$rc"
}

# record_timed RC: the row of the step timed started (if one is open).
record_timed() {
    [[ -n $TIMED_START ]] || return 0
    local end=$EPOCHREALTIME result=ok
    children_cpu_ticks
    (($1 == 0)) || result="FAILED (exit $1)"
    awk -v t="$TIMED_TITLE" -v s="$TIMED_START" -v e="$end" -v c="$((CHILD_TICKS - TIMED_CPU0))" \
        -v hz="$(getconf CLK_TCK)" -v r="$result" \
        'BEGIN { printf "%s\t%.1f\t%.1f\t%s\n", t, e - s, c / hz, r }' >>"$STEP_TABLE"
    TIMED_START=
}

# CHILD_TICKS: the user + system CPU time, in clock ticks, of the processes
# this shell has waited for (cutime + cstime of /proc/PID/stat: its own
# children and, through them, theirs). Set in this shell, not printed:
# a command substitution is a new process, whose counts start at zero.
CHILD_TICKS=0
children_cpu_ticks() {
    local stat fields
    read -r stat <"/proc/$BASHPID/stat"
    read -ra fields <<<"${stat##*) }"
    CHILD_TICKS=$((fields[13] + fields[14]))
}

# skip_step WHY: this script skips a step; said now and counted at the end.
skip_step() {
    log "SKIPPED $*"
    printf '%s\n' "$*" >>"$SKIPPED_STEPS_FILE"
    printf '%s%s\t-\t-\tskipped\n' "${ROW_TAG:+[$ROW_TAG] }" "$*" >>"$STEP_TABLE"
}

# Each step's copy ends once nothing writes to it (at most 10 s each: a
# process a step left running may hold it open for ever).
wait_for_step_copies() {
    local pid
    for pid in "${STEP_TEES[@]}"; do
        for _ in {1..100}; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
}

# Every skip of the run, then the verdict: a failure unless
# DNFS_TEST_ALLOW_SKIPS=1.
report_skips() {
    local tests=() SKIPPED_STEPS=()
    wait_for_step_copies
    mapfile -t tests < <(grep -oE "$SKIP_PATTERN.*" "$OUTPUT_LOG" | sort -u || true)
    mapfile -t SKIPPED_STEPS <"$SKIPPED_STEPS_FILE"
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
    command -v shellcheck >/dev/null || missing+=(shellcheck)
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
    # The Kerberos tests' KDC (scripts/server/kdc.sh): krb5kdc, kadmin.local, kinit.
    [[ -x /usr/sbin/krb5kdc ]] || missing+=(krb5-kdc)
    [[ -x /usr/sbin/kadmin.local ]] || missing+=(krb5-admin-server)
    command -v kinit >/dev/null || missing+=(krb5-user)
    command -v cc >/dev/null || missing+=(gcc libc6-dev)
    # The TLS front's certificates (scripts/server/tls-front.py).
    command -v openssl >/dev/null || missing+=(openssl)
    # The independent RPC-with-TLS peer (scripts/server/oncrpc4j-peer.sh, tls_interop.rs).
    command -v java >/dev/null || missing+=(default-jdk-headless)
    command -v mvn >/dev/null || missing+=(maven)
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
    DNFS_STATE_DIR="$STATE_DIR" bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    DNFS_STATE_DIR="$NLM_STATE_DIR" bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    DNFS_STATE_DIR="$KRB5_STATE_DIR" bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    DNFS_KDC_STATE_DIR="$KDC_STATE_DIR" bash scripts/server/kdc.sh stop >/dev/null 2>&1 || true
    python3 scripts/server/tls-front.py stop "$TLS_STATE_DIR" >/dev/null 2>&1 || true
}

# The repository stands on its own: no file sends its reader to documents
# outside it, every relative link of its Markdown files resolves (with its
# #fragment), and the book builds.
# mdbook comes from crates.io, built into target/tools (inside the
# repository, so a fresh clone builds its own) with no default features and
# unoptimised (--debug: 115 s of CPU where a release build took 280 s; the
# book still builds in a second).
install_mdbook() {
    cargo install mdbook --locked --version 0.5.4 --no-default-features --debug \
        --root target/tools
}

# On a fresh clone, mdbook is built in the background while shellcheck and
# clippy run (each mostly one core's work); check_docs waits for it.
MDBOOK_PID=
MDBOOK_LOG=
start_mdbook_build() {
    ((DRY_RUN)) && return 0
    [[ -x target/tools/bin/mdbook ]] && return 0
    MDBOOK_LOG=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-mdbook.XXXXXX")
    install_mdbook >"$MDBOOK_LOG" 2>&1 &
    MDBOOK_PID=$!
}

check_docs() {
    local bad=0
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
    # Links and their #fragments resolve; README and book prose wraps at 100.
    if ! python3 scripts/ci/check-docs.py; then
        log "the lines above are broken links, missing headings or overlong prose"
        bad=1
    fi
    # The book builds, with the mdbook start_mdbook_build made.
    local mdbook=target/tools/bin/mdbook
    if [[ -n $MDBOOK_PID ]]; then
        wait "$MDBOOK_PID" || { cat "$MDBOOK_LOG" >&2; bad=1; }
        MDBOOK_PID=
    fi
    if [[ ! -x $mdbook ]]; then
        install_mdbook || bad=1
    fi
    if ! "$mdbook" build docs/book; then
        log "mdbook build docs/book failed"
        bad=1
    fi
    # The deviations of `dnfs run` the harness tags are the ones
    # docs/run-deviations.md lists, and the other way round.
    if ! python3 crates/preload/tests/differ.py --check; then
        log "the harness's deviations and docs/run-deviations.md differ (above)"
        bad=1
    fi
    # A test the documents name as proof must exist (a renamed test leaves
    # a promise without one).
    if ! python3 scripts/ci/check-test-names.py; then
        log "the documents above name tests that do not exist"
        bad=1
    fi
    return "$bad"
}

# Every shell file of the repository passes shellcheck: the tracked *.sh
# files and those whose first line names sh or bash (.ci/run). Run from the
# top, so that `# shellcheck source=scripts/...` lines resolve; -x follows
# what they source. A `# shellcheck disable=SCxxxx` says why on its line or
# the line above.
lint_shell() {
    local files=() file first
    while IFS= read -r -d '' file; do
        [[ -f $file ]] || continue
        if [[ $file == *.sh ]]; then
            files+=("$file")
            continue
        fi
        first=$(head -c 64 "$file" | head -n 1 | tr -d '\0')
        if [[ $first =~ ^\#!.*[/\ ](ba)?sh([[:space:]]|$) ]]; then files+=("$file"); fi
    done < <(git ls-files -z)
    shellcheck -x "${files[@]}"
}

# The scripts this run calls build with the whole workspace selected (see
# scripts/README.md, "test.sh"): a `cargo build` or `cargo test` with `-p`
# in one of them fails the lints. (Benchmark scripts, run alone, may.)
CI_SCRIPTS=(scripts/test.sh scripts/ci/*.sh scripts/package/*.sh tests/c/run.sh crates/*/tests/*.sh)
check_cargo_selection() {
    local bad
    if bad=$(grep -nE '^[^#]*cargo (build|test)\b[^#]* -p ' "${CI_SCRIPTS[@]}"); then
        printf '%s\n' "$bad" >&2
        log "the lines above build some packages only: select the whole workspace (--workspace)"
        return 1
    fi
}

main() {
    trap on_exit EXIT
    parse_args "$@"
    if ((DRY_RUN)); then
        # What start_servers would export, for the steps that name it.
        export DNFS_TEST_URL=nfs://127.0.0.1/URL-OF-THE-TEST-SERVER
        export DNFS_TEST_URL_V41=nfs://127.0.0.1/V41-URL-OF-THE-TEST-SERVER
        export DNFS_SQL_TEST_BIN=SQL-TEST-BINARY
    fi
    log "install packages"
    timed install_packages
    start_mdbook_build
    log "module graph: no new or grown import knot (scripts/ci/module-knots.txt only tightens)"
    timed python3 scripts/ci/test_check_module_graph.py
    timed python3 scripts/ci/check-module-graph.py
    log "scripts: every scripts/ path a file names exists"
    timed python3 scripts/ci/test_check_script_paths.py
    timed python3 scripts/ci/check-script-paths.py
    log "shellcheck: every shell file; the CI scripts build with --workspace"
    timed lint_shell
    timed check_cargo_selection
    log "cargo fmt --check"
    timed cargo fmt --all -- --check
    # --release here and in cargo doc: the build scripts (SQLite's and
    # ring's C) and proc macros are then built once, for the release build
    # below too, instead of once per profile.
    log "cargo clippy"
    timed cargo clippy --workspace --all-targets --release -- -D warnings
    log "docs: no references outside the repository, no broken links or fragments, no conflict markers, no missing tests, the book builds"
    timed python3 scripts/ci/test_check_docs.py
    timed check_docs
    if ((!QUICK)); then
        log "cargo doc: no broken or private intra-doc links"
        timed env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --release
        timed env RUSTDOCFLAGS="-D warnings" cargo rustdoc -p directnfs-capi --lib --release
    fi
    # The test binaries, the namespace lane's (the multipath and ops tests,
    # the soak) among them, built before the lanes start: building is
    # CPU-bound (it gains nothing side by side), and the namespace lane's
    # first step (the multipath tests, one of which compares throughputs)
    # then meets no cargo build. Every later cargo command selects the
    # whole workspace as this one does: `-p` would resolve other features
    # (the client's test hooks are on here) and rebuild. The product build
    # (no test hooks) is made once, by the C tests' step; cargo doc above
    # already compiled every crate without the hooks.
    log "cargo test --no-run: building the test binaries"
    timed cargo test --workspace --release --no-run
    # The sanitized SQLite run (second lane) uses this build's sql test
    # binary, found now: a cargo command there would wait for the main
    # lane's builds and could rebuild what its steps are running.
    export DNFS_SQL_TEST_BIN
    ((DRY_RUN)) || DNFS_SQL_TEST_BIN=$(bash crates/sqlite/tests/sanitized.sh --test-binary 2>/dev/null)

    log "starting NFS-Ganesha"
    timed start_servers
    if ((QUICK)); then
        quick_tests
    else
        run_lanes server_lane netns_lane
    fi
    if ((DRY_RUN)); then
        log "dry run: nothing was run"
        return 0
    fi
    report_skips
    log "all tests passed"
}

# --quick: the cargo test step alone (unit, property and real-server
# tests; the network-namespace tests say DEFERRED), then the steps it left
# out, said as such: they are not skips of a whole run, which CI makes.
quick_tests() {
    log "cargo test"
    step env DIRECTNFS_SQLITE_VERBOSE=1 DNFS_NETNS_TESTS=later \
        cargo test --workspace --release --no-fail-fast
    log "quick run: cargo doc and every step after cargo test are left to the whole run" \
        "(scripts/test.sh; --dry-run lists them)"
}

# --quick, --dry-run; DNFS_TEST_JOBS must be 1 or 2.
parse_args() {
    while (($#)); do
        case $1 in
            --quick) QUICK=1 ;;
            --dry-run) DRY_RUN=1 ;;
            -h | --help)
                sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
                exit 0
                ;;
            *)
                echo "test.sh: unknown argument: $1 (--quick, --dry-run, --help)" >&2
                exit 2
                ;;
        esac
        shift
    done
    # The whole run's release builds carry no debug information (the
    # profile's `debug = 1` is for benchmarks and profiles): less to
    # generate and link for some forty test binaries. Every cargo command
    # of the run, nested ones included, inherits it, so they all share one
    # build. --quick keeps the profile as it is.
    ((QUICK)) || export CARGO_PROFILE_RELEASE_DEBUG=false
    if [[ $JOBS != 1 && $JOBS != 2 ]]; then
        echo "test.sh: DNFS_TEST_JOBS must be 1 or 2, not '$JOBS'" >&2
        exit 2
    fi
}

# At exit, whatever happened: the row of a step that failed, the second
# lane waited for and shown, the servers stopped, the step table shown, the
# temporary files removed.
on_exit() {
    local rc=$?
    record_timed "$rc"
    server_restarts_done stop
    finish_lane || true
    ((!SERVERS_STARTED)) || stop_server
    print_step_table
    rm -f "$OUTPUT_LOG" "$SKIPPED_STEPS_FILE" "$STEP_TABLE" "$RESTARTS_DONE"
    return "$rc"
}

# The step table: title (cut at 70 characters), wall seconds, CPU seconds,
# CPU / wall, result; then the run's wall time.
print_step_table() {
    [[ -s $STEP_TABLE ]] || return 0
    {
        echo
        echo "== steps (wall and CPU seconds; CPU of the processes a step waited for, Ganesha's not included)"
        awk -F '\t' -v total="$SECONDS" '
            BEGIN { printf "%-70s %8s %8s %6s  %s\n", "step", "wall s", "cpu s", "cpu/w", "result" }
            {
                t = length($1) > 70 ? substr($1, 1, 67) "..." : $1
                ratio = ($2 != "-" && $2 > 0) ? sprintf("%.2f", $3 / $2) : "-"
                printf "%-70s %8s %8s %6s  %s\n", t, $2, $3, ratio, $4
            }
            END { printf "%-70s %8d\n", "whole run (side by side steps overlap)", total }
        ' "$STEP_TABLE"
    } >&2
}

# run_lanes FIRST SECOND: the two lanes of steps (functions), side by side
# when DNFS_TEST_JOBS=2, else one after the other. SECOND runs in a
# background subshell with its output in a file (LANE_OUT), shown when it
# ends, and its own copy of the step outputs (LANE_OUTPUT_LOG, added to
# OUTPUT_LOG then, for report_skips). FIRST runs here, as every step did
# before: its first failure ends the script, whose EXIT trap still waits
# for SECOND and shows it. The run fails if either failed.
LANE_PID=
LANE_NAME=
LANE_OUT=
LANE_OUTPUT_LOG=
run_lanes() {
    local first=$1 second=$2
    if ((JOBS == 1)); then
        "$first"
        "$second"
        return
    fi
    if ((DRY_RUN)); then
        log "side by side: $first (rows marked [main]) and $second (rows marked [netns])"
        ROW_TAG=main "$first"
        ROW_TAG=netns "$second"
        return
    fi
    LANE_NAME=$second
    LANE_OUT=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-lane.XXXXXX")
    LANE_OUTPUT_LOG=$(mktemp "${TMPDIR:-/tmp}/dnfs-test-lane-output.XXXXXX")
    log "side by side: $first here, $second in the background (its output when it ends)"
    (
        LANE_TAG=netns
        ROW_TAG=netns
        # The subshell's own copies: the main shell adds them when the lane ends.
        # shellcheck disable=SC2030
        OUTPUT_LOG=$LANE_OUTPUT_LOG
        STEP_TEES=()
        trap 'record_timed $?; wait_for_step_copies' EXIT
        "$second"
    ) >"$LANE_OUT" 2>&1 &
    LANE_PID=$!
    ROW_TAG=main
    "$first"
    ROW_TAG=
    if ! finish_lane; then
        log "FAILED: $second"
        return 1
    fi
}

# finish_lane: waits for the background lane (if one runs), shows its
# output and adds its step outputs to OUTPUT_LOG; its exit status is the
# lane's.
finish_lane() {
    [[ -n $LANE_PID ]] || return 0
    local rc=0
    log "waiting for $LANE_NAME"
    wait "$LANE_PID" || rc=$?
    LANE_PID=
    log "$LANE_NAME ended (exit $rc); its output:"
    cat "$LANE_OUT" >&2
    # shellcheck disable=SC2031 # the main shell's OUTPUT_LOG, not the lane's
    cat "$LANE_OUTPUT_LOG" >>"$OUTPUT_LOG"
    rm -f "$LANE_OUT" "$LANE_OUTPUT_LOG"
    return "$rc"
}

# The value of option KEY (nfsport, mountport) in URL.
url_port() {
    local v=${1##*"$2"=}
    echo "${v%%&*}"
}

# Both servers for the test steps: the main one (NFSv3 and NFSv4.1), and as
# root the NLM one. Exports their URLs for the steps.
SERVERS_STARTED=0
start_servers() {
    SERVERS_STARTED=1
    stop_server
    local url
    url=$(DNFS_STATE_DIR="$STATE_DIR" DNFS_NFS_PORT=${DNFS_TEST_NFS_PORT:-2549} \
        DNFS_MNT_PORT=${DNFS_TEST_MNT_PORT:-20548} DNFS_NFS4=1 DNFS_NFS4_GRACE=0 \
        bash scripts/server/nfs-server.sh start "$EXPORT_DIR" | tail -n 1)
    log "server: $url"
    export DNFS_TEST_URL="$url"
    export DNFS_TEST_URL_V41
    DNFS_TEST_URL_V41=$(DNFS_STATE_DIR="$STATE_DIR" bash scripts/server/nfs-server.sh url --vers 4.1)
    log "server (NFSv4.1): $DNFS_TEST_URL_V41"
    export DNFS_TEST_EXPORT_DIR="$EXPORT_DIR"
    export DNFS_TEST_REQUIRE_SERVER=1
    export DNFS_TEST_SERVER_PID
    DNFS_TEST_SERVER_PID=$(cat "$STATE_DIR/ganesha.pid" 2>/dev/null || echo "")
    if [[ $(id -u) == 0 ]]; then
        log "starting the NLM test server (Enable_NLM, rpc.statd; network namespace nlm-dnfs)"
        export DNFS_TEST_URL_NLM DNFS_TEST_REQUIRE_NLM=1
        DNFS_TEST_URL_NLM=$(DNFS_STATE_DIR="$NLM_STATE_DIR" DNFS_NLM=1 DNFS_NFS4=1 DNFS_NFS4_GRACE=0 \
            bash scripts/server/nfs-server.sh start "$NLM_EXPORT_DIR" | tail -n 1)
        log "NLM server: $DNFS_TEST_URL_NLM"
    else
        log "SKIPPED the NLM test server: not root (a network namespace)"
    fi
    # Kerberos: a failure to start the KDC or this server ends the run
    # (set -e), it is never a skip.
    log "starting the test KDC (realm DIRECTNFS.TEST) and a Kerberized NFS-Ganesha"
    start_kerberos
    # RPC-with-TLS: Ganesha has none, so a front relays to its ports, four
    # ports each (tls.rs): PORT the NFS port, PORT+8 the MOUNT port, PORT+12
    # and PORT+16 the Kerberized server's NFS and MOUNT ports (PORT+4 is
    # tls.rs's own front's).
    local nfs_port mnt_port krb5_nfs krb5_mnt
    nfs_port=$(url_port "$url" nfsport)
    mnt_port=$(url_port "$url" mountport)
    krb5_nfs=$(url_port "$DNFS_TEST_URL_KRB5" nfsport)
    krb5_mnt=$(url_port "$DNFS_TEST_URL_KRB5" mountport)
    local nlm_pairs=()
    if [[ -n ${DNFS_TEST_URL_NLM:-} ]]; then
        # The NLM server's NFS, MOUNT and NLM ports (PORT+20 to PORT+31):
        # tls.rs's NLM test.
        local nlm_status nlm_addr
        nlm_status=$(DNFS_STATE_DIR="$NLM_STATE_DIR" bash scripts/server/nfs-server.sh status)
        nlm_addr=$(sed -n 's/^bind_addr=//p' <<<"$nlm_status")
        nlm_pairs=("$nlm_addr:$(sed -n 's/^nfs_port=//p' <<<"$nlm_status")" $((TLS_PORT + 20))
            "$nlm_addr:$(sed -n 's/^mnt_port=//p' <<<"$nlm_status")" $((TLS_PORT + 24))
            "$nlm_addr:$(sed -n 's/^nlm_port=//p' <<<"$nlm_status")" $((TLS_PORT + 28)))
        export DNFS_TEST_TLS_NLM_PORT=$((TLS_PORT + 20))
    fi
    log "starting the RPC-with-TLS front on ports $TLS_PORT-$((TLS_PORT + 31))"
    python3 scripts/server/tls-front.py start "$TLS_STATE_DIR" "$nfs_port" "$TLS_PORT" \
        "$mnt_port" $((TLS_PORT + 8)) "$krb5_nfs" $((TLS_PORT + 12)) \
        "$krb5_mnt" $((TLS_PORT + 16)) "${nlm_pairs[@]}" >/dev/null
    export DNFS_TEST_TLS_DIR="$TLS_STATE_DIR" DNFS_TEST_TLS_PORT="$TLS_PORT" DNFS_TEST_REQUIRE_TLS=1
}

# The first lane: every step against the main servers, in order (the
# SQLite steps restart the main server).
server_lane() {
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

    if [[ -f crates/sqlite/tests/run.sh ]]; then
        log "SQLite VFS tests"
        step bash crates/sqlite/tests/run.sh
        # The same on NFSv4.1, where the lock is a byte-range LOCK: every
        # SQL test and the sqlite3 shell, against the server restarted
        # with a 5 s lease: after each SIGKILL of a lock holder the next
        # open must get the lock within 2 s, well before that lease would
        # free it (it takes over the dead client's owner slot).
        log "SQLite VFS tests on NFSv4.1 (server restarted with a 5 s lease)"
        timed env DNFS_STATE_DIR="$STATE_DIR" bash scripts/server/nfs-server.sh restart --down 1 --lease 5 >/dev/null
        # The test binary itself, in its package's directory as cargo
        # runs it, not `cargo test`: the step above made the product
        # build, which a test build would now redo.
        step env -C crates/sqlite DIRECTNFS_SQLITE_VERBOSE=1 DNFS_TEST_URL="$DNFS_TEST_URL_V41" \
            "${DNFS_SQL_TEST_BIN:?the sql test binary was not found}"
        step env DNFS_TEST_URL="$DNFS_TEST_URL_V41" bash crates/sqlite/tests/run.sh
        timed env DNFS_STATE_DIR="$STATE_DIR" bash scripts/server/nfs-server.sh restart --down 1 --lease default >/dev/null
    fi
    # The rest of this lane and the second lane's sanitized SQLite run need
    # the main server as it is now: it is not restarted again.
    server_restarts_done go
    if [[ -x tests/c/run.sh || -f tests/c/run.sh ]]; then
        log "C library tests"
        step bash tests/c/run.sh
    fi
    log "responder smoke: dnfs bench oltp, directnfs and libnfs, against the in-memory responder (~5 s)"
    step bash scripts/bench/responder-bench.sh --smoke
    if [[ $(id -u) == 0 ]]; then
        log "Debian package: build, apt-get install, dnfs check, C example via pkg-config, remove"
        step bash scripts/package/package-test.sh
    else
        skip_step "the Debian package test: not root (apt-get install)"
    fi
    log "interception library: PostgreSQL, MariaDB, sqlite3, fio, coreutils, git, NFSv3 locks, Kerberos and TLS through dnfs run (~10 min)"
    step bash crates/preload/tests/run.sh
    if [[ -n ${DNFS_TEST_URL_V41:-} ]]; then
        log "interception library on NFSv4.1 mounts: every served call, the edge cases, random calls, coreutils, sqlite3, fio, MariaDB, I/O classes (~1 min; the silly group is NFSv3 only: on NFSv4.1 its race loop saw 1 error in 1,715 opens under load)"
        step env DNFS_PRELOAD_NFS_VERSION=4.1 bash crates/preload/tests/run.sh calls edges random untouched coreutils sqlite fio mariadb classes
    fi
    # Last here, beside the second lane's Miri and sanitized SQLite: the
    # two lanes then end at about the same time.
    run_fuzzers
}

# The second lane: the network-namespace steps (root), in order (one
# topology per machine, so never two of them at once), then the CPU-bound
# steps that need no server of their own.
netns_lane() {
    # Built here, beside the main lane's cargo test, whose tls_interop.rs
    # starts it (that test would build it itself, under the same lock).
    log "building the oncrpc4j RPC-with-TLS peer (tls_interop.rs; its Maven dependencies fetched into the tree)"
    step bash scripts/server/oncrpc4j-peer.sh build
    log "multipath tests (network namespaces, needs root)"
    if [[ $(id -u) == 0 ]]; then
        step bash scripts/ci/multipath-tests.sh
        log "ops: a cut path in dnfs stats/top/exporter and the alert log (network namespaces)"
        step bash scripts/ci/ops-netns-tests.sh
    else
        skip_step "multipath and ops network-namespace tests: not root"
    fi
    run_soak
    # CPU-bound steps, beside the main lane's tests (which mostly wait on
    # the server): Miri (no server), then the sanitized SQLite run (against
    # the main server, once the main lane no longer restarts it).
    run_miri
    wait_for_server_restarts || return 1
    if [[ -f crates/sqlite/tests/sanitized.sh ]]; then
        log "SQLite VFS tests again, SQLite built with ASan + UBSan"
        step bash crates/sqlite/tests/sanitized.sh
    fi
}

# The main lane restarts the main server in its SQLite steps; the second
# lane's sanitized SQLite run must not meet a restart. RESTARTS_DONE is a
# file the main lane writes once past them ("go"), or the EXIT trap when
# the main lane ended before that ("stop": the second lane stops too).
RESTARTS_DONE=$(mktemp -u "${TMPDIR:-/tmp}/dnfs-test-restarts-done.XXXXXX")
server_restarts_done() {
    [[ -e $RESTARTS_DONE ]] || echo "$1" >"$RESTARTS_DONE"
}
wait_for_server_restarts() {
    ((DRY_RUN)) && return 0
    while [[ ! -e $RESTARTS_DONE ]]; do sleep 2; done
    if [[ $(cat "$RESTARTS_DONE") != go ]]; then
        log "the main lane ended before its SQLite steps: the sanitized SQLite run is not run"
        return 1
    fi
}

# The realm of scripts/server/kdc.sh and a server that takes krb5, krb5i, krb5p
# (and sys), NFSv3 and NFSv4.1; exports what crates/client/tests/kerberos*.rs read: the URL,
# the realm's KRB5_CONFIG and the test user's ticket cache KRB5CCNAME.
start_kerberos() {
    local env_lines
    # Port 2596: outside the TLS front's 2560-2591 and the security
    # bench's front (2600-2607).
    env_lines=$(DNFS_KDC_STATE_DIR="$KDC_STATE_DIR" DNFS_KDC_PORT=${DNFS_TEST_KDC_PORT:-2596} \
        bash scripts/server/kdc.sh start)
    export KRB5_CONFIG KRB5CCNAME
    KRB5_CONFIG=$(sed -n 's/^KRB5_CONFIG=//p' <<<"$env_lines")
    KRB5CCNAME=$(sed -n 's/^KRB5CCNAME=//p' <<<"$env_lines")
    # The short-lived user's keytab: kerberos_renewal.rs (tickets of 40 s).
    export DNFS_KRB5_SHORT_KEYTAB
    DNFS_KRB5_SHORT_KEYTAB=$(sed -n 's/^DNFS_KRB5_SHORT_KEYTAB=//p' <<<"$env_lines")
    # The expiry test's users (kerberos_expiry.rs, tickets of 20 s): never renewable, renewable.
    export DNFS_KRB5_EXP_KEYTAB DNFS_KRB5_RENEW_KEYTAB DNFS_KDC_EXP_LIFE
    DNFS_KRB5_EXP_KEYTAB=$(sed -n 's/^DNFS_KRB5_EXP_KEYTAB=//p' <<<"$env_lines")
    DNFS_KRB5_RENEW_KEYTAB=$(sed -n 's/^DNFS_KRB5_RENEW_KEYTAB=//p' <<<"$env_lines")
    DNFS_KDC_EXP_LIFE=$(sed -n 's/^DNFS_KDC_EXP_LIFE=//p' <<<"$env_lines")
    # The test user has no account here: Ganesha maps it to the anonymous
    # id (docs/server-notes.md), which must be able to create files.
    mkdir -p "$KRB5_EXPORT_DIR"
    chmod 0777 "$KRB5_EXPORT_DIR"
    export DNFS_TEST_URL_KRB5 DNFS_TEST_REQUIRE_KRB5=1
    DNFS_TEST_URL_KRB5=$(DNFS_STATE_DIR="$KRB5_STATE_DIR" DNFS_KDC_STATE_DIR="$KDC_STATE_DIR" \
        DNFS_KRB5=1 DNFS_NFS4=1 DNFS_NFS4_GRACE=0 DNFS_PRIVATE_RPCBIND=1 DNFS_NFS_PORT=${DNFS_TEST_KRB5_NFS_PORT:-2552} \
        DNFS_MNT_PORT=${DNFS_TEST_KRB5_MNT_PORT:-20552} DNFS_KRB5P_EXPORT="$KRB5P_EXPORT_DIR" \
        bash scripts/server/nfs-server.sh start "$KRB5_EXPORT_DIR" | tail -n 1)
    log "Kerberos server: $DNFS_TEST_URL_KRB5"
    export DNFS_TEST_URL_KRB5P
    DNFS_TEST_URL_KRB5P=$(DNFS_STATE_DIR="$KRB5_STATE_DIR" bash scripts/server/nfs-server.sh status |
        sed -n 's/^krb5p_url=//p')
    [[ -n $DNFS_TEST_URL_KRB5P ]] || { log "the Kerberos server has no krb5p-only export"; return 1; }
    log "Kerberos server, krb5p-only export: $DNFS_TEST_URL_KRB5P"
}

# The fault soak (scripts/ci/soak.sh): DNFS_SOAK_MINUTES of faults (default
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
    step bash scripts/ci/soak.sh "${args[@]}"
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
        if ! timed rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1; then
            skip_step "Miri: rustup could not install the miri component"
            return
        fi
    fi
    log "Miri: setup (a sysroot built from rust-src)"
    if ! timed cargo +nightly miri setup >/dev/null 2>&1; then
        skip_step "Miri: cargo miri setup failed (it builds a sysroot from rust-src)"
        return
    fi
    log "Miri: unit tests of sqlite, capi, engine, wire; wire's statements, golden, ganesha (v3 and v4.1)"
    # dotlock:: asks the OS for the host name and process start times,
    # which Miri cannot do. -Zmiri-disable-isolation: proptest reads the
    # working directory. About 2 minutes; the timeout only stops a hang.
    timed env -u DNFS_TEST_URL -u DNFS_TEST_URL_V41 -u DNFS_TEST_REQUIRE_SERVER \
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
    timed env -u DNFS_TEST_URL -u DNFS_TEST_URL_V41 -u DNFS_TEST_REQUIRE_SERVER MIRIFLAGS=-Zmiri-disable-isolation \
        timeout 900 cargo +nightly miri test -p directnfs --lib -- \
        io::call::tests io::transport::shared::tests writelog:: batch::tests file::tests
}

# Every fuzz target for a fixed time (DNFS_FUZZ_SECONDS, default 5: a
# smoke of every target and its corpus; longer runs take a larger value),
# two at a time (DNFS_FUZZ_JOBS, default 2), built unoptimised
# (DNFS_FUZZ_PROFILE, default dev here; fuzz/run-all.sh alone builds
# release): the release build of 39 targets took about 1,500 CPU seconds
# of a clean-clone run, the dev build 275, and 5 s of each target is a
# smoke either way (overflow checks and debug assertions are on in both).
# cargo-fuzz needs a nightly toolchain: used when this machine has one
# (rustup cannot download one here), otherwise said loudly and skipped.
run_fuzzers() {
    local secs=${DNFS_FUZZ_SECONDS:-5}
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
        timed cargo install cargo-fuzz --locked --quiet
    fi
    log "fuzzing every target for ${secs}s, ${DNFS_FUZZ_JOBS:-2} at a time"
    ((DRY_RUN)) || rm -rf fuzz/artifacts
    timed env DNFS_FUZZ_JOBS="${DNFS_FUZZ_JOBS:-2}" DNFS_FUZZ_PROFILE="${DNFS_FUZZ_PROFILE:-dev}" \
        bash fuzz/run-all.sh "$secs"
}

main "$@"

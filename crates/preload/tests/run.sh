#!/usr/bin/env bash
# crates/preload/tests/run.sh — the interception library with real,
# unmodified Debian programs, against a real NFS-Ganesha, through
# `dnfs run`:
#
#   cost       instructions the library adds to calls it does not serve
#              (callgrind, repeatable under load; tests/c/passthrough.c)
#   start      a child of fork makes its client from its parent's: its
#              first stat is one LOOKUP, no MOUNT, FSINFO or GETATTR; the
#              time of fork + first call + exit is printed
#              (tests/c/forkstart.c)
#   boards     the boards: lseek(SEEK_END) asks the server once while
#              nothing changes the file (and a read at its end, once a
#              READ came back short, not at all), open once while no
#              name changes,
#              and both see at once what other processes of the host did
#              (write past the end, ftruncate, truncate, O_TRUNC, O_APPEND;
#              rename over, unlink, create, chmod, a new directory);
#              a change by a process with another shadow directory (as
#              another host) after DIRECTNFS_PRELOAD_TTL_MS
#              (tests/c/boards.c)
#   calls      every served libc call, checked (tests/c/nfscalls.c)
#   edges      the edge cases of issue 31 (`.`/`..` last, `..` through a
#              missing directory, raw syscall(2) on NFS descriptors and
#              paths, open then unlink or rename over in one process,
#              bad path pointers, a unix socket bound in an NFS directory,
#              a directory deeper than PATH_MAX, symbolic link targets
#              up to 4095 bytes; as the postgres user:
#              truncate and O_TRUNC permissions, chown -1 -1), run in a
#              local directory without the library and on NFS with it:
#              same results, same errnos, same tree (tests/c/edges.c);
#              then the warnings (an unsupported fallocate mode, a prefix
#              over a non-empty local directory)
#   silly      a file one process holds open while another process (its
#              own `dnfs run`) removes it: unlink, rename over; the
#              holder reads the old contents, writes, closes, and the
#              hidden `.nfs` name is gone; compared with a local
#              directory; a holder killed -9 leaves one hidden name;
#              pg_ctl's race (stdio reads of a file another process
#              creates and unlinks in a loop): no I/O error
#              (tests/c/removeopen.c)
#   random     random sequences of calls (tests/c/randops.c: open, read,
#              write, pwrite, truncate, rename, link, symlink, unlink,
#              mkdir, rmdir, readdir, stat, chmod, utimensat, fsync,
#              access, chdir; dot components, 255- and 256-byte names),
#              as root and as the postgres user, in a local directory and
#              on NFS: same results, errnos and tree, but for the lines of
#              docs/run-deviations.md (tests/random.sh, tests/differ.py;
#              DNFS_RANDOM_SEED, DNFS_RANDOM_OPS: 31 and 5000 calls)
#   untouched  local files, pipes and sockets behave the same with and
#              without the library (tests/c/untouched.c)
#   coreutils  cp, cat, ls -l, mv, rm -r, mkdir -p, dd conv=fsync, ln,
#              tar c / tar x, rsync -a (in, --delete, out), git
#              (init, commit, gc, clone; DIRECTNFS_PRELOAD_MMAP=copy), and
#              the same through local symbolic links into the mount: results
#              compared with the server's local view
#   sqlite     sqlite3 CLI: 50k rows, integrity_check; two processes
#              contending for the write lock (SQLITE_BUSY or a wait);
#              WAL mode (refused: its -shm is mapped shared; works with
#              locking_mode=EXCLUSIVE)
#   fio        psync and pvsync random I/O, numjobs=4, verify=crc32c
#   wb         unstable mode with write-behind (DIRECTNFS_PRELOAD_WRITE_BEHIND=1,
#              one writer per file): dd with conv=fdatasync,
#              oflag=dsync, and a C program (pwrite, sync_file_range,
#              fdatasync, pread, close): the data on the server is exact
#   bad        a server down (hard waits and completes, soft: ETIMEDOUT),
#              an export the server refuses, names NFS cannot hold, a broken
#              dnfstab: the documented errno, never a crash
#   pg         PostgreSQL 15 as the postgres user: initdb -k, pgbench,
#              pg_amcheck, clean restart; kill -9 of the postmaster and every
#              backend during a workload, recovery, every committed
#              transaction present; then the server's local copy of the data
#              directory started without the library
#   pgparents  a mount prefix whose parents do not exist locally
#              (/dnfs-preload-test-parents/db/pg): they are directories
#              (stat, ls, cd, pwd, mkdir EEXIST, mv EBUSY); mkdir -p and
#              initdb -k as the postgres user, who may not write in /
#   pgwb       the same in unstable mode (UNSTABLE WRITEs, COMMIT at
#              fsync/fdatasync; write-behind off, the library's default)
#   pglinks    PostgreSQL with a local data directory, its WAL on NFS
#              (initdb --waldir) and a tablespace on NFS, both reached
#              through local symbolic links: pgbench, kill -9, recovery,
#              every committed transaction present, pg_amcheck
#   mariadb    MariaDB as the mysql user: mariadb-install-db (kernel AIO
#              refused at set-up, InnoDB falls back to simulated AIO),
#              50k rows, kill -9 of mariadbd during a workload, crash
#              recovery, every committed transaction present, CHECK TABLE;
#              mariadb-backup --backup and --prepare into NFS; then the
#              server's local copies of the data directory and of the
#              backup started without the library
#   v4locks    NFSv4.1 mount (needs DNFS_TEST_URL_V41, the same server):
#              fcntl, OFD and flock locks reach the server — two programs
#              with different shadow directories (no local lock in common,
#              as on two hosts) exclude each other: EAGAIN, F_GETLK's
#              answer from LOCKT, F_SETLKW waits for the unlock, close of
#              another descriptor releases record locks; sqlite3 on both
#              takes turns; on NFSv3 the same two do not exclude each
#              other (local locks only); chmod, touch and chown of a
#              directory on NFSv4.1, and sort -o (its output closed by
#              an exit handler)
#   classes    the I/O class of each file from the dnfstab's *_files:
#              patterns (log_files: */pg_wal/*, bulk_files: */backup/*
#              on the main mount): dd and cp through dnfs run, each
#              process's reads and writes per class from its exit report
#   secure     `dnfs run` under Kerberos and RPC-with-TLS, NFSv3 and
#              NFSv4.1 (tests/secure.sh, tests/secure.py; needs
#              DNFS_TEST_URL_KRB5P, the Kerberos server's krb5p-only
#              export, and the TLS front's DNFS_TEST_TLS_DIR/_PORT): python3
#              writes, fsyncs, reads, renames on a `security_default: krb5p`
#              mount and an `xprtsec: tls` one, compared with a local
#              directory; krb5i refused there, no TLS refused by the front;
#              no ticket: EACCES naming kinit within seconds
#   pgkrb      PostgreSQL 15 through `dnfs run` on that krb5p-only export,
#              NFSv3 and NFSv4.1 (tests/secure.sh): every process gets its
#              tickets from the postgres principal's keytab
#              (KRB5_CLIENT_KTNAME; kdc.sh's postgres.keytab), the server
#              maps postgres@REALM to the postgres user: initdb, pg_ctl
#              start, pgbench, the rows checked, stop, every file on the
#              server owned by postgres
#   nlm        NFSv3 locks through the server's NLM (tests/nlm.sh; needs
#              DNFS_TEST_URL_NLM, a server started with DNFS_NLM=1):
#              two hosts exclude each other, sqlite3 read-modify-write
#              from both ends exact (and on NFSv4.1), a DuckDB database
#              open read-write on one host refused to the other (both
#              versions), ENOLCK and one warning without NLM, nolock local
#
#   DNFS_TEST_URL='nfs://127.0.0.1/export?nfsport=2049&mountport=20048' \
#   DNFS_TEST_EXPORT_DIR=/export crates/preload/tests/run.sh [GROUP...]
#
# DNFS_PRELOAD_PGBENCH_SECONDS (default 10: it proves no transaction fails,
# not a rate) sets the pgbench -T run;
# DNFS_PRELOAD_NFS_VERSION=4.1 puts the main mounts on NFSv4.1.
# Needs root (runuser, chown) and the packages scripts/test.sh installs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"

if [[ -z ${DNFS_TEST_URL:-} ]]; then
    [[ -z ${DNFS_TEST_REQUIRE_SERVER:-} ]] || {
        echo "run.sh: DNFS_TEST_REQUIRE_SERVER set but DNFS_TEST_URL not" >&2
        exit 1
    }
    echo "run.sh: SKIPPED interception library tests: DNFS_TEST_URL is not set" >&2
    exit 0
fi
: "${DNFS_TEST_EXPORT_DIR:?run.sh needs DNFS_TEST_EXPORT_DIR (the export as the server sees it)}"
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (runuser, chown)" >&2; exit 1; }

GROUPS_TO_RUN=("$@")
((${#GROUPS_TO_RUN[@]})) || GROUPS_TO_RUN=(cost start boards calls edges silly random untouched coreutils sqlite fio wb bad pg pgparents pgwb pglinks mariadb v4locks classes secure pgkrb nlm)

# --- the server and the dnfstab ---------------------------------------------
url=${DNFS_TEST_URL#nfs://}
host=${url%%/*}
rest=/${url#*/}
export_path=${rest%%\?*}
query=${rest#*\?}
[[ $query == "$rest" ]] && query=
nfsport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$query")
mountport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$query")

# The whole workspace, as the package and the C tests build it (a build of
# some packages only resolves other features and rebuilds them).
cargo build --release --workspace
DNFS_BIN=$ROOT/target/release/dnfs

WORK=$(mktemp -d /tmp/dnfs-preload-test.XXXXXX)
chmod 755 "$WORK"
MNT=/dnfs-preload-test
RUNID=run-$$-$RANDOM
NFS=$MNT/$RUNID
VIEW=$DNFS_TEST_EXPORT_DIR/$RUNID
TAB=$WORK/dnfstab
# server_block NAME EXPORT MOUNT [EXTRA-LINE]: one server of the dnfstab.
server_block() {
    echo "server: $1"
    echo "path: $host"
    if [[ -n $nfsport ]]; then echo "port: $nfsport"; fi
    if [[ -n $mountport ]]; then echo "mount_port: $mountport"; fi
    if [[ -n ${4:-} ]]; then echo "$4"; fi
    echo "export: $2 mount: $3"
}
# DNFS_PRELOAD_NFS_VERSION=4.1: the main mounts (test, unstable) on
# NFSv4.1, to run the groups there too.
# The main server runs without a lock manager (NLM): the main mounts say
# `nolock` (locks on this host only, as before NLM; the nlm group shows
# ENOLCK without it).
MAIN_VERS=${DNFS_PRELOAD_NFS_VERSION:+nfs_version: nfsv$DNFS_PRELOAD_NFS_VERSION}
MAIN_VERS=${MAIN_VERS:-nolock}
# shellcheck source-path=SCRIPTDIR source=nlm.sh
source "$ROOT/crates/preload/tests/nlm.sh"
# shellcheck source-path=SCRIPTDIR source=random.sh
source "$ROOT/crates/preload/tests/random.sh"
# shellcheck source-path=SCRIPTDIR source=secure.sh
source "$ROOT/crates/preload/tests/secure.sh"
# The main mount classes its files as the book advises for PostgreSQL
# (the pg groups run with their WAL as the log class) and the classes group
# checks.
CLASS_LINES="log_files: */pg_wal/*
bulk_files: */backup/*"
{
    server_block test "$export_path" "$MNT" "$MAIN_VERS
$CLASS_LINES"
    server_block refused /no/such/export "$MNT-refused"
    server_block unstable "$export_path" "$MNT-wb" "stable: unstable${MAIN_VERS:+
$MAIN_VERS}"
    nlm_dnfstab
    if [[ -n ${DNFS_TEST_URL_V41:-} ]]; then
        server_block v41 "$export_path" "$MNT-v41" "nfs_version: nfsv4.1"
    fi
} >"$TAB"
chmod 644 "$TAB"
RUN=("$DNFS_BIN" --config "$TAB" run --)
RUNS="$DNFS_BIN --config $TAB run --" # for bash -c (no spaces in these paths)

pass=0
fail=0
PG_STARTED=()
DOWN_STARTED=
MY_STARTED=
cleanup() {
    local d
    if [[ -n $MY_STARTED && -e $MY_STARTED ]]; then kill -9 "$(cat "$MY_STARTED")" 2>/dev/null || true; fi
    # The pgkrb group's postmaster (its data directory is on NFS only).
    if [[ -n ${PGKRB_PIDFILE:-} && -e $PGKRB_PIDFILE ]]; then kill -QUIT "$(head -1 "$PGKRB_PIDFILE")" 2>/dev/null || true; fi
    for d in "${PG_STARTED[@]}"; do
        runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
    done
    if [[ -n $DOWN_STARTED ]]; then
        DNFS_STATE_DIR=$DOWN_STATE bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK" "$VIEW"
}
trap cleanup EXIT

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; fail=$((fail + 1)); }
# check NAME EXPECTED ACTUAL
check() { if [[ $2 == "$3" ]]; then ok "$1"; else bad "$1" "expected [$2] got [$3]"; fi; }
# expect NAME COMMAND...: the command succeeds
expect() {
    local name=$1
    shift
    if "$@" >"$WORK/out" 2>&1; then ok "$name"; else bad "$name" "exit $?: $(tail -3 "$WORK/out" | tr '\n' ' ')"; fi
}
step() { echo "== $1 ($(date +%T))"; }
nfs() { "${RUN[@]}" "$@"; }
# by_call CALL FILE: the NFS calls the libc call CALL made, from the
# DIRECTNFS_PRELOAD_STATS=calls report in FILE ("lseek x100: GETATTR=1")
by_call() { sed -n "s/.*by libc call: \($1 .*\)/\1/p" "$2" | sed 's/ *$//'; }

nfs mkdir -p "$NFS"
[[ -d $VIEW ]] || { echo "run.sh: $NFS did not appear as $VIEW on the server" >&2; exit 1; }

# --- groups -------------------------------------------------------------------

# Most instructions the library may add to one call on a local path (the
# prefix check) and on a local descriptor (one bitmap load). Measured
# here: ~260 and ~25 (stat of a 35-byte path, read of /dev/zero).
MAX_ADDED_PATH=400
MAX_ADDED_FD=60

group_cost() {
    step "added cost of calls the library does not serve (callgrind)"
    if ! command -v valgrind >/dev/null; then
        bad "valgrind" "not installed (apt-get install valgrind)"
        return
    fi
    cc -O2 -o "$WORK/passthrough" crates/preload/tests/c/passthrough.c
    local n=2000 lib=$ROOT/target/release/libdirectnfs_preload.so
    touch "$WORK/Makefile"
    (cd "$WORK" && valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.plain" ./passthrough $n >/dev/null 2>&1)
    (cd "$WORK" && DIRECTNFS_TAB=$TAB LD_PRELOAD=$lib valgrind --tool=callgrind \
        --callgrind-out-file="$WORK/cg.pre" ./passthrough $n >/dev/null 2>&1)
    local k plain pre added max
    for k in stat access open read fstat fstatat; do
        # Inclusive instructions of the loop function, per call.
        plain=$(callgrind_annotate --inclusive=yes "$WORK/cg.plain" 2>/dev/null | awk -v f="loop_$k" '!done && $0 ~ ":" f "[ .]" {gsub(",", "", $1); print int($1 / '$n'); done = 1}')
        pre=$(callgrind_annotate --inclusive=yes "$WORK/cg.pre" 2>/dev/null | awk -v f="loop_$k" '!done && $0 ~ ":" f "[ .]" {gsub(",", "", $1); print int($1 / '$n'); done = 1}')
        if [[ -z $plain || -z $pre ]]; then
            bad "$k: instruction counts" "callgrind gave none"
            continue
        fi
        added=$((pre - plain))
        max=$MAX_ADDED_PATH
        [[ $k == read || $k == fstat ]] && max=$MAX_ADDED_FD
        if ((added <= max)); then
            ok "$k: +$added instructions per call ($plain -> $pre, at most $max)"
        else
            bad "$k: +$added instructions per call" "more than $max"
        fi
    done
}

group_start() {
    step "a new process's first NFS call after fork (forkstart.c)"
    cc -O2 -Wall -Werror -o "$WORK/forkstart" crates/preload/tests/c/forkstart.c
    nfs touch "$NFS/start"
    local n=20 out
    if ! out=$(DIRECTNFS_PRELOAD_STATS=1 "${RUN[@]}" "$WORK/forkstart" "$NFS/start" $n 1 2>"$WORK/start.err"); then
        bad "forkstart" "$(tail -2 "$WORK/start.err" | tr '\n' ' ')"
        return
    fi
    # One report per process at its exit: a child's line is exactly one
    # LOOKUP (no MOUNT, FSINFO, GETATTR: the parent's client gave it the
    # export's root, the sizes and the directory's handle).
    check "each of $n children: one LOOKUP for its stat, nothing else" "$n" \
        "$(grep -c "calls for $MNT: LOOKUP=1\$" "$WORK/start.err")"
    echo "   ($out; the parent: $(grep "calls for" "$WORK/start.err" | grep -v "LOOKUP=1\$" | sed 's/.*: //'))"
    check "one report per process (the parent and $n children)" "$((n + 1))" \
        "$(grep -c "calls for $MNT:" "$WORK/start.err")"
    # The library's code is mapped in a child from the start (text.rs):
    # the fork copies its page table entries (without, none is resident).
    cc -O2 -Wall -Werror -o "$WORK/textshare" crates/preload/tests/c/textshare.c
    local size rss
    read -r size rss < <("${RUN[@]}" "$WORK/textshare" "$NFS/start" 2>/dev/null || echo "0 0")
    if ((size > 0 && rss * 10 >= size * 9)); then
        ok "a forked child has the library's code mapped from the start ($rss of $size KiB)"
    else
        bad "a forked child has the library's code mapped from the start" "$rss of $size KiB resident"
    fi
    # Spare connections (fork_spares): children take their parent's spares
    # instead of connecting, and hand them back. Counted in the kernel's
    # TCP connects (ActiveOpens, this network namespace: nothing else
    # connects meanwhile). Until the parent's first spare, a tick after
    # the first miss, every child connects. The file has data: an empty
    # file's read needs no call at all.
    local n=600 c0 c1 c2
    head -c 4096 /dev/urandom >"$VIEW/spares"
    tcp_connects() { awk '/^Tcp:/ && !h {h = 1; for (i = 1; i <= NF; i++) if ($i == "ActiveOpens") f = i; next} /^Tcp:/ {print $f}' /proc/net/snmp; }
    c0=$(tcp_connects)
    "${RUN[@]}" "$WORK/forkstart" "$NFS/spares" $n 1 read >/dev/null 2>&1
    c1=$(tcp_connects)
    DIRECTNFS_FORK_SPARES=off "${RUN[@]}" "$WORK/forkstart" "$NFS/spares" $n 1 read >/dev/null 2>&1
    c2=$(tcp_connects)
    if ((c2 - c1 >= n && (c1 - c0) * 3 < n * 2)); then
        ok "$n children: $((c1 - c0)) connections made with spares, $((c2 - c1)) without"
    else
        bad "children take the parent's spare connections" \
            "$((c1 - c0)) connections made with spares, $((c2 - c1)) without ($n children)"
    fi
}

# boards_calls LABEL ERR ARGS...: tests/c/boards.c ARGS with
# DIRECTNFS_PRELOAD_STATS=calls, its report in ERR (a failure is LABEL's)
boards_calls() {
    local label=$1 err=$2
    shift 2
    DIRECTNFS_PRELOAD_STATS=calls "${RUN[@]}" "$WORK/boards" "$@" 2>"$err" ||
        bad "$label" "$(tail -2 "$err" | tr '\n' ' ')"
}

# class_report ERR: the "io classes for $MNT:" exit report in ERR.
class_report() { sed -n "s|.*io classes for $MNT: ||p" "$1" | sed 's/ *$//'; }

group_classes() {
    step "I/O classes from the dnfstab's *_files: patterns (exit reports)"
    local d=$NFS/classes
    nfs mkdir -p "$d/pg_wal" "$d/backup"
    # python3, not dd or cp: coreutils close stderr at exit, before the
    # library's exit report is written.
    local writer='import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DSYNC, 0o644)
for i in range(int(sys.argv[2])):
    os.pwrite(fd, bytes([i]) * 8192, i * 8192)
os.close(fd)'
    local copier='import shutil, sys
shutil.copyfile(sys.argv[1], sys.argv[2])'
    DIRECTNFS_PRELOAD_STATS=1 "${RUN[@]}" python3 -c "$writer" "$d/pg_wal/seg" 4 2>"$WORK/classes1.err"
    check "4 writes into pg_wal/: 4 writes of the log class, nothing else" \
        "log=0r/4w" "$(class_report "$WORK/classes1.err")"
    DIRECTNFS_PRELOAD_STATS=1 "${RUN[@]}" python3 -c "$writer" "$d/table" 3 2>"$WORK/classes2.err"
    check "3 writes into a file no pattern names: 3 data writes" \
        "data=0r/3w" "$(class_report "$WORK/classes2.err")"
    DIRECTNFS_PRELOAD_STATS=1 "${RUN[@]}" python3 -c "$copier" "$d/pg_wal/seg" "$d/backup/seg" \
        2>"$WORK/classes3.err"
    local report
    report=$(class_report "$WORK/classes3.err")
    if [[ $report =~ ^bulk=0r/[1-9][0-9]*w\ log=[1-9][0-9]*r/0w$ ]]; then
        ok "a copy from pg_wal/ into backup/: log reads, bulk writes ($report)"
    else
        bad "a copy from pg_wal/ into backup/: log reads, bulk writes" "report [$report]"
    fi
    check "the copy is exact" same "$(cmp -s "$VIEW/classes/pg_wal/seg" "$VIEW/classes/backup/seg" && echo same)"
}

group_boards() {
    step "the boards: sizes for lseek(SEEK_END), names for open and access, coherent among processes (boards.c)"
    cc -O2 -Wall -Werror -o "$WORK/boards" crates/preload/tests/c/boards.c
    nfs sh -c "head -c 5000 /dev/zero > '$NFS/sizes'"
    local out
    # 100 lseeks of a file nothing changes: one GETATTR (remembering on),
    # 100 (off).
    boards_calls "boards count" "$WORK/sizes.err" count "$NFS/sizes" 100
    check "100 x lseek(SEEK_END), file unchanged: one GETATTR" "lseek x100: GETATTR=1" \
        "$(by_call lseek "$WORK/sizes.err")"
    DIRECTNFS_PRELOAD_TTL_MS=0 boards_calls "boards count (off)" "$WORK/sizes.err" count "$NFS/sizes" 100
    check "the same with DIRECTNFS_PRELOAD_TTL_MS=0: one GETATTR each" "lseek x100: GETATTR=100" \
        "$(by_call lseek "$WORK/sizes.err")"
    # Reads at the end of the file, known from the READ that came back
    # short: end of file without a READ (a 64 KiB read, the short one,
    # 10 at the end; a stream's one READ and its fgets at the end).
    nfs sh -c "head -c 100000 /dev/zero > '$NFS/eofs'"
    boards_calls "boards eofs" "$WORK/eofs.err" eofs "$NFS/eofs" 10
    check "read to the end, 10 reads at the end, a stream to its end: 3 READs" "read x14: READ=3" \
        "$(by_call read "$WORK/eofs.err")"
    DIRECTNFS_PRELOAD_TTL_MS=0 boards_calls "boards eofs (off)" "$WORK/eofs.err" eofs "$NFS/eofs" 10
    check "the same with DIRECTNFS_PRELOAD_TTL_MS=0: a READ each" "read x14: READ=14" \
        "$(by_call read "$WORK/eofs.err")"
    # A new process uses the size the last one published: no GETATTR.
    local p
    for p in first second; do
        DIRECTNFS_PRELOAD_TTL_MS=600000 boards_calls "boards count ($p)" "$WORK/sizes.$p" count "$NFS/sizes" 100
    done
    check "a second process: the first one's size, no GETATTR" "lseek x100:" \
        "$(by_call lseek "$WORK/sizes.second")"
    # Other processes' changes: remembered sizes kept for 10 minutes, so
    # only the board can make them right.
    if out=$(DIRECTNFS_PRELOAD_TTL_MS=600000 "${RUN[@]}" "$WORK/boards" procs "$NFS/sizes2" 2>&1); then
        ok "another process's size changes seen at once, by lseek(SEEK_END) and reads at the old end ($(grep -c '^ok' <<<"$out") checks)"
    else
        bad "another process's size changes" "$(grep -v '^ok' <<<"$out" | tr '\n' ' ')"
    fi
    check "the server's file after them" "100" "$(stat -c %s "$VIEW/sizes2")"
    # 100 opens of one path nobody changes: one LOOKUP at most (none when
    # the lseek run above left it on the board).
    DIRECTNFS_PRELOAD_TTL_MS=600000 boards_calls "boards opens" "$WORK/opens.err" opens "$NFS/sizes" 100
    DIRECTNFS_PRELOAD_TTL_MS=600000 boards_calls "boards opens" "$WORK/opens.err" opens "$NFS/sizes" 100
    check "100 x open of an unchanged path in a new process: no LOOKUP" "open x100:" \
        "$(by_call open "$WORK/opens.err")"
    DIRECTNFS_PRELOAD_TTL_MS=0 boards_calls "boards opens (off)" "$WORK/opens.err" opens "$NFS/sizes" 100
    # (the first open also mounts: FSINFO and the LOOKUPs of the path's
    # directories)
    local lookups
    lookups=$(sed -n 's/.*by libc call: open x100: .*LOOKUP=\([0-9]*\).*/\1/p' "$WORK/opens.err")
    check "the same with DIRECTNFS_PRELOAD_TTL_MS=0: a LOOKUP each" "yes" "$( ((${lookups:-0} >= 100)) && echo yes || echo "no: ${lookups:-none}")"
    nfs mkdir "$NFS/names"
    if out=$(DIRECTNFS_PRELOAD_TTL_MS=600000 "${RUN[@]}" "$WORK/boards" names "$NFS/names" 2>&1); then
        ok "another process's name and permission changes seen at once ($(grep -c '^ok' <<<"$out") checks)"
    else
        bad "another process's name changes" "$(grep -v '^ok' <<<"$out" | tr '\n' ' ')"
    fi
    # Boards that cannot be mapped (directories in their place): said
    # once, and every lseek asks the server.
    mkdir -p "$WORK/noboard/sizes.v1.$(id -u)" "$WORK/noboard/names.v1.$(id -u)"
    DIRECTNFS_SHADOW_DIR=$WORK/noboard boards_calls "boards count (no board)" "$WORK/noboard.err" count "$NFS/sizes" 100
    check "no board: said once on stderr" "1" "$(grep -c 'cannot map the board .*sizes.v1' "$WORK/noboard.err")"
    check "no board: every lseek(SEEK_END) asks the server" "lseek x100: GETATTR=100" \
        "$(by_call lseek "$WORK/noboard.err")"
    # A board file another user made (here: postgres, for root): refused.
    mkdir -p "$WORK/otherboard"
    chmod 1777 "$WORK/otherboard"
    runuser -u postgres -- sh -c "head -c 2097152 /dev/zero > '$WORK/otherboard/sizes.v1.$(id -u)'; chmod 600 '$WORK/otherboard/sizes.v1.$(id -u)'"
    DIRECTNFS_SHADOW_DIR=$WORK/otherboard boards_calls "boards count (another user's board)" "$WORK/otherboard.err" count "$NFS/sizes" 100
    check "a board another user made: refused" "1 lseek x100: GETATTR=100" \
        "$(grep -c 'cannot map the board .*not a file of user' "$WORK/otherboard.err") $(by_call lseek "$WORK/otherboard.err")"
    if out=$(DIRECTNFS_PRELOAD_TTL_MS=300 "${RUN[@]}" "$WORK/boards" outside "$NFS/sizes3" "$WORK/other-shadow" 300 2>&1); then
        ok "a change another board never saw, seen after DIRECTNFS_PRELOAD_TTL_MS ($(grep '^note' <<<"$out" | sed 's/^note //'))"
    else
        bad "a change outside the library" "$(grep -v '^ok' <<<"$out" | tr '\n' ' ')"
    fi
}

group_calls() {
    step "every served call (nfscalls.c)"
    cc -O1 -o "$WORK/nfscalls" crates/preload/tests/c/nfscalls.c
    nfs mkdir "$NFS/calls"
    if NFSCALLS_V41=${DNFS_PRELOAD_NFS_VERSION:+1} nfs "$WORK/nfscalls" "$NFS/calls" "$VIEW/calls" \
        >"$WORK/calls.out" 2>"$WORK/calls.err"; then
        ok "nfscalls: $(grep -c '^ok' "$WORK/calls.out") checks"
    else
        grep -v '^ok' "$WORK/calls.out" || true
        bad "nfscalls" "$(tail -1 "$WORK/calls.out")"
    fi
    # Each refused call is said once on stderr, naming it.
    for what in "mmap of NFS descriptor" "DIRECTNFS_PRELOAD_MMAP=copy" "O_TMPFILE" "fallocate mode" "mknod"; do
        if grep -q "$what" "$WORK/calls.err"; then ok "warning names: $what"; else bad "warning names: $what"; fi
    done
    nfs mkdir "$NFS/mapped"
    if DIRECTNFS_PRELOAD_MMAP=copy nfs "$WORK/nfscalls" --mapped "$NFS/mapped" "$VIEW/mapped" \
        >"$WORK/mapped.out" 2>"$WORK/mapped.err"; then
        ok "nfscalls --mapped (DIRECTNFS_PRELOAD_MMAP=copy): $(grep -c '^ok' "$WORK/mapped.out") checks"
    else
        grep -v '^ok' "$WORK/mapped.out" || true
        bad "nfscalls --mapped" "$(tail -1 "$WORK/mapped.out")"
    fi
}

group_edges() {
    step "edge cases, compared with a local directory (edges.c)"
    cc -O1 -o "$WORK/edges" crates/preload/tests/c/edges.c
    mkdir -p "$WORK/edges-local"
    nfs mkdir -p "$NFS/edges"
    chmod 777 "$VIEW/edges"
    "$WORK/edges" "$WORK/edges-local" >"$WORK/edges-local.out" 2>&1
    nfs "$WORK/edges" "$NFS/edges" >"$WORK/edges-nfs.out" 2>"$WORK/edges-nfs.err"
    if diff "$WORK/edges-local.out" "$WORK/edges-nfs.out" >"$WORK/edges.diff"; then
        ok "edges: $(wc -l <"$WORK/edges-local.out") lines identical on NFS and locally"
    else
        cat "$WORK/edges.diff"
        bad "edges" "NFS differs from the local file system (diff above: < local, > NFS)"
    fi
    check "edges: on stderr only the refused unix socket's warning" \
        "bind of a unix socket on an NFS path is not supported (EOPNOTSUPP): NFS holds no sockets" \
        "$(sed 's/^directnfs\[[0-9]*\]: //' "$WORK/edges-nfs.err")"
    # Warnings (docs/book/src/run/).
    nfs sh -c "printf 0123456789 >$NFS/edges/fa"
    check "fallocate --punch-hole: the warning names the mode" \
        "fallocate mode 0x3 (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) is not supported on NFS files (EOPNOTSUPP)" \
        "$(nfs fallocate -p -o 0 -l 4 "$NFS/edges/fa" 2>&1 | sed -n 's/^directnfs\[[0-9]*\]: //p')"
    # A prefix over a non-empty local directory: said once per dnfs run.
    mkdir -p "$WORK/hidden" && echo local >"$WORK/hidden/file"
    { cat "$TAB"; server_block hidden "$export_path" "$WORK/hidden" "$MAIN_VERS"; } >"$WORK/dnfstab-hidden"
    "$DNFS_BIN" --config "$WORK/dnfstab-hidden" run -- sh -c 'ls / >/dev/null; sh -c true' 2>"$WORK/hidden.err" || true
    check "a prefix over a non-empty local directory: one warning [dev:hidden-local-dir]" \
        "1|mount prefix $WORK/hidden is over a local directory that is not empty" \
        "$(grep -c . "$WORK/hidden.err")|$(sed -n 's/^directnfs\[[0-9]*\]: \(.*not empty\).*/\1/p' "$WORK/hidden.err")"
    # The permission cases, as the postgres user in a directory of its own
    # holding a file of root's.
    id postgres >/dev/null 2>&1 || { bad "postgres user" "missing (apt-get install postgresql)"; return; }
    mkdir -p "$WORK/edges-user"
    printf 'root!' >"$WORK/edges-user/rootfile"
    chown postgres "$WORK/edges-user"
    nfs sh -c "mkdir -p $NFS/edges-user && printf 'root!' >$NFS/edges-user/rootfile && chown postgres $NFS/edges-user"
    runuser -u postgres -- "$WORK/edges" --user "$WORK/edges-user" >"$WORK/edges-user-local.out" 2>&1
    runuser -u postgres -- "${RUN[@]}" "$WORK/edges" --user "$NFS/edges-user" >"$WORK/edges-user-nfs.out" 2>&1
    if diff "$WORK/edges-user-local.out" "$WORK/edges-user-nfs.out" >"$WORK/edges-user.diff"; then
        ok "edges as a user: $(wc -l <"$WORK/edges-user-local.out") lines identical on NFS and locally"
    else
        cat "$WORK/edges-user.diff"
        bad "edges as a user" "NFS differs from the local file system (diff above: < local, > NFS)"
    fi
}

# silly_case DIR REMOVE [RUNNER...]: process A holds DIR/f open, a
# separate process (RUNNER, empty for the local directory) runs the shell
# command REMOVE; A then reads, writes and closes. Prints what A saw and
# the directory afterwards.
silly_case() {
    local dir=$1 remove=$2 pid i
    shift 2
    "$@" sh -c "printf 'old contents\n' >$dir/f"
    rm -f "$WORK/ready" "$WORK/go"
    "$@" "$WORK/removeopen" hold "$dir/f" "$WORK/ready" "$WORK/go" >"$WORK/hold.out" 2>&1 &
    pid=$!
    for ((i = 0; i < 1000; i++)); do [[ -e $WORK/ready ]] && break; sleep 0.01; done
    "$@" sh -c "$remove"
    touch "$WORK/go"
    wait "$pid" || echo "holder: exit $?"
    cat "$WORK/hold.out"
    echo "after: $("$@" ls -A "$dir" | tr '\n' ' ')"
    echo "f: $("$@" cat "$dir/f" 2>/dev/null || echo missing)"
    "$@" rm -f "$dir/f"
}

group_silly() {
    step "a file removed by another process while open (removeopen.c)"
    cc -O1 -o "$WORK/removeopen" crates/preload/tests/c/removeopen.c
    mkdir -p "$WORK/silly-local"
    nfs mkdir -p "$NFS/silly"
    local name remove out
    for name in unlink rename-over; do
        remove="rm DIR/f"
        [[ $name == rename-over ]] && remove="printf 'new\n' >DIR/n && mv DIR/n DIR/f"
        silly_case "$WORK/silly-local" "${remove//DIR/$WORK/silly-local}" >"$WORK/silly-$name-local.out"
        silly_case "$NFS/silly" "${remove//DIR/$NFS/silly}" "${RUN[@]}" >"$WORK/silly-$name-nfs.out"
        if diff "$WORK/silly-$name-local.out" "$WORK/silly-$name-nfs.out" >"$WORK/silly.diff"; then
            ok "$name by another process while open: $(wc -l <"$WORK/silly-$name-local.out") lines identical on NFS and locally (old contents read, hidden name gone after close)"
        else
            cat "$WORK/silly.diff"
            bad "$name by another process while open" "NFS differs from the local file system (diff above: < local, > NFS)"
        fi
    done
    # The holder killed: its hidden name stays (as after a crash on a
    # kernel mount; docs/run-deviations.md, removed-while-open).
    nfs sh -c "printf 'old contents\n' >$NFS/silly/k"
    rm -f "$WORK/ready" "$WORK/go"
    "${RUN[@]}" "$WORK/removeopen" hold "$NFS/silly/k" "$WORK/ready" "$WORK/go" >/dev/null 2>&1 &
    local pid=$! i
    for ((i = 0; i < 1000; i++)); do [[ -e $WORK/ready ]] && break; sleep 0.01; done
    nfs rm "$NFS/silly/k"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    out=$(ls -A "$VIEW/silly")
    check "holder killed -9: one hidden name left, k gone" "1|" "$(grep -c '^\.nfs' <<<"$out")|$(grep -x k <<<"$out" || true)"
    nfs sh -c "rm -f $NFS/silly/.nfs*"
    # pg_ctl's race: stdio reads of a file another process creates and
    # unlinks in a loop (ESTALE or EIO before host-wide silly rename).
    "$WORK/removeopen" churn "$WORK/silly-local/pid" 5 2>/dev/null &
    pid=$!
    "$WORK/removeopen" reader "$WORK/silly-local/pid" 5 >"$WORK/race-local.out" 2>/dev/null || true
    wait "$pid" || true
    "${RUN[@]}" "$WORK/removeopen" churn "$NFS/silly/pid" 5 2>"$WORK/churn.err" &
    pid=$!
    nfs "$WORK/removeopen" reader "$NFS/silly/pid" 5 >"$WORK/race-nfs.out" 2>"$WORK/race.err" || true
    wait "$pid" || bad "churn" "$(tail -1 "$WORK/churn.err")"
    check "pg_ctl's race: reads of a file another process removes see no I/O error ($(tail -1 "$WORK/race.err"), $(tail -1 "$WORK/churn.err"))" \
        "$(cat "$WORK/race-local.out")" "$(cat "$WORK/race-nfs.out")"
    check "pg_ctl's race: no hidden name left" "" "$(ls -A "$VIEW/silly")"
}

group_untouched() {
    step "local files, pipes and sockets untouched (untouched.c)"
    cc -O1 -o "$WORK/untouched" crates/preload/tests/c/untouched.c
    mkdir -p "$WORK/plain" "$WORK/preloaded"
    "$WORK/untouched" "$WORK/plain" >"$WORK/plain.out" 2>&1
    nfs "$WORK/untouched" "$WORK/preloaded" >"$WORK/preloaded.out" 2>"$WORK/preloaded.err"
    check "same output with and without the library" "$(cat "$WORK/plain.out")" "$(cat "$WORK/preloaded.out")"
    check "nothing on stderr with the library" "" "$(cat "$WORK/preloaded.err")"
}

group_coreutils() {
    step "coreutils and tar, compared with the server's view"
    local src=$WORK/src d=$NFS/cu v=$VIEW/cu
    mkdir -p "$src/a/b/c" "$src/empty"
    head -c 5000000 /dev/urandom >"$src/big"
    : >"$src/zero"
    for i in $(seq 1 40); do echo "file $i" >"$src/a/f$i"; done
    echo deep >"$src/a/b/c/deep.txt"
    ln -s a/f1 "$src/link"
    chmod 640 "$src/a/f2"
    nfs mkdir "$d"
    expect "cp -r into NFS" nfs cp -r "$src" "$d/src"
    expect "server view equals the source (diff -r)" diff -r "$src" "$v/src"
    check "symlink kept" "a/f1" "$(readlink "$v/src/link")"
    expect "cp -p keeps modes and times" nfs cp -p "$src/a/f2" "$d/f2p"
    check "cp -p result on the server" "$(stat -c '%a %Y' "$src/a/f2")" "$(stat -c '%a %Y' "$v/f2p")"
    expect "cat out of NFS" bash -c "$RUNS cat '$d/src/big' | cmp - '$src/big'"
    # ls -l is what is compared: its view of the names, modes and sizes.
    # shellcheck disable=SC2012
    check "ls -l names and sizes" \
        "$(cd "$v/src/a" && ls -l | awk '{print $1, $5, $9}')" \
        "$(nfs sh -c "cd '$d/src/a' && ls -l" | awk '{print $1, $5, $9}')"
    check "stat -c matches the server (size, mode, mtime, inode)" \
        "$(stat -c '%s %a %Y %i' "$v/src/big")" "$(nfs stat -c '%s %a %Y %i' "$d/src/big")"
    expect "mkdir -p" nfs mkdir -p "$d/x/y/z"
    check "mkdir -p made every level" "directory" "$(stat -c %F "$v/x/y/z")"
    expect "mv within NFS" nfs mv "$d/src/a/f3" "$d/src/a/moved"
    check "mv seen by the server" "file 3" "$(cat "$v/src/a/moved")"
    expect "mv NFS -> local copies and removes" nfs mv "$d/src/a/f4" "$WORK/f4"
    check "mv'd to local" "file 4|no" "$(cat "$WORK/f4")|$([[ -e $v/src/a/f4 ]] && echo yes || echo no)"
    head -c 3000000 /dev/urandom >"$WORK/dd.in"
    expect "dd conv=fsync into NFS" nfs dd if="$WORK/dd.in" of="$d/dd.out" bs=64k conv=fsync status=none
    expect "dd result on the server" cmp "$WORK/dd.in" "$v/dd.out"
    expect "dd out of NFS with skip" bash -c "$RUNS dd if='$d/dd.out' bs=4096 skip=10 status=none | cmp - <(tail -c +40961 '$WORK/dd.in')"
    expect "tar c of an NFS tree" nfs tar cf "$WORK/t.tar" -C "$d" src
    mkdir -p "$WORK/untar"
    tar xf "$WORK/t.tar" -C "$WORK/untar"
    expect "tar c archive holds the tree" diff -r "$v/src" "$WORK/untar/src"
    nfs mkdir "$d/tx"
    expect "tar x into NFS" nfs tar xf "$WORK/t.tar" -C "$d/tx"
    expect "tar x result on the server" diff -r "$v/src" "$v/tx/src"
    check "tar x kept mtimes" "$(stat -c %Y "$v/src/a/f5")" "$(stat -c %Y "$v/tx/src/a/f5")"
    expect "ln and ln -s" nfs sh -c "ln '$d/src/a/f6' '$d/hard' && ln -s src/a/f6 '$d/soft'"
    check "hard link count on the server" "2" "$(stat -c %h "$v/hard")"
    check "symlink on the server" "src/a/f6" "$(readlink "$v/soft")"
    expect "touch -d, chmod" nfs sh -c "touch -d 2001-02-03T04:05:06Z '$d/src/zero' && chmod 600 '$d/src/zero'"
    check "times and mode on the server" "981173106 600" "$(stat -c '%Y %a' "$v/src/zero")"
    expect "shell redirections (>, >>, <, fd 3)" nfs sh -c "
        echo one > '$d/redir' && echo two >> '$d/redir' &&
        exec 3< '$d/redir' && read a <&3 && read b <&3 && [ \"\$a \$b\" = 'one two' ] &&
        wc -l < '$d/redir' | grep -qx 2"
    # rsync (3.2.4 on) walks from "/" one component at a time with
    # O_PATH descriptors and *at calls.
    expect "rsync -a into NFS" nfs rsync -a "$src/" "$d/rs/"
    expect "rsync result on the server" diff -r "$src" "$v/rs"
    echo changed >"$src/a/f7"
    rm "$src/a/f8"
    expect "rsync -a --delete updates NFS" nfs rsync -a --delete "$src/" "$d/rs/"
    expect "rsync update on the server" diff -r "$src" "$v/rs"
    expect "rsync -a out of NFS" nfs rsync -a "$d/rs/" "$WORK/rsback/"
    expect "rsync out of NFS equals the source" diff -r "$src" "$WORK/rsback"
    # git maps its index, objects and packs MAP_PRIVATE (served as a copy
    # with DIRECTNFS_PRELOAD_MMAP=copy) and makes its temporary files with
    # mkstemp64.
    local g=(git -c user.email=t@dnfs -c user.name=t -c init.defaultBranch=main)
    export DIRECTNFS_PRELOAD_MMAP=copy
    expect "git init, add, commit on NFS" nfs sh -c "cd '$d' && ${g[*]} init -q gt && cd gt &&
        cp -r '$src/a' . && ${g[*]} add -A && ${g[*]} commit -qm one &&
        echo more >>a/f1 && ${g[*]} commit -qam two && ${g[*]} gc -q && ${g[*]} fsck"
    check "git log on the server (no library)" "2" "$(git -C "$v/gt" log --oneline 2>&1 | wc -l)"
    expect "git fsck on the server (no library)" git -C "$v/gt" fsck
    expect "git clone NFS to NFS" nfs git clone -q "$d/gt" "$d/gt2"
    unset DIRECTNFS_PRELOAD_MMAP
    expect "the clone's tree equals what was committed" diff -r --exclude=f1 "$src/a" "$v/gt2/a"
    check "the clone has the second commit" "$(cat "$src/a/f1") more" "$(tr '\n' ' ' <"$v/gt2/a/f1" | sed 's/ $//')"
    # A program on NFS cannot be executed (the kernel loads it), but a
    # script runs through its interpreter (docs/book/src/run/not-served.md).
    # shellcheck disable=SC2016 # $1 is the script's own argument
    printf '#!/bin/sh\necho ran "$1"\n' >"$v/run.sh"
    chmod 755 "$v/run.sh"
    check "a script on NFS: not found by execve, runs through sh" "127 ran x" \
        "$(nfs sh -c "'$d/run.sh' x >/dev/null 2>&1; printf '%s ' \$?"; nfs sh "$d/run.sh" x)"
    rm -f "$v/run.sh"
    # A local symbolic link into a mount prefix (links.rs): the kernel
    # cannot follow it, the library does once the local call says ENOENT.
    local ll=$WORK/locallinks
    mkdir -p "$ll"
    nfs mkdir "$d/linked"
    ln -s "$d/linked" "$ll/to-nfs"
    ln -s "$ll/to-nfs" "$ll/chain"
    ln -s "$ll/missing" "$ll/to-local-missing"
    expect "through a local link: mkdir -p, write, append" nfs sh -c \
        "mkdir -p '$ll/to-nfs/a/b' && echo one >'$ll/to-nfs/a/b/f' && echo two >>'$ll/chain/a/b/f'"
    check "through a local link: the server has it" "one two" "$(tr '\n' ' ' <"$v/linked/a/b/f" | sed 's/ $//')"
    check "through a local link: cat, ls, stat, test -d" "one two|f|8|dir" \
        "$(nfs sh -c "cat '$ll/to-nfs/a/b/f' | tr '\n' ' ' | sed 's/ \$//'; printf '|'; ls '$ll/chain/a/b'; printf '|'; stat -c %s '$ll/to-nfs/a/b/f'; printf '|'; test -d '$ll/to-nfs/a' && echo dir" | tr -d '\n')"
    expect "through a local link: mv, cp, rm" nfs sh -c \
        "mv '$ll/to-nfs/a/b/f' '$ll/chain/a/g' && cp '$ll/to-nfs/a/g' '$ll/to-nfs/h' && rm '$ll/to-nfs/a/g' && rmdir '$ll/to-nfs/a/b'"
    check "through a local link: mv, cp, rm on the server" "one two|no|no" \
        "$(tr '\n' ' ' <"$v/linked/h" | sed 's/ $//')|$([[ -e $v/linked/a/g ]] && echo yes || echo no)|$([[ -e $v/linked/a/b ]] && echo yes || echo no)"
    check "between a local link and a local file: mv copies (EXDEV)" "one two|no" \
        "$(nfs sh -c "mv '$ll/to-nfs/h' '$ll/h.local' && tr '\n' ' ' <'$ll/h.local' | sed 's/ \$//'")|$([[ -e $v/linked/h ]] && echo yes || echo no)"
    check "a missing local name, a link to a missing local path: still ENOENT" "1 1" \
        "$(nfs sh -c "cat '$ll/nothing' 2>/dev/null; printf '%s ' \$?; cat '$ll/to-local-missing/x' 2>/dev/null; printf '%s' \$?")"
    check "lstat and readlink of the local link itself stay local" "symbolic link|$d/linked" \
        "$(nfs sh -c "stat -c %F '$ll/to-nfs'; printf '|'; readlink '$ll/to-nfs'" | tr -d '\n')"
    # A symbolic link on NFS to a local directory (resolve.rs): what is
    # made, renamed, linked and removed through it is the local directory's.
    local lt=$WORK/nfs-to-local
    mkdir -p "$lt"
    expect "an NFS link to a local directory: ln -s" nfs ln -s "$lt" "$d/to-local"
    expect "through an NFS link to a local directory: mkdir, write, append, mv, ln, ln -s, rmdir, rm" nfs sh -c \
        "mkdir '$d/to-local/sub' && echo one >'$d/to-local/sub/f' && echo two >>'$d/to-local/sub/f' && mv '$d/to-local/sub/f' '$d/to-local/g' && ln '$d/to-local/g' '$d/to-local/h' && ln -s g '$d/to-local/s' && touch '$d/to-local/sub/x' && rm '$d/to-local/sub/x' && rmdir '$d/to-local/sub' && rm '$d/to-local/h'"
    # ls counts the names a user sees (here g and s, plain names).
    # shellcheck disable=SC2012
    check "through an NFS link to a local directory: the local directory has it" "one two|no|no|g|2" \
        "$(tr '\n' ' ' <"$lt/g" | sed 's/ $//')|$([[ -e $lt/sub ]] && echo yes || echo no)|$([[ -e $lt/h ]] && echo yes || echo no)|$(readlink "$lt/s")|$(ls "$lt" | wc -l)"
    check "through an NFS link to a local directory: the server has only the link" "symbolic link|" \
        "$(stat -c %F "$v/to-local")|$(find "$v" -name g -o -name s -type l | head -3)"
    check "through an NFS link to a local directory: cat, ls, stat" "one two|g s|8" \
        "$(nfs sh -c "cat '$d/to-local/s' | tr '\n' ' ' | sed 's/ \$//'; printf '|'; ls '$d/to-local/' | tr '\n' ' ' | sed 's/ \$//'; printf '|'; stat -L -c %s '$d/to-local/s'" | tr -d '\n')"
    check "between an NFS link to a local directory and NFS: mv copies (EXDEV)" "one two|no" \
        "$(nfs sh -c "mv '$d/to-local/g' '$d/from-local' && cat '$d/from-local'" | tr '\n' ' ' | sed 's/ $//')|$([[ -e $lt/g ]] && echo yes || echo no)"
    expect "an NFS link to a local directory: rm the link" nfs rm "$d/to-local" "$d/from-local"
    check "du -b and find agree with the server" \
        "$(cd "$v" && find src -type f | sort | md5sum)" "$(nfs sh -c "cd '$d' && find src -type f" | sort | md5sum)"
    expect "rm -r" nfs rm -r "$d/src" "$d/tx" "$d/gt" "$d/gt2" "$d/linked"
    check "rm -r seen by the server" "no no" "$([[ -e $v/src ]] && echo yes || echo no) $([[ -e $v/tx ]] && echo yes || echo no)"
}

group_sqlite() {
    step "sqlite3 CLI (its own unix VFS through the library)"
    # ANCHOR: sqlite_create
    local db=$NFS/sq/t.db
    nfs mkdir "$NFS/sq"
    check "create, 50k rows, integrity_check" "$(printf '50000\nok')" "$(nfs sqlite3 "$db" "
        PRAGMA journal_mode=DELETE;
        CREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
        INSERT INTO t SELECT i, printf('row-%06d', i) FROM n;
        CREATE INDEX t_v ON t(v);
        SELECT count(*) FROM t; PRAGMA integrity_check;" 2>&1 | tail -2)"
    # ANCHOR_END: sqlite_create
    # A holds the write lock for 3 s; B without a timeout gets SQLITE_BUSY;
    # C with one waits for A's commit.
    (echo "BEGIN EXCLUSIVE; INSERT INTO t(v) VALUES ('A');"; sleep 3; echo "COMMIT;") |
        nfs sqlite3 "$db" >"$WORK/sqA" 2>&1 &
    local a=$!
    sleep 1
    local busy
    busy=$(nfs sqlite3 "$db" "INSERT INTO t(v) VALUES ('B');" 2>&1 || true)
    if [[ $busy == *"database is locked"* ]]; then ok "second writer without a timeout: SQLITE_BUSY"; else bad "second writer without a timeout: SQLITE_BUSY" "$busy"; fi
    local t0=$SECONDS
    # ANCHOR: sqlite_timeout
    expect "second writer with .timeout waits for the first" nfs sqlite3 -cmd ".timeout 30000" "$db" "INSERT INTO t(v) VALUES ('C');"
    # ANCHOR_END: sqlite_timeout
    wait "$a"
    if (( SECONDS - t0 >= 1 )); then ok "the waiter waited for the commit"; else bad "the waiter waited for the commit" "$((SECONDS - t0)) s"; fi
    # Two writers at once, each 300 single-row transactions.
    for w in X Y; do
        nfs sqlite3 -cmd ".timeout 60000" "$db" "$(for i in $(seq 1 300); do echo "INSERT INTO t(v) VALUES ('$w$i');"; done)" &
    done
    wait
    check "rows after contention, integrity" "$(printf '50602\nok')" "$(nfs sqlite3 "$db" "SELECT count(*) FROM t; PRAGMA integrity_check;")"
    check "the server's copy is the same database" "$(printf 'ok\n50602|A|C')" \
        "$(sqlite3 "file:$VIEW/sq/t.db?immutable=1" "PRAGMA integrity_check; SELECT count(*), max(CASE WHEN v='A' THEN v END), max(CASE WHEN v='C' THEN v END) FROM t;")"
    # WAL mode maps the -shm file shared, which is refused (docs/book/src/run/
    # not-served.md): a clear error; with locking_mode=EXCLUSIVE first, WAL
    # keeps its index in the process's memory and works.
    # ANCHOR: sqlite_wal
    local wal
    wal=$(nfs sqlite3 "$NFS/sq/w.db" "PRAGMA journal_mode=WAL; CREATE TABLE w(x);" 2>&1 || true)
    if [[ $wal == *"disk I/O error"* && $wal == *"mmap of NFS descriptor"* ]]; then ok "WAL mode: disk I/O error, the warning names mmap"; else bad "WAL mode: disk I/O error, the warning names mmap" "$wal"; fi
    check "WAL mode after locking_mode=EXCLUSIVE" "$(printf 'exclusive\nwal\n2\nok')" \
        "$(nfs sqlite3 "$NFS/sq/x.db" "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;
            CREATE TABLE w(x); INSERT INTO w VALUES (1), (2); SELECT count(*) FROM w; PRAGMA integrity_check;" 2>&1)"
    # ANCHOR_END: sqlite_wal
}

# The lock groups (v4locks here, nlm in nlm.sh): two "hosts" A and B,
# lockprobe.c run with two shadow directories, so no local lock in common.
probeA() { DIRECTNFS_SHADOW_DIR=$WORK/shadowA "${RUN[@]}" "$WORK/lockprobe" "$@"; }
probeB() { DIRECTNFS_SHADOW_DIR=$WORK/shadowB "${RUN[@]}" "$WORK/lockprobe" "$@"; }
# hold KIND TYPE START LEN: A takes the lock on the calling group's $f
# (coprocess HOLD; the group declares f and line local).
hold() {
    coproc HOLD { probeA hold "$f" "$@"; }
    line=
    read -r -t 60 line <&"${HOLD[0]}" || true
    check "A holds $*" held "$line"
}
# tell CMD: A runs CMD and says it did.
tell() {
    echo "$1" >&"${HOLD[1]}"
    line=
    read -r -t 60 line <&"${HOLD[0]}" || true
    check "A: $1" "done $1" "$line"
}
unhold() {
    local pid=$HOLD_PID fd=${HOLD[1]}
    exec {fd}>&-
    wait "$pid" || true
}

group_v4locks() {
    step "locks on an NFSv4.1 mount reach the server (lockprobe.c)"
    if [[ -z ${DNFS_TEST_URL_V41:-} ]]; then
        if [[ -n ${DNFS_TEST_REQUIRE_SERVER:-} ]]; then bad "v4locks" "DNFS_TEST_URL_V41 is not set"; fi
        echo "SKIPPED v4locks: DNFS_TEST_URL_V41 is not set"
        return
    fi
    cc -O1 -Wall -Werror -o "$WORK/lockprobe" crates/preload/tests/c/lockprobe.c
    mkdir -p "$WORK/shadowA" "$WORK/shadowB"
    # shellcheck disable=SC2034 # line: set by hold and tell
    local f=$MNT-v41/$RUNID/locked line out t

    hold fcntl w 0 100
    check "B: F_GETLK answers from the server, F_SETLK EAGAIN" "$(printf 'getlk w 0 100 0\nEAGAIN')" \
        "$(probeB try "$f" fcntl w 50 10)"
    check "B: a read lock conflicts too" EAGAIN "$(probeB try "$f" fcntl r 99 1 | tail -1)"
    check "B: flock (the whole file on the server) conflicts" EAGAIN "$(probeB try "$f" flock w 0 0)"
    check "B: bytes beyond the range are free" "$(printf 'getlk u 200 10 0\nok')" \
        "$(probeB try "$f" fcntl w 200 10)"
    out=$(DIRECTNFS_SHADOW_DIR=$WORK/shadowA "${RUN[@]}" "$WORK/lockprobe" try "$f" fcntl w 0 1)
    if [[ $out == "getlk w 0 100 "[1-9]*$'\n'EAGAIN ]]; then ok "same host: the local lock answers, with the holder's pid"; else bad "same host: the local lock answers, with the holder's pid" "$out"; fi
    probeB wait "$f" fcntl w 0 100 >"$WORK/waited" &
    local waiter=$!
    sleep 2
    tell unlock
    wait "$waiter" || true
    out=$(cat "$WORK/waited")
    t=${out#ok }
    if [[ $out == ok* ]] && ((t >= 1500)); then ok "B: F_SETLKW waited for A's unlock (${t} ms)"; else bad "B: F_SETLKW waited for A's unlock" "$out"; fi
    unhold

    hold fcntl w 0 0
    check "B: EAGAIN while A holds it to the end of the file" EAGAIN "$(probeB try "$f" fcntl w 1000000 1 | tail -1)"
    tell closeother
    check "B: A's close of another descriptor released the record lock" ok "$(probeB try "$f" fcntl w 0 0 | tail -1)"
    unhold

    hold ofd w 0 0
    check "B: OFD lock conflicts (F_OFD_GETLK from the server)" "$(printf 'getlk w 0 0 0\nEAGAIN')" \
        "$(probeB try "$f" ofd w 0 1)"
    tell close
    check "B: the OFD lock went with its descriptor" ok "$(probeB try "$f" ofd w 0 1 | tail -1)"
    unhold

    hold flock w 0 0
    check "B: flock conflicts" EAGAIN "$(probeB try "$f" flock r 0 0)"
    tell unlock
    check "B: after LOCK_UN" ok "$(probeB try "$f" flock w 0 0)"
    unhold

    # SQLite's own unix VFS through the library on the two "hosts": its
    # fcntl locks are the server's, so their transactions take turns.
    local db=$MNT-v41/$RUNID/two.db
    nfs sqlite3 "$db" "CREATE TABLE t(v TEXT);"
    for w in A B; do
        DIRECTNFS_SHADOW_DIR=$WORK/shadow$w nfs sqlite3 -cmd ".timeout 60000" "$db" \
            "$(for i in $(seq 1 200); do echo "INSERT INTO t VALUES ('$w$i');"; done)" &
    done
    wait
    check "sqlite3 on two hosts: every row, integrity" "$(printf '400\nok')" \
        "$(nfs sqlite3 "$db" "SELECT count(*) FROM t; PRAGMA integrity_check;")"

    # A directory's attributes (NFSv4.1's OPEN refuses a directory, so
    # SETATTR goes by its handle; ENOTSUP before).
    local d=$MNT-v41/$RUNID/attrdir
    nfs mkdir "$d"
    expect "NFSv4.1: chmod, touch -d and chown of a directory" \
        nfs sh -c "chmod 700 '$d' && touch -d 2001-02-03T04:05:06Z '$d' && chown nobody '$d'"
    check "NFSv4.1: the directory's mode, mtime and owner on the server" "700 981173106 nobody" \
        "$(stat -c '%a %Y %U' "$VIEW/attrdir")"

    # sort -o closes its output in an exit handler, which glibc runs after
    # destroying the main thread's thread-locals; NFSv4.1's CLOSE is a
    # call (the program aborted in it before).
    seq 1 5000 | sort -R >"$WORK/unsorted"
    expect "NFSv4.1: sort -o into NFS (closed by an exit handler)" \
        nfs sort -o "$MNT-v41/$RUNID/sorted" "$WORK/unsorted"
    check "NFSv4.1: sort -o result on the server" "$(sort "$WORK/unsorted" | md5sum)" \
        "$(md5sum <"$VIEW/sorted")"

    # NFSv3 with nolock: local locks only, so A and B (no local lock in
    # common) do not exclude each other: what the server's lock adds.
    f=$NFS/locked
    hold fcntl w 0 100
    check "NFSv3 with nolock: B is not excluded (local locks only)" ok "$(probeB try "$f" fcntl w 0 100 | tail -1)"
    unhold
}

group_fio() {
    step "fio psync and pvsync, numjobs=4, verify=crc32c"
    nfs mkdir "$NFS/fio"
    local e
    for e in psync pvsync; do
        if nfs fio --name="$e" --directory="$NFS/fio" --size=8m --bs=8k --rw=randrw \
            --ioengine="$e" --numjobs=4 --verify=crc32c --do_verify=1 --verify_state_save=0 --group_reporting \
            >"$WORK/fio-$e" 2>&1 && grep -q "err= 0" "$WORK/fio-$e" && ! grep -qi "verify:" "$WORK/fio-$e"; then
            ok "fio $e: 4 jobs, verify crc32c, 0 errors"
        else
            bad "fio $e" "$(grep -iE 'err=|verify|error' "$WORK/fio-$e" | head -3 | tr '\n' ' ')"
        fi
        check "fio $e files on the server" "4" "$(find "$VIEW/fio" -name "$e.*" -size 8192k | wc -l)"
    done
    # Engines that cannot be served: a clear error (or, for io_uring, which
    # enters the kernel with its own instructions, a warning and the lost
    # bytes reported), never wrong data passed off as right.
    local out
    # libaio: its context is refused at io_setup (ENOSYS) in a process the
    # library serves; allowed, io_submit refuses NFS descriptors.
    out=$(nfs fio --name=libaio --directory="$NFS/fio" --size=1m --bs=8k --rw=randwrite \
        --ioengine=libaio 2>&1 || true)
    if [[ $out == *"err=38"* && $out == *"directnfs["*"io_setup refused (ENOSYS)"* ]]; then
        ok "fio libaio under the library: io_setup ENOSYS and a warning"
    else
        bad "fio libaio under the library" "$(grep -E 'err=|directnfs' <<<"$out" | head -3 | tr '\n' ' ')"
    fi
    for e in libaio posixaio; do
        out=$(DIRECTNFS_PRELOAD_KERNEL_AIO=allow nfs fio --name="$e" --directory="$NFS/fio" --size=1m \
            --bs=8k --rw=randwrite --ioengine="$e" 2>&1 || true)
        if [[ $out == *"err=95"* && $out == *"directnfs["*"refused (EOPNOTSUPP)"* ]]; then
            ok "fio $e on NFS: EOPNOTSUPP and a warning"
        else
            bad "fio $e on NFS" "$(grep -E 'err=|directnfs' <<<"$out" | head -3 | tr '\n' ' ')"
        fi
    done
    out=$(nfs fio --name=uring --directory="$NFS/fio" --size=1m --bs=8k --rw=randwrite \
        --ioengine=io_uring 2>&1 || true)
    if [[ $out == *"uses io_uring and NFS descriptors"* && $out == *"did not reach the server"* ]]; then
        ok "fio io_uring on NFS: warned, lost bytes reported"
    else
        bad "fio io_uring on NFS" "$(grep -E 'err=|directnfs' <<<"$out" | head -3 | tr '\n' ' ')"
    fi
    # liburing's ring set-up (what MariaDB calls): refused; allowed, the
    # ring is noticed and the warning comes.
    cc -O2 -Wall -Werror -o "$WORK/kernelaio" crates/preload/tests/c/kernelaio.c
    out=$(nfs "$WORK/kernelaio" "$NFS/fio/kaio" 2>&1 || true)
    if [[ $out == *"init -38"* && $out == *"io_uring_queue_init refused (ENOSYS)"* ]]; then
        ok "liburing io_uring_queue_init under the library: -ENOSYS and a warning"
    else
        bad "liburing io_uring_queue_init under the library" "$(tr '\n' ' ' <<<"$out")"
    fi
    out=$(DIRECTNFS_PRELOAD_KERNEL_AIO=allow nfs "$WORK/kernelaio" "$NFS/fio/kaio" 2>&1 || true)
    if [[ $out == *"init 0"* && $out == *"uses io_uring and NFS descriptors"* ]]; then
        ok "liburing ring allowed: made, and the io_uring warning comes"
    else
        bad "liburing ring allowed" "$(tr '\n' ' ' <<<"$out")"
    fi
}

group_wb() {
    step "unstable mode with write-behind: fdatasync, O_DSYNC, syncfs, sync, sync_file_range, close"
    # Write-behind through the library is an opt-in (state.rs): one writer
    # per file here.
    local DIRECTNFS_PRELOAD_WRITE_BEHIND=1
    export DIRECTNFS_PRELOAD_WRITE_BEHIND
    local src=$WORK/wb-src
    head -c $((4 << 20)) /dev/urandom >"$src"
    expect "dd conv=fdatasync (write-behind, one barrier)" \
        "${RUN[@]}" dd if="$src" of="$MNT-wb/$RUNID/wb-fdatasync" bs=4k conv=fdatasync status=none
    if cmp -s "$src" "$VIEW/wb-fdatasync"; then ok "fdatasync: the server holds every byte"; else bad "fdatasync" "data differs"; fi
    expect "dd oflag=dsync (no write-behind for an O_DSYNC descriptor)" \
        "${RUN[@]}" dd if="$src" of="$MNT-wb/$RUNID/wb-dsync" bs=64k oflag=dsync status=none
    if cmp -s "$src" "$VIEW/wb-dsync"; then ok "O_DSYNC: the server holds every byte"; else bad "O_DSYNC" "data differs"; fi
    # Durable on return: one FILE_SYNC WRITE each, no COMMIT (an UNSTABLE
    # WRITE and a COMMIT would be two round trips). Counted in a program
    # that keeps stderr open to its end (dd closes it before the library
    # reports at exit).
    DIRECTNFS_PRELOAD_STATS=calls "${RUN[@]}" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DSYNC, 0o644)
for i in range(64):
    os.write(fd, bytes([i]) * 65536)
os.close(fd)' "$MNT-wb/$RUNID/wb-dsync2" 2>"$WORK/dsync.err" ||
        bad "O_DSYNC writes (python3)" "$(tail -2 "$WORK/dsync.err" | tr '\n' ' ')"
    check "O_DSYNC in unstable mode: 64 writes, one FILE_SYNC WRITE each, no COMMIT" "write x64: WRITE=64" \
        "$(by_call write "$WORK/dsync.err")"
    # syncfs and sync: each process is its own client, so they commit what
    # it can: the files it has open (there, the two it wrote; then one of
    # those and the third).
    DIRECTNFS_PRELOAD_STATS=calls "${RUN[@]}" python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None)
fds = [os.open(sys.argv[1] + n, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644) for n in "abc"]
os.write(fds[0], b"a" * 100000)
os.write(fds[1], b"b" * 100000)
assert libc.syncfs(fds[2]) == 0
os.write(fds[0], b"a" * 100)
os.write(fds[2], b"c" * 100)
os.sync()' "$MNT-wb/$RUNID/sync-" 2>"$WORK/sync.err" ||
        bad "syncfs and sync (python3)" "$(tail -2 "$WORK/sync.err" | tr '\n' ' ')"
    check "syncfs of a third file commits the two this process wrote" "syncfs x1: COMMIT=2" \
        "$(by_call syncfs "$WORK/sync.err")"
    check "sync commits the two written since" "sync x1: COMMIT=2" "$(by_call sync "$WORK/sync.err")"
    cc -O2 -Wall -Werror -o "$WORK/wbcheck" crates/preload/tests/c/wbcheck.c
    expect "pwrite, pread of bytes in flight, sync_file_range, fdatasync, close" \
        "${RUN[@]}" "$WORK/wbcheck" "$MNT-wb/$RUNID/wb-c"
    if [[ $(stat -c %s "$VIEW/wb-c" 2>/dev/null) == $((1000 * 4096)) ]] && cmp -s "$VIEW/wb-c" <("$WORK/wbcheck" --expected); then
        ok "C program: the server holds every byte"
    else
        bad "C program" "the server's file differs"
    fi
}

DOWN_STATE=/tmp/dnfs-preload-down-srv
group_bad() {
    step "bad input: server down, refused export, bad names, broken dnfstab"
    local out code t0
    # An export the server refuses: EACCES and one message, no crash.
    t0=$SECONDS
    code=0
    out=$(nfs ls "$MNT-refused" 2>&1) || code=$?
    if ((code > 0 && code < 128)) && [[ $out == *"Permission denied"* && $out == *"cannot mount"* ]]; then
        ok "refused export: EACCES and a message"
    else
        bad "refused export" "exit $code: $out"
    fi
    echo "   (refused export answered in $((SECONDS - t0)) s)"
    # Names NFS cannot hold.
    out=$(nfs touch "$NFS/$(printf 'x%.0s' $(seq 1 300))" 2>&1) && code=0 || code=$?
    if ((code > 0 && code < 128)) && [[ $out == *"too long"* ]]; then ok "300-byte name: ENAMETOOLONG"; else bad "300-byte name" "exit $code: $out"; fi
    out=$(nfs touch "$NFS/bad"$'\xff' 2>&1) && code=0 || code=$?
    if ((code > 0 && code < 128)); then ok "non-UTF-8 name: an error, no crash ($out)"; else bad "non-UTF-8 name" "exit $code: $out"; fi
    # A broken dnfstab: the program runs, NFS paths are not served, said once.
    printf 'server: x\nconections: 4\n' >"$WORK/broken"
    out=$(DIRECTNFS_TAB=$WORK/broken LD_PRELOAD=$ROOT/target/release/libdirectnfs_preload.so ls / 2>&1 >/dev/null) && code=0 || code=$?
    if ((code == 0)) && [[ $out == *"unknown key"* && $out == *"no NFS path is served"* ]]; then ok "broken dnfstab: said once, program runs"; else bad "broken dnfstab" "exit $code: $out"; fi
    out=$("$DNFS_BIN" --config "$WORK/broken" run -- true 2>&1) && code=0 || code=$?
    if ((code == 1)) && [[ $out == *"unknown key"* ]]; then ok "dnfs run refuses a broken dnfstab"; else bad "dnfs run with a broken dnfstab" "exit $code: $out"; fi

    # A server that is down: hard waits and completes when it is back; soft
    # fails with ETIMEDOUT after timeo x (retrans + 1).
    local durl
    durl=$(DNFS_STATE_DIR=$DOWN_STATE DNFS_NFS_PORT=${DNFS_PRELOAD_DOWN_NFS_PORT:-2561} \
        DNFS_MNT_PORT=${DNFS_PRELOAD_DOWN_MNT_PORT:-20561} \
        bash scripts/server/nfs-server.sh start "$WORK/down-export" 2>/dev/null | tail -n1)
    DOWN_STARTED=1
    local dport dmport dpath
    dport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$durl")
    dmport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$durl")
    dpath=${durl#nfs://*/}
    dpath=/${dpath%%\?*}
    {
        printf 'server: hard\npath: 127.0.0.1\nport: %s\nmount_port: %s\nhard\nexport: %s mount: /dnfs-down-hard\n' "$dport" "$dmport" "$dpath"
        printf 'server: soft\npath: 127.0.0.1\nport: %s\nmount_port: %s\nsoft\ntimeo: 10\nretrans: 1\nexport: %s mount: /dnfs-down-soft\n' "$dport" "$dmport" "$dpath"
    } >"$WORK/down.tab"
    local DRUN=("$DNFS_BIN" --config "$WORK/down.tab" run --)
    "${DRUN[@]}" sh -c 'echo back > /dnfs-down-hard/f'
    DNFS_STATE_DIR=$DOWN_STATE bash scripts/server/nfs-server.sh restart --down 6 >/dev/null 2>&1 &
    local restarting=$!
    sleep 1.5
    "${DRUN[@]}" cat /dnfs-down-hard/f >"$WORK/hard.out" 2>"$WORK/hard.err" &
    local hard=$!
    local t0=$SECONDS
    out=$("${DRUN[@]}" cat /dnfs-down-soft/f 2>&1) && code=0 || code=$?
    if ((code > 0 && code < 128)) && [[ $out == *"timed out"* ]] && ((SECONDS - t0 <= 5)); then
        ok "soft mount, server down: ETIMEDOUT after $((SECONDS - t0)) s"
    else
        bad "soft mount, server down" "exit $code after $((SECONDS - t0)) s: $out"
    fi
    if kill -0 "$hard" 2>/dev/null; then ok "hard mount, server down: the call waits"; else bad "hard mount: the call waits" "it ended: $(cat "$WORK/hard.err")"; fi
    wait "$restarting" || true
    if wait "$hard"; then
        check "hard mount: the call completes when the server is back" "back" "$(cat "$WORK/hard.out")"
    else
        bad "hard mount: the call completes when the server is back" "$(cat "$WORK/hard.err")"
    fi
    if grep -q "not responding" "$WORK/hard.err"; then ok "hard mount: said once that it waits"; else bad "hard mount message" "$(cat "$WORK/hard.err")"; fi
    DNFS_STATE_DIR=$DOWN_STATE bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    DOWN_STARTED=
}

PGBIN=/usr/lib/postgresql/15/bin
group_pg() {
    step "PostgreSQL 15 on NFS as the postgres user (file_sync)"
    pg_cluster "$NFS/pg" "$VIEW/pg" ""
}

# A mount prefix whose parents do not exist locally: a kernel mount point
# always exists in its parent, and initdb walks down from / (stat, then
# mkdir where missing), which the postgres user may not write in.
group_pgparents() {
    step "a mount prefix whose parents do not exist locally: initdb as postgres"
    id postgres >/dev/null 2>&1 || { bad "postgres user" "missing (apt-get install postgresql)"; return; }
    local up=$MNT-parents top=$MNT-parents/db/pg/$RUNID/parents
    if [[ -e $up ]]; then
        bad "pgparents" "$up exists locally"
        return
    fi
    # Its own dnfstab: the others (and the cost group's count) stay as
    # they are.
    local tab=$WORK/dnfstab-parents
    { cat "$TAB"; server_block parents "$export_path" "$up/db/pg" "$MAIN_VERS"; } >"$tab"
    chmod 644 "$tab"
    "$DNFS_BIN" --config "$tab" run -- sh -c "mkdir -p $top && chown postgres $top"
    local PG=(runuser -u postgres -- "$DNFS_BIN" --config "$tab" run --)
    check "stat of the prefix and its parents" "directory directory directory" \
        "$("${PG[@]}" stat -c %F "$up" "$up/db" "$up/db/pg/.." | tr '\n' ' ' | sed 's/ $//')"
    check "ls of each parent lists the next component" "db|pg" \
        "$("${PG[@]}" ls "$up")|$("${PG[@]}" ls "$up/db")"
    check "cd into a parent, pwd, cd into the prefix" "$up/db|$up/db/pg" \
        "$("${PG[@]}" sh -c "cd $up/db && /bin/pwd && cd pg && pwd" | paste -sd'|')"
    check "mkdir of a parent: EEXIST; mv of one: EBUSY [dev:prefix-parents]" "File exists|Device or resource busy" \
        "$("${PG[@]}" mkdir "$up/db" 2>&1 | sed 's/.*: //')|$("${PG[@]}" mv "$up/db" "$WORK/x" 2>&1 | sed 's/.*: //')"
    check "nothing was made locally" "no" "$([[ -e $up ]] && echo yes || echo no)"
    expect "mkdir -p through the parents as postgres" "${PG[@]}" mkdir -p "$top/mkp/a/b"
    expect "initdb -k as postgres into $top/data" "${PG[@]}" "$PGBIN/initdb" -k -A trust -D "$top/data"
    check "the cluster is on the server" "15" "$(cat "$VIEW/parents/data/PG_VERSION" 2>/dev/null)"
}

# PostgreSQL with a local data directory whose WAL (initdb --waldir) and a
# tablespace (CREATE TABLESPACE ... LOCATION) are on NFS: both are local
# symbolic links into the mount prefix (links.rs).
group_pglinks() {
    step "PostgreSQL 15: local data directory, WAL and a tablespace on NFS"
    id postgres >/dev/null 2>&1 || { bad "postgres user" "missing (apt-get install postgresql)"; return; }
    local dir=$NFS/pgl view=$VIEW/pgl sock=$WORK/pgsock local_dir=$WORK/pgl
    local data=$local_dir/data log=$WORK/pgl.log
    mkdir -p "$sock" "$local_dir"
    chown postgres "$sock" "$WORK" "$local_dir"
    nfs mkdir "$dir"
    nfs chown postgres:postgres "$dir"
    local PG=(runuser -u postgres -- "${RUN[@]}")
    local PSQL=(runuser -u postgres -- "$PGBIN/psql" -X -q -At -h "$sock" -p 5432 postgres)
    local opts="-p 5432 -k $sock -c listen_addresses=''"
    expect "initdb -k --waldir on NFS" "${PG[@]}" "$PGBIN/initdb" -k -A trust -D "$data" --waldir="$dir/wal"
    check "pg_wal is a local link; the WAL segment is on the server" "$dir/wal|1" \
        "$(readlink "$data/pg_wal")|$(find "$view/wal" -maxdepth 1 -size 16M | wc -l)"
    expect "pg_ctl start" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 120 start
    PG_STARTED+=("$data")
    nfs mkdir "$dir/ts"
    nfs chown postgres:postgres "$dir/ts"
    expect "CREATE TABLESPACE on NFS" "${PSQL[@]}" -c "CREATE TABLESPACE nfsts LOCATION '$dir/ts'"
    expect "pgbench -i -s 5 --tablespace (tables and indexes on NFS)" runuser -u postgres -- "$PGBIN/pgbench" \
        -q -h "$sock" -p 5432 -i -s 5 --tablespace=nfsts --index-tablespace=nfsts postgres
    check "the tablespace's files are on the server" "yes" \
        "$( (($(find "$view/ts" -type f -size +1M | wc -l) >= 2)) && echo yes || echo no)"
    "${PSQL[@]}" -c "CREATE TABLE ledger(id int PRIMARY KEY) TABLESPACE nfsts" >/dev/null
    pg_kill_and_recover "" "$data" "$data/postmaster.pid" "$log" "$opts" pgl
    expect "clean shutdown" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -m fast -w -t 120 stop
    PG_STARTED=()

    # The other way round: the data directory on NFS, its WAL on a local
    # disk (pg_wal is then a symbolic link on NFS to a local directory,
    # resolve.rs): every WAL call goes to the kernel.
    step "PostgreSQL 15: data directory on NFS, WAL on a local disk"
    local ndata=$dir/ndata wal=$local_dir/wal nlog=$WORK/pgln.log
    expect "local WAL: initdb -k on NFS --waldir local" "${PG[@]}" "$PGBIN/initdb" -k -A trust -D "$ndata" --waldir="$wal"
    check "local WAL: pg_wal on the server is a link to the local directory; the segment is local" "$wal|1|0" \
        "$(readlink "$view/ndata/pg_wal")|$(find "$wal" -maxdepth 1 -size 16M | wc -l)|$(find "$view/ndata" -name '0000000*' | wc -l)"
    expect "local WAL: pg_ctl start" "${PG[@]}" "$PGBIN/pg_ctl" -D "$ndata" -l "$nlog" -o "$opts" -w -t 120 start
    PG_STARTED+=("$ndata")
    expect "local WAL: pgbench -i -s 2" runuser -u postgres -- "$PGBIN/pgbench" -q -h "$sock" -p 5432 -i -s 2 postgres
    "${PSQL[@]}" -c "CREATE TABLE ledger(id int PRIMARY KEY)" >/dev/null
    pg_kill_and_recover "local WAL: " "$ndata" "$view/ndata/postmaster.pid" "$nlog" "$opts" pgln
    check "local WAL: WAL segments made, recycled and renamed locally, none on the server" "yes|0" \
        "$( (($(find "$wal" -maxdepth 1 -size 16M | wc -l) >= 2)) && echo yes || echo no)|$(find "$view/ndata" -name '0000000*' | wc -l)"
    expect "local WAL: clean shutdown" "${PG[@]}" "$PGBIN/pg_ctl" -D "$ndata" -m fast -w -t 120 stop
    PG_STARTED=()
}

# The same in unstable mode (the dnfstab's $MNT-wb mount of the same
# export): UNSTABLE WRITEs, fdatasync/fsync COMMIT. Write-behind stays off
# (the library's default): with it on, a backend's WRITE still in flight is
# invisible to the other backends and pgbench fails with "unexpected data
# beyond EOF" — which the pgbench check here catches. Every check names
# the mode.
group_pgwb() {
    step "PostgreSQL 15 on NFS as the postgres user (unstable)"
    pg_cluster "$MNT-wb/$RUNID/pgwb" "$VIEW/pgwb" "unstable: "
}

# pg_cluster DIR VIEW LABEL: the PostgreSQL checks on a cluster in DIR (an
# NFS path; VIEW is the server's local view of it), check names prefixed
# by LABEL.
# MariaDB (Debian 12: 10.11), the other mainstream database: InnoDB writes
# through liburing or libaio by default, which the library refuses at
# set-up in a process it serves (ops/unsupported.rs): InnoDB falls back to
# its simulated AIO (pread/pwrite in threads), which is served.
my_start() { # DATA LOG [no-library]
    local pre=("${RUN[@]}")
    [[ ${3:-} == no-library ]] && pre=()
    # ANCHOR: my_start
    runuser -u mysql -- "${pre[@]}" mariadbd --no-defaults --datadir="$1" --socket="$WORK/mysock/my.sock" \
        --skip-networking --log-error="$2" --pid-file="$WORK/mysock/my.pid" \
        --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=64M >/dev/null 2>&1 &
    # ANCHOR_END: my_start
    MY_STARTED=$WORK/mysock/my.pid
    local i
    for i in $(seq 1 600); do
        mariadb-admin -S "$WORK/mysock/my.sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
my_sql() { mariadb -S "$WORK/mysock/my.sock" -uroot -N "$@"; }
# my_stop: shuts mariadbd down and waits until it has removed its pid
# file; the shutdown's status.
my_stop() {
    local rc=0 i
    # ANCHOR: my_stop
    mariadb-admin -S "$WORK/mysock/my.sock" -uroot shutdown || rc=$?
    # ANCHOR_END: my_stop
    for i in $(seq 1 300); do [[ -e $WORK/mysock/my.pid ]] || break; sleep 0.1; done
    MY_STARTED=
    return "$rc"
}

group_mariadb() {
    step "MariaDB on NFS as the mysql user (InnoDB with simulated AIO)"
    id mysql >/dev/null 2>&1 || { bad "mysql user" "missing (apt-get install mariadb-server)"; return; }
    local d=$NFS/my v=$VIEW/my
    mkdir -p "$WORK/mysock"
    chown mysql "$WORK/mysock"
    # ANCHOR: my_install
    nfs mkdir "$d"
    nfs chown mysql:mysql "$d"
    local out
    out=$(runuser -u mysql -- "${RUN[@]}" mariadb-install-db --no-defaults --datadir="$d/data" \
        --auth-root-authentication-method=normal --skip-test-db 2>&1) || { bad "mariadb-install-db" "$(tail -3 <<<"$out" | tr '\n' ' ')"; return; }
    # ANCHOR_END: my_install
    ok "mariadb-install-db into NFS"
    if [[ $out == *"refused (ENOSYS)"* && $out == *"falling back to innodb_use_native_aio=OFF"* ]]; then
        ok "kernel AIO refused at set-up, said; InnoDB falls back to simulated AIO"
    else
        bad "kernel AIO refusal" "$(grep -iE 'aio|uring|directnfs' <<<"$out" | head -3 | tr '\n' ' ')"
    fi
    check "no write bypassed the library" "" "$(grep 'did not reach the server' <<<"$out" || true)"
    my_start "$d/data" "$WORK/mysock/1.log" || { bad "mariadbd start" "$(tail -3 "$WORK/mysock/1.log" | tr '\n' ' ')"; return; }
    ok "mariadbd starts on NFS"
    my_sql -e "CREATE DATABASE t; CREATE TABLE t.ledger(id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB;
        CREATE TABLE t.bulk(id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB;"
    check "50k rows through InnoDB" "50000" "$(my_sql -e "SET SESSION max_recursive_iterations = 100000;
        INSERT INTO t.bulk(v) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
        SELECT REPEAT(CHAR(65 + i % 26), 100) FROM n; SELECT count(*) FROM t.bulk;")"

    # kill -9 of mariadbd while a client records each transaction it saw
    # committed (autocommit, innodb_flush_log_at_trx_commit=1).
    (for i in $(seq 1 1000000); do echo "INSERT INTO t.ledger VALUES ($i, 'x'); SELECT 'c $i';"; done) |
        my_sql >"$WORK/myledger.out" 2>&1 &
    local ledger=$!
    sleep 5
    local pid
    pid=$(cat "$WORK/mysock/my.pid")
    kill -9 "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null && ((waited < 300)); do sleep 0.1; waited=$((waited + 1)); done
    wait "$ledger" 2>/dev/null || true
    local committed
    committed=$(grep -c '^c ' "$WORK/myledger.out" || true)
    if ((committed > 50)); then ok "kill -9 during the workload ($committed ledger commits seen)"; else bad "ledger client" "only $committed commits: $(tail -2 "$WORK/myledger.out")"; fi
    my_start "$d/data" "$WORK/mysock/2.log" || { bad "mariadbd restart after kill -9" "$(tail -3 "$WORK/mysock/2.log" | tr '\n' ' ')"; return; }
    if grep -q "Starting crash recovery" "$WORK/mysock/2.log"; then ok "restart after kill -9: crash recovery"; else bad "crash recovery in the log" "$(tail -3 "$WORK/mysock/2.log")"; fi
    sed -n 's/^c //p' "$WORK/myledger.out" | sort -n >"$WORK/myseen"
    my_sql -e "SELECT id FROM t.ledger ORDER BY id" | sort -n >"$WORK/myhave"
    check "every transaction the client saw committed is present" "" "$(comm -23 "$WORK/myseen" "$WORK/myhave" | head -5 | tr '\n' ' ')"
    check "CHECK TABLE after recovery" "$(printf 't.bulk\tcheck\tstatus\tOK\nt.ledger\tcheck\tstatus\tOK')" \
        "$(my_sql -e "CHECK TABLE t.bulk, t.ledger")"
    local q="SELECT count(*), sum(length(v)) FROM t.bulk; SELECT count(*), max(id) FROM t.ledger;"
    local before
    before=$(my_sql -e "$q")
    # A hot backup into NFS and its prepare, both through the library.
    expect "mariadb-backup --backup into NFS" nfs mariadb-backup --backup --socket="$WORK/mysock/my.sock" \
        --user=root --datadir="$d/data" --target-dir="$d/backup"
    expect "mariadb-backup --prepare on NFS" nfs mariadb-backup --prepare --target-dir="$d/backup"
    chown -R mysql "$v/backup"
    expect "clean shutdown" my_stop
    check "no write bypassed the library (server logs)" "" "$(grep -h 'did not reach the server' "$WORK"/mysock/[12].log || true)"

    # The files directnfs wrote are a valid data directory: start it locally.
    my_start "$v/data" "$WORK/mysock/local.log" no-library || { bad "mariadbd on the server's local copy" "$(tail -3 "$WORK/mysock/local.log" | tr '\n' ' ')"; return; }
    ok "MariaDB starts on the server's local copy (no library)"
    check "the local copy answers the same queries" "$before" "$(my_sql -e "$q")"
    my_stop >/dev/null 2>&1 || true
    my_start "$v/backup" "$WORK/mysock/backup.log" no-library || { bad "mariadbd on the backup" "$(tail -3 "$WORK/mysock/backup.log" | tr '\n' ' ')"; return; }
    check "the backup, started without the library, answers the same" "$before" "$(my_sql -e "$q")"
    my_stop >/dev/null 2>&1 || true
}

# kill -9 of the postmaster and every backend while pgbench writes and a
# client records each transaction it saw committed into table ledger (which
# must exist); then the restart, crash recovery in the log, every
# transaction seen committed present, pg_amcheck clean. Uses the caller's
# PG, PSQL and sock. Arguments: check label prefix, data directory,
# postmaster.pid as this script can read it, server log, pg_ctl -o
# options, a tag naming the work files.
pg_kill_and_recover() {
    local L=$1 data=$2 pidfile=$3 log=$4 opts=$5 tag=$6
    runuser -u postgres -- "$PGBIN/pgbench" -h "$sock" -p 5432 -c 4 -j 2 -T 60 postgres >/dev/null 2>&1 &
    local bench=$!
    (for i in $(seq 1 1000000); do printf 'INSERT INTO ledger VALUES (%s);\n\\echo c %s\n' "$i" "$i"; done) |
        runuser -u postgres -- "$PGBIN/psql" -X -q -h "$sock" -p 5432 -v ON_ERROR_STOP=1 postgres >"$WORK/$tag-ledger.out" 2>&1 &
    local ledger=$!
    sleep 6
    local pm pids p waited=0
    pm=$(head -1 "$pidfile")
    pids="$pm $(ps -o pid= --ppid "$pm" | tr '\n' ' ')"
    # shellcheck disable=SC2086 # a list of PIDs, split on purpose
    kill -9 $pids 2>/dev/null || true
    for p in $pids; do
        while kill -0 "$p" 2>/dev/null && ((waited < 300)); do sleep 0.1; waited=$((waited + 1)); done
    done
    wait "$bench" 2>/dev/null || true
    wait "$ledger" 2>/dev/null || true
    local committed
    committed=$(grep -c '^c ' "$WORK/$tag-ledger.out" || true)
    if ((committed > 50)); then ok "${L}kill -9 during the workload ($committed ledger commits seen)"; else bad "${L}ledger client" "only $committed commits: $(tail -2 "$WORK/$tag-ledger.out")"; fi
    expect "${L}restart after kill -9: recovery completes" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 300 start
    if grep -q "database system was interrupted\|redo done" "$log"; then ok "${L}the log shows crash recovery"; else bad "${L}crash recovery in the log" "$(tail -3 "$log")"; fi
    sed -n 's/^c //p' "$WORK/$tag-ledger.out" | sort -n >"$WORK/$tag-seen"
    "${PSQL[@]}" -c "SELECT id FROM ledger ORDER BY id" | sort -n >"$WORK/$tag-have"
    check "${L}every transaction the client saw committed is present" "" "$(comm -23 "$WORK/$tag-seen" "$WORK/$tag-have" | head -5 | tr '\n' ' ')"
    expect "${L}pg_amcheck --all clean after recovery" runuser -u postgres -- "$PGBIN/pg_amcheck" -h "$sock" -p 5432 --all --install-missing
}

pg_cluster() {
    local dir=$1 view=$2 L=$3
    id postgres >/dev/null 2>&1 || { bad "${L}postgres user" "missing (apt-get install postgresql)"; return; }
    local data=$dir/data sock=$WORK/pgsock log=$WORK/${dir##*/}.log
    mkdir -p "$sock"
    chown postgres "$sock" "$WORK"
    # ANCHOR: pg_setup
    nfs mkdir "$dir"
    nfs chown postgres:postgres "$dir"
    local PG=(runuser -u postgres -- "${RUN[@]}")
    local PSQL=(runuser -u postgres -- "$PGBIN/psql" -X -q -At -h "$sock" -p 5432 postgres)
    local opts="-p 5432 -k $sock -c listen_addresses=''"
    # ANCHOR_END: pg_setup
    # ANCHOR: pg_start
    expect "${L}initdb -k (data checksums)" "${PG[@]}" "$PGBIN/initdb" -k -A trust -D "$data"
    check "${L}data directory on the server, owned by postgres" "postgres 700" "$(stat -c '%U %a' "$view/data")"
    expect "${L}pg_ctl start" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 120 start
    # ANCHOR_END: pg_start
    PG_STARTED+=("$data")
    expect "${L}pgbench -i -s 10" runuser -u postgres -- "$PGBIN/pgbench" -q -h "$sock" -p 5432 -i -s 10 postgres
    local secs=${DNFS_PRELOAD_PGBENCH_SECONDS:-10}
    if runuser -u postgres -- "$PGBIN/pgbench" -h "$sock" -p 5432 -c 8 -j 2 -T "$secs" postgres >"$WORK/pgbench" 2>&1 &&
        grep -q "number of failed transactions: 0" "$WORK/pgbench"; then
        ok "${L}pgbench -c 8 -j 2 -T $secs: $(grep -o 'tps = [0-9.]*' "$WORK/pgbench" | head -1), 0 failed"
    else
        bad "${L}pgbench -c 8 -j 2 -T $secs" "$(tail -3 "$WORK/pgbench" | tr '\n' ' ')"
    fi
    expect "${L}pg_amcheck --all clean" runuser -u postgres -- "$PGBIN/pg_amcheck" -h "$sock" -p 5432 --all --install-missing
    expect "${L}clean restart" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -m fast -w -t 120 restart
    "${PSQL[@]}" -c "CREATE TABLE ledger(id int PRIMARY KEY)" >/dev/null

    pg_kill_and_recover "$L" "$data" "$view/data/postmaster.pid" "$log" "$opts" pg
    local q="SELECT count(*), sum(abalance) FROM pgbench_accounts; SELECT count(*), max(id) FROM ledger;"
    local before
    before=$("${PSQL[@]}" -c "$q")
    # ANCHOR: pg_stop
    expect "${L}clean shutdown" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -m fast -w -t 120 stop
    # ANCHOR_END: pg_stop
    PG_STARTED=()

    # The files directnfs wrote are a valid cluster: start it locally.
    local local_data=$view/data
    expect "${L}PostgreSQL starts on the server's local copy (no library)" \
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$local_data" -l "$WORK/pg-local.log" -o "$opts" -w -t 120 start
    PG_STARTED+=("$local_data")
    check "${L}the local copy answers the same queries" "$before" "$("${PSQL[@]}" -c "$q")"
    expect "${L}pg_amcheck of the local copy" runuser -u postgres -- "$PGBIN/pg_amcheck" -h "$sock" -p 5432 --all
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$local_data" -m fast -w stop >/dev/null
    PG_STARTED=()
}

for g in "${GROUPS_TO_RUN[@]}"; do
    "group_$g"
done
echo "$pass passed, $fail failed"
((fail == 0))

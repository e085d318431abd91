#!/usr/bin/env bash
# pgcalls.sh — how many NFS calls PostgreSQL 15 makes through the
# interception library, per TPC-B transaction and per new backend
# (`pgbench -C`), by NFS procedure and by the libc call that made them.
# Counts, not times: repeatable on a busy machine.
#
#   DNFS_TEST_URL='nfs://127.0.0.1/export?nfsport=2049&mountport=20048' \
#   scripts/bench/pgcalls.sh
#
# Makes (or reuses) a cluster on the export under the dnfstab prefix
# /dnfs-pgcalls (`initdb -k`, `pgbench -i -s SCALE`), then, each time with
# a fresh start and DIRECTNFS_PRELOAD_STATS=calls (every process says at
# exit which libc calls made which NFS calls; crates/preload/src/tally.rs):
#   tpcb   pgbench -c 8 -j 2 -t TXNS (TPC-B, synchronous_commit on), then a
#          clean stop (its checkpoint is counted too)
#   conn   pgbench -C -S -c 8 -j 2 -t CONNS (a new backend per transaction)
# and prints, per transaction and per connection, the calls of the
# backends and of the other processes (checkpointer, WAL writer, ...),
# and the rate each run had: the boards' answers expire after
# DIRECTNFS_PRELOAD_TTL_MS (1 s), so at a low connection rate (a loaded
# machine) more of a new backend's opens ask the server again.
#
# Environment (all optional):
#   DNFS_PGCALLS_TXNS    TPC-B transactions per client (default 250)
#   DNFS_PGCALLS_CONNS   -C transactions (= connections) per client (default 50)
#   DNFS_PGCALLS_SCALE   pgbench scale (default 10)
#   DNFS_PGCALLS_MODE    dnfstab `stable:` (default file_sync)
#   DNFS_PGCALLS_FRESH=1 make the cluster again
#   DNFS_PGCALLS_CALLGRIND=1  (with DNFS_PGCALLS_CPU=1) also the user-space
#          instructions of one new backend, fork to exit (its one thread): each cluster's
#          postmaster run under valgrind --tool=callgrind, counters zeroed
#          at every fork (scripts/bench/lib/zero-at-fork.c), pgbench -C -S -t
#          DNFS_PGCALLS_CALLGRIND_CONNS (default 20) connections, the median
#          profile. Instructions are repeatable on a busy machine.
#   DNFS_PGCALLS_KEEP=1  keep the work directory (logs, the callgrind
#          profiles in cg-directnfs/ and cg-local/ for callgrind_annotate)
#   DNFS_PGCALLS_PORT    PostgreSQL's port (default 5491; the local cluster
#                        of DNFS_PGCALLS_CPU takes the next one)
#   DNFS_PGCALLS_DNFS    the `dnfs` binary (its interception library next
#                        to it), to compare two builds (default: this
#                        tree's, built)
#   DNFS_PGCALLS_CPU=1   also the CPU of a new backend: `pgbench -C -S -c 8
#          -j 2 -t CONNS` again without the statistics, on the directnfs
#          cluster and on a local one made the same way (in
#          DNFS_PGCALLS_LOCAL, default /var/tmp/dnfs-pgcalls-local, kept),
#          DNFS_PGCALLS_CPU_RUNS times each (default 3, interleaved): user
#          + system time per connection of PostgreSQL's processes (the
#          postmaster and its children, the backends reaped included),
#          pgbench's, and the NFS server's (DNFS_TEST_SERVER_PID, from its
#          /proc/PID/stat). CPU time, not wall time: it holds on a busy
#          machine far better than TPS, if not exactly (caches, frequency).
# Needs root (PostgreSQL runs as postgres through runuser) and PostgreSQL 15.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

: "${DNFS_TEST_URL:?pgcalls.sh needs DNFS_TEST_URL (scripts/server/nfs-server.sh start prints it)}"
TXNS=${DNFS_PGCALLS_TXNS:-250}
CONNS=${DNFS_PGCALLS_CONNS:-50}
SCALE=${DNFS_PGCALLS_SCALE:-10}
MODE=${DNFS_PGCALLS_MODE:-file_sync}
PGBIN=/usr/lib/postgresql/15/bin
MNT=/dnfs-pgcalls
DATA=$MNT/pgcalls/data
PORT=${DNFS_PGCALLS_PORT:-5491}
[[ $(id -u) == 0 ]] || { echo "pgcalls.sh: run as root" >&2; exit 1; }
[[ -x $PGBIN/postgres ]] || { echo "pgcalls.sh: PostgreSQL 15 is not installed" >&2; exit 1; }

# shellcheck source=scripts/bench/lib/preload.sh
. "$ROOT/scripts/bench/lib/preload.sh"

DNFS=$(dnfs_binary "${DNFS_PGCALLS_DNFS:-}")

WORK=$(mktemp -d /tmp/dnfs-pgcalls.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/sock"
chown postgres "$WORK/sock" "$WORK"
TAB=$WORK/dnfstab
dnfstab_for "$DNFS_TEST_URL" pgcalls "$MNT" "stable: $MODE" >"$TAB"
chmod 644 "$TAB"
RUN=("$DNFS" --config "$TAB" run --)
pg_ctl() { runuser -u postgres -- "${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA" "$@"; }
pgbench() { runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "$PORT" "$@" postgres; }
RUNNING=0
start() { # LOG
    pg_ctl -l "$1" -w -t 300 -o "-p $PORT -k $WORK/sock -c listen_addresses='' \
        -c shared_buffers=128MB -c max_connections=40 -c autovacuum=off \
        -c checkpoint_timeout=1h -c max_wal_size=4GB" start >/dev/null
    RUNNING=1
}
stop() {
    local i
    for i in 1 2 3 4 5; do
        pg_ctl -m fast -w -t 300 stop >/dev/null 2>&1 || true
        if ! pg_ctl status >/dev/null 2>&1; then
            RUNNING=0
            return 0
        fi
        sleep 1
    done
    echo "pgcalls.sh: cannot stop the cluster" >&2
    exit 1
}
LOCAL_UP=0
CG_PM=
cleanup() {
    if ((RUNNING)); then stop || true; fi
    if [[ -n $CG_PM ]]; then
        kill -INT "$(postmaster_pid "$CG_ENGINE" 2>/dev/null)" 2>/dev/null || true
        wait "$CG_PM" 2>/dev/null || true
    fi
    if ((LOCAL_UP)); then lpg_ctl -m fast -w -t 300 stop >/dev/null 2>&1 || true; fi
    if [[ ${DNFS_PGCALLS_KEEP:-} == 1 ]]; then
        echo "pgcalls.sh: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

if [[ ${DNFS_PGCALLS_FRESH:-} == 1 ]]; then "${RUN[@]}" rm -rf "$MNT/pgcalls"; fi
if [[ $("${RUN[@]}" sh -c "test -f $DATA/PG_VERSION && echo yes || true") != yes ]]; then
    echo "pgcalls.sh: initdb -k and pgbench -i -s $SCALE on $DATA" >&2
    "${RUN[@]}" sh -c "rm -rf $MNT/pgcalls && mkdir -p $MNT/pgcalls && chown postgres:postgres $MNT/pgcalls"
    runuser -u postgres -- "${RUN[@]}" "$PGBIN/initdb" -k -A trust -D "$DATA" >/dev/null
    start "$WORK/init.log"
    pgbench -q -i -s "$SCALE" >/dev/null 2>&1
    stop
fi

export DIRECTNFS_PRELOAD_STATS=calls
echo "pgcalls.sh: TPC-B, 8 clients x $TXNS transactions" >&2
start "$WORK/tpcb.log"
pgbench -c 8 -j 2 -t "$TXNS" >"$WORK/tpcb.out" 2>&1
stop
echo "pgcalls.sh: -C select-only, 8 clients x $CONNS connections" >&2
start "$WORK/conn.log"
pgbench -C -S -c 8 -j 2 -t "$CONNS" >"$WORK/conn.out" 2>&1
stop
unset DIRECTNFS_PRELOAD_STATS
if [[ ${DNFS_PGCALLS_CPU:-} == 1 ]]; then
    CPU_RUNS=${DNFS_PGCALLS_CPU_RUNS:-3}
    LOCAL=${DNFS_PGCALLS_LOCAL:-/var/tmp/dnfs-pgcalls-local}
    LDATA=$LOCAL/data
    LPORT=$((PORT + 1))
    lpg_ctl() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$LDATA" "$@"; }
    LOPTS="-p $LPORT -k $WORK/sock -c listen_addresses='' -c shared_buffers=128MB \
        -c max_connections=40 -c autovacuum=off -c checkpoint_timeout=1h -c max_wal_size=4GB"
    if [[ ! -f $LDATA/PG_VERSION ]]; then
        echo "pgcalls.sh: initdb -k and pgbench -i -s $SCALE on the local $LDATA" >&2
        rm -rf "$LOCAL"
        mkdir -p "$LOCAL"
        chown postgres:postgres "$LOCAL"
        runuser -u postgres -- "$PGBIN/initdb" -k -A trust -D "$LDATA" >/dev/null
        lpg_ctl -l "$WORK/local-init.log" -w -t 300 -o "$LOPTS" start >/dev/null
        runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "$LPORT" -q -i -s "$SCALE" postgres >/dev/null 2>&1
        lpg_ctl -m fast -w -t 300 stop >/dev/null
    fi
    start "$WORK/cpu.log"
    LOCAL_UP=1
    lpg_ctl -l "$WORK/local-cpu.log" -w -t 300 -o "$LOPTS" start >/dev/null
    nfs_pm=$(runuser -u postgres -- "${RUN[@]}" head -1 "$DATA/postmaster.pid")
    local_pm=$(head -1 "$LDATA/postmaster.pid")
    echo "pgcalls.sh: CPU of -C select-only, 8 clients x $CONNS connections, $CPU_RUNS x each" >&2
    for ((r = 1; r <= CPU_RUNS; r++)); do
        for engine in directnfs local; do
            if [[ $engine == directnfs ]]; then pm=$nfs_pm port=$PORT; else pm=$local_pm port=$LPORT; fi
            python3 "$ROOT/scripts/bench/lib/cpu_of_run.py" "$pm" "${DNFS_TEST_SERVER_PID:-}" \
                "$((8 * CONNS))" "$engine" runuser -u postgres -- "$PGBIN/pgbench" \
                -h "$WORK/sock" -p "$port" -C -S -c 8 -j 2 -t "$CONNS" postgres >>"$WORK/cpu.txt"
        done
    done
    lpg_ctl -m fast -w -t 300 stop >/dev/null
    LOCAL_UP=0
    stop
    python3 "$ROOT/scripts/bench/lib/cpu_of_run.py" --table "$WORK/cpu.txt" "${DNFS_TEST_SERVER_PID:-}"
fi
if [[ ${DNFS_PGCALLS_CALLGRIND:-} == 1 ]]; then
    [[ -f ${LDATA:-}/PG_VERSION ]] || { echo "pgcalls.sh: DNFS_PGCALLS_CALLGRIND needs DNFS_PGCALLS_CPU=1 (its local cluster)" >&2; exit 1; }
    CG_CONNS=${DNFS_PGCALLS_CALLGRIND_CONNS:-20}
    cc -O2 -Wall -Werror -shared -fPIC -o "$WORK/zero-at-fork.so" "$ROOT/scripts/bench/lib/zero-at-fork.c"
    chmod 755 "$WORK/zero-at-fork.so"
    echo "pgcalls.sh: instructions of a new backend under callgrind, $CG_CONNS -C connections each" >&2
    postmaster_pid() { # ENGINE
        if [[ $1 == directnfs ]]; then
            runuser -u postgres -- "${RUN[@]}" head -1 "$DATA/postmaster.pid"
        else
            head -1 "$LDATA/postmaster.pid"
        fi
    }
    for engine in directnfs local; do
        cg=$WORK/cg-$engine
        mkdir -p "$cg"
        chown postgres "$cg"
        if [[ $engine == directnfs ]]; then
            data=$DATA port=$PORT pre=("${RUN[@]}")
        else
            data=$LDATA port=$LPORT pre=()
        fi
        runuser -u postgres -- env LD_PRELOAD="$WORK/zero-at-fork.so" "${pre[@]}" \
            valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$cg/cg.%p" \
            "$PGBIN/postgres" -D "$data" -p "$port" -k "$WORK/sock" -c listen_addresses='' \
            -c shared_buffers=128MB -c max_connections=40 -c autovacuum=off \
            >"$WORK/cg-$engine.log" 2>&1 &
        pm=$!
        CG_PM=$pm CG_ENGINE=$engine
        for ((i = 0; i < 600; i++)); do
            "$PGBIN/pg_isready" -q -h "$WORK/sock" -p "$port" && break
            sleep 0.5
        done
        runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "$port" -C -S -c 1 -j 1 \
            -t "$CG_CONNS" postgres >"$WORK/cg-$engine.out" 2>&1 ||
            { cat "$WORK/cg-$engine.out" >&2; exit 1; }
        # SIGINT to the postmaster (runuser does not pass it on): the fast
        # shutdown; the profiles are written at exit.
        kill -INT "$(postmaster_pid "$engine")"
        wait "$pm" || true
        CG_PM=
    done
    python3 - "$WORK" "$CG_CONNS" <<'EOF'
import glob, re, statistics, sys
print("\nUser-space instructions of one -C connection's backend, fork to exit"
      " (callgrind; the median over every child of the postmaster):")
print("| cluster | instructions | children profiled |")
print("|---|---|---|")
for engine in ("directnfs", "local"):
    totals = []
    # Thread 1 of each process: the backend (which starts no thread);
    # the other files hold what the postmaster's threads did between the
    # zeroing and the fork.
    for f in glob.glob(f"{sys.argv[1]}/cg-{engine}/cg.*-01"):
        m = re.search(r"^totals: (\d+)", open(f, errors="replace").read(), re.M)
        if m:
            totals.append(int(m.group(1)))
    # Backends outnumber the other processes (the postmaster, whose
    # counters are zeroed at each fork, the checkpointer, the writers, the
    # launcher), so the median is a backend's.
    print(f"| {engine} | {statistics.median(totals):,.0f} | {len(totals)} |"
          if totals else f"| {engine} | - | 0 |")
EOF
fi
grep -q "number of transactions actually processed: $((8 * TXNS))/" "$WORK/tpcb.out" ||
    { cat "$WORK/tpcb.out" >&2; echo "pgcalls.sh: TPC-B run incomplete" >&2; exit 1; }
grep -q "number of transactions actually processed: $((8 * CONNS))/" "$WORK/conn.out" ||
    { cat "$WORK/conn.out" >&2; echo "pgcalls.sh: -C run incomplete" >&2; exit 1; }

# How fast it went (not a result: for reading the counts: a board's
# answer expires after DIRECTNFS_PRELOAD_TTL_MS, 1 s, so the slower new
# backends come, the more of their calls ask the server again).
for run in tpcb conn; do
    echo "$run: $(grep -E '^tps = ' "$WORK/$run.out" | head -1)"
done
python3 - "$WORK/tpcb.log" $((8 * TXNS)) "$WORK/conn.log" $((8 * CONNS)) "$MNT" <<'EOF'
import collections, re, sys

def parse(log, prefix):
    """Per pid: title, NFS totals, {libc call: (count, {proc: n})}."""
    procs = collections.defaultdict(lambda: {"title": "", "totals": {}, "libc": {}})
    line_re = re.compile(r"directnfs\[(\d+)\]: (.*)")
    for line in open(log, errors="replace"):
        m = line_re.search(line)
        if not m:
            continue
        pid, text = m.group(1), m.group(2)
        p = procs[pid]
        if text.startswith("process: "):
            p["title"] = text[len("process: "):]
        elif text.startswith(f"calls for {prefix}: "):
            p["totals"] = dict(kv.split("=") for kv in text.split(": ", 1)[1].split())
        elif text.startswith("by libc call: "):
            head, _, calls = text[len("by libc call: "):].partition(": ")
            name, _, n = head.rpartition(" x")
            p["libc"][name] = (int(n), dict(kv.split("=") for kv in calls.split()))
    return procs

def is_backend(title):
    return title.startswith("postgres: postgres postgres")

def kind(title):
    if is_backend(title):
        return "backends"
    m = re.match(r"postgres: (.*)", title)
    return m.group(1).strip() if m else "postmaster"

def table(procs, per, what):
    groups = collections.defaultdict(collections.Counter)
    libc = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for p in procs.values():
        k = kind(p["title"])
        for proc_, n in p["totals"].items():
            groups[k][proc_] += int(n)
        for name, (n, calls) in p["libc"].items():
            libc[k][name]["(calls)"] += n
            for proc_, c in calls.items():
                libc[k][name][proc_] += int(c)
    print(f"\nNFS calls per {what} ({per} in the run), by process:")
    names = sorted({q for g in groups.values() for q in g})
    print("| process | " + " | ".join(names) + " | total |")
    print("|---" * (len(names) + 2) + "|")
    for k in sorted(groups):
        g = groups[k]
        print(f"| {k} | " + " | ".join(f"{g[q] / per:.2f}" for q in names)
              + f" | {sum(g.values()) / per:.2f} |")
    print(f"\nby libc call (per {what}; calls = how often the libc call was served):")
    print("| process | libc call | calls | NFS calls |")
    print("|---|---|---|---|")
    for k in sorted(libc):
        for name, c in sorted(libc[k].items(), key=lambda kv: -kv[1]["(calls)"]):
            nfs = " ".join(f"{q}={v / per:.2f}" for q, v in sorted(c.items()) if q != "(calls)")
            print(f"| {k} | {name} | {c['(calls)'] / per:.2f} | {nfs or '-'} |")

tpcb_log, txns, conn_log, conns, prefix = sys.argv[1:]
table(parse(tpcb_log, prefix), int(txns), "TPC-B transaction")
table(parse(conn_log, prefix), int(conns), "-C connection")
EOF

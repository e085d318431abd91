#!/usr/bin/env bash
# pgbench.sh — PostgreSQL 15 on directnfs (unmodified, through `dnfs run`
# and the interception library) side by side with the same cluster on the
# local file system, then fio through the library side by side with
# `dnfs bench` on the same sessions and depth.
#
#   scripts/bench/pgbench.sh   install what is missing, build, start a local
#                              NFS-Ganesha, make the two clusters, run each
#                              workload on both (interleaved, medians of the
#                              repeats), print the tables and write them to
#                              bench-results/pgbench.md (+ .json), stop what
#                              it started. Beside the rates: the CPU each
#                              transaction cost PostgreSQL's processes and
#                              the server, which shares the cores here.
#
# The directnfs side runs in each mode of DNFS_PGBENCH_MODES: `file_sync`
# (the dnfstab default: every WRITE is FILE_SYNC) and `unstable`
# (`stable: unstable`: UNSTABLE WRITEs, `fsync`/`fdatasync` COMMIT). Each
# mode has its own cluster on the export, so all of them and the local one
# run side by side, interleaved. Write-behind stays off, the interception
# library's default: with it, one backend's WRITE still in flight is
# invisible to the others (pgbench stops on "unexpected data beyond EOF");
# DNFS_PGBENCH_WRITE_BEHIND=1 turns it on anyway, to see that.
#
# Workloads (the same settings on every cluster):
#   TPC-B        pgbench -c 8 -j 2 -T S, synchronous_commit on, shared_buffers 128MB
#   select-only  pgbench -S -c 8 -j 2 -T S, shared_buffers 16MB (scale 10 is
#                ~160 MB: reads reach storage)
#   -C           pgbench -C -S -c 8 -j 2 -T S: a new backend per transaction
#                (what a process's first NFS calls cost)
#   fio          psync random 8 KiB reads (and 75/25 read/write), 4 jobs,
#                through the library, vs dnfs bench oltp with 4 sessions at
#                queue depth 1 on the same file
#
# About 22 minutes with the defaults. Environment (all optional):
#   DNFS_PGBENCH_SECONDS   seconds per run (default 30)
#   DNFS_PGBENCH_REPEATS   runs per engine and workload, interleaved (default 3)
#   DNFS_PGBENCH_SCALE     pgbench scale (default 10)
#   DNFS_PGBENCH_CONNECTIONS  connections per process (dnfstab `connections:`, default 1)
#   DNFS_PGBENCH_MODES     directnfs modes to run (default "file_sync unstable";
#                          one of them alone for a shorter run)
#   DNFS_PGBENCH_WRITE_BEHIND=1  unstable mode with write-behind (unsafe for
#                          PostgreSQL, see above)
#   DNFS_PGBENCH_OUT       results directory (default bench-results)
#   DNFS_PGBENCH_EXPORT    exported directory (default /tmp/dnfs-pgbench-export)
#   DNFS_PGBENCH_LOCAL     the local cluster's parent directory (default /var/tmp/dnfs-pgbench-local)
#   DNFS_PGBENCH_KEEP=1    keep both clusters afterwards (they are reused next time)
#   DNFS_PGBENCH_SKIP_FIO=1  only the pgbench part
#   DNFS_PGBENCH_WORKLOADS which pgbench workloads (default "tpcb select connect")
#   DNFS_PGBENCH_CPUS      "shared" (default): the server, PostgreSQL and pgbench
#                          share every core. "split": the server's threads run
#                          on the last core only, and everything on the
#                          database's side (both clusters, pgbench, fio, dnfs
#                          bench) on the others, as a NAS has CPUs of its own:
#                          both clusters get the same cores, and the server's
#                          CPU no longer comes out of the database's
#                          (`taskset`; needs 2 cores or more)
#   DNFS_STATE_DIR, DNFS_NFS_PORT, DNFS_MNT_PORT: passed to nfs-server.sh
#                          (state dir default here: /tmp/dnfs-pgbench-server)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

SECS=${DNFS_PGBENCH_SECONDS:-30}
REPEATS=${DNFS_PGBENCH_REPEATS:-3}
SCALE=${DNFS_PGBENCH_SCALE:-10}
CONNS=${DNFS_PGBENCH_CONNECTIONS:-1}
read -r -a MODES <<<"${DNFS_PGBENCH_MODES:-file_sync unstable}"
if [[ ${DNFS_PGBENCH_WRITE_BEHIND:-} == 1 ]]; then export DIRECTNFS_PRELOAD_WRITE_BEHIND=1; fi
OUT=${DNFS_PGBENCH_OUT:-bench-results}
EXPORT=${DNFS_PGBENCH_EXPORT:-/tmp/dnfs-pgbench-export}
LOCAL=${DNFS_PGBENCH_LOCAL:-/var/tmp/dnfs-pgbench-local}
export DNFS_STATE_DIR=${DNFS_STATE_DIR:-/tmp/dnfs-pgbench-server}
PGBIN=/usr/lib/postgresql/15/bin
MNT=/dnfs-pgbench

# shellcheck source=scripts/bench/lib/preload.sh
. "$ROOT/scripts/bench/lib/preload.sh"
# shellcheck source=scripts/lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'pgbench.sh: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (PostgreSQL runs as the postgres user through runuser)"
((${#MODES[@]})) || die "DNFS_PGBENCH_MODES is empty"
for m in "${MODES[@]}"; do
    [[ $m == file_sync || $m == unstable ]] || die "DNFS_PGBENCH_MODES: unknown mode $m (file_sync or unstable)"
done
CPUS=${DNFS_PGBENCH_CPUS:-shared}
NCPU=$(nproc)
DB=() # the prefix of every command of the database's side
case $CPUS in
shared) ;;
split)
    ((NCPU >= 2)) || die "DNFS_PGBENCH_CPUS=split needs 2 cores or more (this machine has $NCPU)"
    SRV_CPU=$((NCPU - 1))
    DB_CPUS=0-$((NCPU - 2))
    DB=(taskset -c "$DB_CPUS")
    ;;
*) die "DNFS_PGBENCH_CPUS: unknown value $CPUS (shared or split)" ;;
esac

# --- packages, build, server ----------------------------------------------------
missing=()
command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs rpcbind)
command -v fio >/dev/null || missing+=(fio)
want_postgresql "$PGBIN"
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt_install_quiet "${missing[@]}"
fi
say "building (release)"
cargo build --release -p directnfs-cli -p directnfs-preload
DNFS=$ROOT/target/release/dnfs

nfs_server_up "$EXPORT"
chmod 755 "$EXPORT"
SRVPID=$(cat "$DNFS_STATE_DIR/ganesha.pid")
if [[ $CPUS == split ]]; then
    # Every thread of the server; the threads it starts later inherit it.
    taskset -a -p -c "$SRV_CPU" "$SRVPID" >/dev/null
    say "cores: the server on $SRV_CPU, PostgreSQL, pgbench, fio and dnfs bench on $DB_CPUS"
fi
rest=/${URL#nfs://*/}
export_path=${rest%%\?*}
nfsport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$URL")
mountport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$URL")

WORK=$(mktemp -d /tmp/dnfs-pgbench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/sock" "$WORK/log" "$OUT"
chown postgres "$WORK/sock" "$WORK/log"
# One dnfstab per mode, the same server and export.
declare -A TABS
for m in "${MODES[@]}"; do
    TABS[$m]=$WORK/dnfstab.$m
    cat >"${TABS[$m]}" <<EOF
server: pgbench
path: 127.0.0.1
port: $nfsport
mount_port: $mountport
connections: $CONNS
stable: $m
export: $export_path mount: $MNT
EOF
    chmod 644 "${TABS[$m]}"
done
TAB=${TABS[${MODES[0]}]}
RUN=("$DNFS" --config "$TAB" run --)

# Engines: nfs (file_sync), nfswb (unstable), local.
declare -A DATA=([nfs]=$MNT/pg/data [nfswb]=$MNT/pgwb/data [local]=$LOCAL/pg/data)
declare -A PORT=([nfs]=5433 [nfswb]=5435 [local]=5434)
declare -A MODE_OF=([nfs]=file_sync [nfswb]=unstable)
declare -A LABEL=([nfs]="file_sync" [nfswb]="unstable")
if [[ ${DNFS_PGBENCH_WRITE_BEHIND:-} == 1 ]]; then LABEL[nfswb]="unstable + write-behind"; fi
ENGINES=()
for e in nfs nfswb; do
    for m in "${MODES[@]}"; do
        if [[ $m == "${MODE_OF[$e]}" ]]; then ENGINES+=("$e"); fi
    done
done
NFS_ENGINES=("${ENGINES[@]}")
ENGINES+=(local)
RUNNING=()
pg_ctl() { # ENGINE ARGS...
    local e=$1
    shift
    if [[ $e == local ]]; then
        "${DB[@]}" runuser -u postgres -- "$PGBIN/pg_ctl" -D "${DATA[$e]}" "$@"
    else
        "${DB[@]}" runuser -u postgres -- "$DNFS" --config "${TABS[${MODE_OF[$e]}]}" run -- "$PGBIN/pg_ctl" -D "${DATA[$e]}" "$@"
    fi
}
start_pg() { # ENGINE SHARED_BUFFERS
    pg_ctl "$1" -l "$WORK/log/$1.log" -w -t 300 \
        -o "-p ${PORT[$1]} -k $WORK/sock -c listen_addresses='' -c shared_buffers=$2 -c max_connections=40" start >/dev/null
    RUNNING+=("$1")
}
# pg_ctl polls postmaster.pid while the postmaster removes it; a read of a
# file removed by a process of another host fails (docs/book/src/run/deviations.md: ESTALE),
# which pg_ctl reports as "invalid data in PID file" (processes of one host
# keep it since the host-wide silly rename): ask again until it is gone.
stop_pg() {
    for _ in 1 2 3 4 5; do
        pg_ctl "$1" -m fast -w -t 300 stop >/dev/null 2>&1 || true
        pg_ctl "$1" status >/dev/null 2>&1 || return 0
        sleep 1
    done
    die "cannot stop the $1 cluster"
}
cleanup() {
    local e
    for e in "${RUNNING[@]}"; do stop_pg "$e" 2>/dev/null || true; done
    if [[ ${DNFS_PGBENCH_KEEP:-} != 1 ]]; then
        "${RUN[@]}" rm -rf "$MNT/pg" "$MNT/pgwb" 2>/dev/null || true
        rm -rf "$LOCAL"
    fi
    rm -rf "$WORK"
    if ((STARTED)); then
        bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    elif [[ $CPUS == split ]]; then
        taskset -a -p -c "0-$((NCPU - 1))" "$SRVPID" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
pgbench() { # ENGINE ARGS...
    local e=$1
    shift
    "${DB[@]}" runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "${PORT[$e]}" "$@" postgres
}

# --- the clusters ----------------------------------------------------------------------
for e in "${ENGINES[@]}"; do
    if [[ $e != local ]]; then
        dir=$(dirname "${DATA[$e]}")
        "${RUN[@]}" sh -c "mkdir -p $dir && chown postgres:postgres $dir"
        exists=$("${RUN[@]}" sh -c "test -f ${DATA[$e]}/PG_VERSION && echo yes || true")
    else
        mkdir -p "$LOCAL/pg"
        chown postgres:postgres "$LOCAL" "$LOCAL/pg"
        exists=
        if [[ -f ${DATA[local]}/PG_VERSION ]]; then exists=yes; fi
    fi
    if [[ $exists != yes ]]; then
        say "initdb -k ($e) and pgbench -i -s $SCALE"
        if [[ $e != local ]]; then
            runuser -u postgres -- "$DNFS" --config "${TABS[${MODE_OF[$e]}]}" run -- \
                "$PGBIN/initdb" -k -A trust -D "${DATA[$e]}" >/dev/null
        else
            runuser -u postgres -- "$PGBIN/initdb" -k -A trust -D "${DATA[$e]}" >/dev/null
        fi
        start_pg "$e" 128MB
        pgbench "$e" -q -i -s "$SCALE" >/dev/null 2>&1
        stop_pg "$e"
        RUNNING=()
    fi
done

# --- CPU per transaction --------------------------------------------------------------------
# On this machine the server shares the cores with PostgreSQL, so what a
# transaction costs in CPU, and where, says more than its rate alone. A
# cluster's CPU is its postmaster's and every live child's (user +
# system) plus what the postmaster reaped (the backends that ended); the
# server's is every thread of the Ganesha process. Kernel threads (the
# file system's journal, the disk's completions) are in neither.
postmaster_pid() { # ENGINE
    local data=${DATA[$1]}
    [[ $1 == local ]] || data=$EXPORT${data#"$MNT"}
    head -1 "$data/postmaster.pid"
}
cpu_now() { # POSTMASTER_PID: "POSTGRESQL_US SERVER_US", the CPU so far
    python3 "$ROOT/scripts/bench/lib/cpu_of_run.py" --now "$1" "$SRVPID"
}

# --- pgbench, interleaved ----------------------------------------------------------------
declare -A TPS CONN CPU_PG CPU_SRV
run_workload() { # NAME SHARED_BUFFERS PGBENCH_ARGS...
    local name=$1 sb=$2 r e out
    shift 2
    say "$name: pgbench $* -T $SECS, shared_buffers $sb, $REPEATS x each of ${ENGINES[*]}"
    for e in "${ENGINES[@]}"; do start_pg "$e" "$sb"; done
    for ((r = 1; r <= REPEATS; r++)); do
        for e in "${ENGINES[@]}"; do
            pm=$(postmaster_pid "$e")
            read -r pg0 srv0 < <(cpu_now "$pm")
            out=$(pgbench "$e" "$@" -T "$SECS" 2>&1)
            sleep 0.5 # the last backends end and are reaped
            read -r pg1 srv1 < <(cpu_now "$pm")
            n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
            TPS[$name,$e]+="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1) "
            CONN[$name,$e]+="$(sed -n 's/^average connection time = \([0-9.]*\) ms/\1/p' <<<"$out" | head -1) "
            cpu="no transactions"
            if [[ -n $n ]] && ((n > 0)); then
                pg=$(((pg1 - pg0) / n))
                srv=$(((srv1 - srv0) / n))
                CPU_PG[$name,$e]+="$pg "
                CPU_SRV[$name,$e]+="$srv "
                cpu="PostgreSQL $pg us, server $srv us"
            fi
            echo "  run $r $e: $(grep -E '^tps' <<<"$out" | head -1); CPU per transaction: $cpu" >&2
        done
    done
    for e in "${ENGINES[@]}"; do stop_pg "$e"; done
    RUNNING=()
}
read -r -a WORKLOADS <<<"${DNFS_PGBENCH_WORKLOADS:-tpcb select connect}"
for w in "${WORKLOADS[@]}"; do
    case $w in
    tpcb) run_workload tpcb 128MB -c 8 -j 2 ;;
    select) run_workload select 16MB -S -c 8 -j 2 ;;
    connect) run_workload connect 128MB -C -S -c 8 -j 2 ;;
    *) die "DNFS_PGBENCH_WORKLOADS: unknown workload $w (tpcb, select or connect)" ;;
    esac
done

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:] if x]; print(f"{statistics.median(v):.1f}" if v else "-")' "$@"; }
ratio() { python3 -c 'import sys; a,b=sys.argv[1:]; print(f"{float(a)/float(b):.2f}x" if a not in "-" and b not in "-" and float(b) else "-")' "$1" "$2"; }

# --- fio through the library vs dnfs bench ----------------------------------------------------
declare -A IOPS
if [[ ${DNFS_PGBENCH_SKIP_FIO:-} != 1 ]]; then
    file=$MNT/fio-bench.dat
    say "fio (psync, 4 jobs) vs dnfs bench oltp (4 sessions x 1) on $file, ${SECS}s, $REPEATS x each"
    "$DNFS" --config "$TAB" bench oltp --target "$file" --size 1g --engine directnfs --sessions 4 \
        --queue-depth 1 --duration 1 --warmup 0 --quiet >/dev/null
    for mix in 0 25; do
        for ((r = 1; r <= REPEATS; r++)); do
            "${DB[@]}" "$DNFS" --config "$TAB" bench oltp --target "$file" --size 1g --engine directnfs \
                --sessions 4 --queue-depth 1 --connections "$CONNS" --write-pct $mix \
                --duration "$SECS" --warmup 2 --quiet --json "$WORK/bench.json" >/dev/null
            IOPS[bench,$mix]+="$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["runs"][0]["iops"]))' "$WORK/bench.json") "
            rw=randread
            ((mix > 0)) && rw=randrw
            "${DB[@]}" "${RUN[@]}" fio --name=fio --filename="$file" --size=1g --bs=8k --rw=$rw \
                --rwmixread=$((100 - mix)) --ioengine=psync --numjobs=4 --time_based \
                --runtime="$SECS" --ramp_time=2 --group_reporting --output-format=json \
                >"$WORK/fio.json" 2>/dev/null
            IOPS[fio,$mix]+="$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))' "$WORK/fio.json") "
            echo "  run $r (${mix}% writes): dnfs bench $(awk '{print $NF}' <<<"${IOPS[bench,$mix]}") IOPS, fio $(awk '{print $NF}' <<<"${IOPS[fio,$mix]}") IOPS" >&2
        done
    done
    "${RUN[@]}" rm -f "$file"
fi

# --- the tables --------------------------------------------------------------------------
# TPS, CONN, CPU_PG, CPU_SRV and IOPS hold space-separated lists of numbers:
# median takes them as its arguments, split on purpose.
# shellcheck disable=SC2086
{
    echo "PostgreSQL 15, pgbench scale $SCALE, -T $SECS, median of $REPEATS interleaved runs;"
    echo "the same settings on every cluster; directnfs through \`dnfs run\` ($CONNS connection(s) per process)."
    if [[ $CPUS == split ]]; then
        echo "Cores split: the server on core $SRV_CPU, PostgreSQL and pgbench on $DB_CPUS (DNFS_PGBENCH_CPUS=split)."
    else
        echo "Cores shared: the server, PostgreSQL and pgbench on all $NCPU."
    fi
    echo
    echo "| workload | directnfs mode | directnfs TPS | local FS TPS | directnfs / local |"
    echo "|---|---|---|---|---|"
    for w in "${WORKLOADS[@]}"; do
        case $w in
            tpcb) label="TPC-B, 8 clients, synchronous_commit on" ;;
            select) label="select-only, 8 clients, shared_buffers 16MB" ;;
            connect) label="-C select-only (a new backend per transaction)" ;;
        esac
        l=$(median ${TPS[$w,local]})
        for e in "${NFS_ENGINES[@]}"; do
            n=$(median ${TPS[$w,$e]})
            echo "| $label | ${LABEL[$e]} | $n | $l | $(ratio "$n" "$l") |"
        done
    done
    if [[ " ${WORKLOADS[*]} " == *" connect "* ]]; then
        l=$(median ${CONN[connect,local]})
        for e in "${NFS_ENGINES[@]}"; do
            n=$(median ${CONN[connect,$e]})
            echo "| -C: average connection time (ms) | ${LABEL[$e]} | $n | $l | $(ratio "$n" "$l") |"
        done
    fi
    echo
    echo "CPU per transaction (us, medians; user + system): PostgreSQL is the cluster's processes, the server"
    echo "Ganesha's (it shares the cores here; kernel threads such as the file system's journal are in neither):"
    echo
    echo "| workload | directnfs mode | directnfs: PostgreSQL | directnfs: server | directnfs: both | local FS: PostgreSQL | both / local |"
    echo "|---|---|---|---|---|---|---|"
    for w in "${WORKLOADS[@]}"; do
        l=$(median ${CPU_PG[$w,local]:-})
        for e in "${NFS_ENGINES[@]}"; do
            p=$(median ${CPU_PG[$w,$e]:-})
            v=$(median ${CPU_SRV[$w,$e]:-})
            b=$(python3 -c 'import sys; a,b=sys.argv[1:]; print("-" if "-" in (a,b) else f"{float(a)+float(b):.1f}")' "$p" "$v")
            echo "| $w | ${LABEL[$e]} | $p | $v | $b | $l | $(ratio "$b" "$l") |"
        done
    done
    if [[ ${DNFS_PGBENCH_SKIP_FIO:-} != 1 ]]; then
        echo
        echo "fio through the library vs \`dnfs bench oltp\`, random 8 KiB, 4 sessions (fio: 4 psync jobs) at queue depth 1, same file:"
        echo
        echo "| workload | fio via dnfs run (IOPS) | dnfs bench (IOPS) | fio / dnfs bench |"
        echo "|---|---|---|---|"
        for mix in 0 25; do
            f=$(median ${IOPS[fio,$mix]})
            b=$(median ${IOPS[bench,$mix]})
            echo "| ${mix}% writes | $f | $b | $(ratio "$f" "$b") |"
        done
    fi
} | tee "$OUT/pgbench.md"
python3 - "$OUT/pgbench.json" <<EOF
import json, sys
tps = {$(for k in "${!TPS[@]}"; do printf '"%s": "%s", ' "$k" "${TPS[$k]}"; done)}
conn = {$(for k in "${!CONN[@]}"; do printf '"%s": "%s", ' "$k" "${CONN[$k]}"; done)}
cpu_pg = {$(for k in "${!CPU_PG[@]}"; do printf '"%s": "%s", ' "$k" "${CPU_PG[$k]}"; done)}
cpu_srv = {$(for k in "${!CPU_SRV[@]}"; do printf '"%s": "%s", ' "$k" "${CPU_SRV[$k]}"; done)}
iops = {$(for k in "${!IOPS[@]}"; do printf '"%s": "%s", ' "$k" "${IOPS[$k]}"; done)}
num = lambda d: {k: [float(x) for x in v.split()] for k, v in d.items()}
json.dump({"seconds": $SECS, "repeats": $REPEATS, "scale": $SCALE, "connections": $CONNS, "cpus": "$CPUS",
           "modes": "${MODES[*]}".split(),
           "tps": num(tps), "connection_ms": num(conn),
           "cpu_us_per_transaction": {"postgresql": num(cpu_pg), "server": num(cpu_srv)}, "fio_vs_bench_iops": num(iops),
           "server_pid": $SRVPID}, open(sys.argv[1], "w"), indent=1)
EOF
echo "(written to $OUT/pgbench.md and $OUT/pgbench.json)" >&2

#!/usr/bin/env bash
# pgbench-backup.sh — TPC-B latency of PostgreSQL 15 through `dnfs run`,
# alone and with a concurrent `pg_basebackup` (through `dnfs run` too, to a
# directory on the same mount, one backup after the other until pgbench
# ends), each with I/O classes on and off: does the log lane keep a
# commit's WAL write out of the backup's way when they are in different
# processes?
#
#   scripts/bench/pgbench-backup.sh [-T SECONDS] [-n PASSES] [-s SCALE]
#   scripts/bench/pgbench-backup.sh --smoke     -T 3 -n 1 -s 1: that it runs
#
# One server (the one of $DNFS_STATE_DIR if it runs, else one started on
# the export and stopped at the end), one cluster: initdb, pgbench -i -s
# SCALE, then per pass and per mode (`on`, `off`; the order alternates
# from pass to pass) the cluster is started with that mode's dnfstab and
# pgbench -c 4 -j 2 -T SECONDS runs twice: alone, then with the backup
# loop, each after a CHECKPOINT. The two dnfstabs differ only in
# `io_classes: off`; both have
#   connections: 2 (a log lane per path; DNFS_PGBB_CONNECTIONS)
#   log_files: */pg_wal/*   data_files: */base/*   bulk_files: MOUNT/backup/*
# Every process reports its reads and writes per class at exit
# (DIRECTNFS_PRELOAD_STATS=1): the script counts the processes that did
# log-class I/O, bulk-class I/O and both.
#
# Prints one side-by-side table (medians over the passes): TPS, latency
# average, p50, p99 and p99.9 (pgbench -l, every transaction), the WAL
# writes' p50 and p99 (the log class's writes of every process, from two
# `dnfs stats --json` taken 1 s into the run and 1 s before its end), backups
# completed and the backup's MB/s (bytes written to the mount, the last,
# cut off one included), and the NFS server's CPU and run-queue wait
# (threads waiting for a CPU on average, /proc/PID/task/*/schedstat).
# Writes it to bench-results/pgbench-backup.md (+ the raw runs, .runs).
# About 5 minutes at the defaults (-T 30 -n 1 -s 5); each more pass adds
# 4 x SECONDS plus two restarts.
#
# Environment (all optional):
#   DNFS_PGBB_CONNECTIONS  connections per process (default 2: the lane needs 2)
#   DNFS_PGBB_PG_PORT      PostgreSQL's port (default 5437)
#   DNFS_PGBB_EXPORT       exported directory (default /tmp/dnfs-pgbb-export)
#   DNFS_PGBB_OUT          results directory (default bench-results)
#   DNFS_PGBB_KEEP=1       keep the cluster, the postmaster's and the backups' logs
#   DNFS_PGBB_DNFS         a `dnfs` binary (its library next to it) instead
#                          of this tree's release build, built now
#   DNFS_STATE_DIR, DNFS_NFS_PORT, DNFS_MNT_PORT: passed to nfs-server.sh
#                          (state dir default here: /tmp/dnfs-pgbb-server)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

SECS=30
PASSES=1
SCALE=5
usage() { sed -n '9,10p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }
while (($#)); do
    case $1 in
    -T) SECS=${2:?}; shift 2 ;;
    -n) PASSES=${2:?}; shift 2 ;;
    -s) SCALE=${2:?}; shift 2 ;;
    --smoke) SECS=3 PASSES=1 SCALE=1; shift ;;
    *) usage ;;
    esac
done
[[ $SECS =~ ^[1-9][0-9]*$ && $PASSES =~ ^[1-9][0-9]*$ && $SCALE =~ ^[1-9][0-9]*$ ]] ||
    { echo "pgbench-backup.sh: -T, -n and -s take positive integers" >&2; exit 2; }
CONNS=${DNFS_PGBB_CONNECTIONS:-2}
PGPORT=${DNFS_PGBB_PG_PORT:-5437}
EXPORT=${DNFS_PGBB_EXPORT:-/tmp/dnfs-pgbb-export}
OUT=${DNFS_PGBB_OUT:-bench-results}
export DNFS_STATE_DIR=${DNFS_STATE_DIR:-/tmp/dnfs-pgbb-server}
PGBIN=/usr/lib/postgresql/15/bin
MNT=/dnfs-pgbb
PY=$ROOT/scripts/bench/lib/pgbench_backup.py

# shellcheck source=scripts/bench/lib/preload.sh
. "$ROOT/scripts/bench/lib/preload.sh"
# shellcheck source=scripts/lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"
say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'pgbench-backup.sh: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (PostgreSQL runs as the postgres user through runuser)"

missing=()
command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs rpcbind)
want_postgresql "$PGBIN"
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt_install_quiet "${missing[@]}"
fi
DNFS=$(dnfs_binary "${DNFS_PGBB_DNFS:-}")

nfs_server_up "$EXPORT"
chmod 755 "$EXPORT"
SRVPID=$(cat "$DNFS_STATE_DIR/ganesha.pid")
rest=/${URL#nfs://*/}
EXPORT_PATH=${rest%%\?*} # the path clients mount, as `dnfs stats` names it

WORK=$(mktemp -d /tmp/dnfs-pgbb.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/sock" "$WORK/log" "$WORK/txn" "$OUT"
chown postgres "$WORK/sock" "$WORK/log" "$WORK/txn"
declare -A TAB=([on]=$WORK/dnfstab.on [off]=$WORK/dnfstab.off)
for mode in on off; do
    lines=("connections: $CONNS" "log_files: */pg_wal/*" "data_files: */base/*"
        "bulk_files: $MNT/backup/*")
    [[ $mode == on ]] || lines+=("io_classes: off")
    dnfstab_for "$URL" pgbb "$MNT" "${lines[@]}" >"${TAB[$mode]}"
    chmod 644 "${TAB[$mode]}"
done
RUN=("$DNFS" --config "${TAB[on]}" run --)
DATA=$MNT/pg/data

pg() { # MODE PROGRAM ARGS...: a PostgreSQL program as postgres through `dnfs run`
    local mode=$1 prog=$2
    shift 2
    runuser -u postgres -- "$DNFS" --config "${TAB[$mode]}" run -- "$PGBIN/$prog" "$@"
}
# The cluster's processes and the backups report their I/O per class at exit.
pg_stats() { DIRECTNFS_PRELOAD_STATS=1 pg "$@"; }
UP=
start_pg() { # MODE LOG
    pg_stats "$1" pg_ctl -D "$DATA" -l "$2" -w -t 300 \
        -o "-p $PGPORT -k $WORK/sock -c listen_addresses='' -c shared_buffers=128MB -c max_connections=40" \
        start 2> >(grep -v '^directnfs\[' >&2) >/dev/null
    UP=$1
}
# As pgbench.sh: pg_ctl may read postmaster.pid while it is removed; ask again.
stop_pg() {
    local mode=$UP
    [[ -n $mode ]] || return 0
    for _ in 1 2 3 4 5; do
        pg "$mode" pg_ctl -D "$DATA" -m fast -w -t 300 stop >/dev/null 2>&1 || true
        if ! pg "$mode" pg_ctl -D "$DATA" status >/dev/null 2>&1; then
            UP=
            return 0
        fi
        sleep 1
    done
    die "cannot stop the cluster"
}
cleanup() {
    stop_pg 2>/dev/null || true
    if [[ ${DNFS_PGBB_KEEP:-} == 1 ]]; then
        echo "kept: the cluster in $EXPORT/pg, the logs in $WORK" >&2
    else
        "${RUN[@]}" rm -rf "$MNT/pg" "$MNT/backup" 2>/dev/null || true
        rm -rf "$WORK"
    fi
    if ((STARTED)); then bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

say "initdb -k and pgbench -i -s $SCALE on $URL (connections: $CONNS per process)"
t0=$(date +%s)
"${RUN[@]}" sh -c "rm -rf $MNT/pg $MNT/backup && mkdir -p $MNT/pg $MNT/backup && chown postgres:postgres $MNT/pg $MNT/backup"
pg on initdb -k -A trust -D "$DATA" >/dev/null
start_pg on "$WORK/log/init.log"
runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "$PGPORT" -q -i -s "$SCALE" postgres >/dev/null 2>&1
stop_pg
echo "  $(($(date +%s) - t0)) s" >&2

# backup_loop MODE DEADLINE TAG: pg_basebackup after pg_basebackup into
# MOUNT/backup/TAG.N until DEADLINE (epoch seconds; the last one is cut off
# there); appends "ok" per completed backup and the bytes each left on
# the export to $WORK/TAG.backups.
backup_loop() {
    local mode=$1 deadline=$2 tag=$3 i=0 left dir rc
    while :; do
        left=$((deadline - $(date +%s)))
        ((left > 0)) || break
        i=$((i + 1))
        dir=$MNT/backup/$tag.$i
        rc=0
        timeout -s TERM -k 10 "$left" env DIRECTNFS_PRELOAD_STATS=1 runuser -u postgres -- \
            "$DNFS" --config "${TAB[$mode]}" run -- "$PGBIN/pg_basebackup" -h "$WORK/sock" -p "$PGPORT" -D "$dir" -Ft -c fast \
            -X fetch -w >>"$WORK/log/$tag.backup.log" 2>&1 || rc=$?
        if ((rc == 0)); then echo ok >>"$WORK/$tag.backups"; fi
        if [[ -d $EXPORT/backup/$tag.$i ]]; then
            echo "bytes $(du -sb "$EXPORT/backup/$tag.$i" | cut -f1)" >>"$WORK/$tag.backups"
        fi
        "$DNFS" --config "${TAB[$mode]}" run -- rm -rf "$dir"
        if ((rc != 0 && rc != 124)); then
            echo "backup $tag.$i failed ($rc):" >&2
            tail -5 "$WORK/log/$tag.backup.log" >&2
            sleep 1
        fi
    done
}

RESULTS=$WORK/runs
: >"$RESULTS"
for ((pass = 1; pass <= PASSES; pass++)); do
    order=(on off)
    ((pass % 2)) || order=(off on)
    for mode in "${order[@]}"; do
        start_pg "$mode" "$WORK/log/pg.$mode.$pass.log"
        for load in alone backup; do
            tag=$mode.$load.$pass
            say "pass $pass, classes $mode, $load: pgbench -c 4 -j 2 -T $SECS"
            : >"$WORK/$tag.backups"
            # Every run starts with no dirty buffer: the backup's own
            # checkpoint then writes what this run dirtied, not what earlier
            # ones left (untimed).
            runuser -u postgres -- "$PGBIN/psql" -h "$WORK/sock" -p "$PGPORT" -qXc CHECKPOINT postgres
            python3 "$PY" sched "$SRVPID" "$WORK/sched"
            w0=$(date +%s.%N)
            bpid=
            if [[ $load == backup ]]; then
                backup_loop "$mode" $(($(date +%s) + SECS)) "$tag" &
                bpid=$!
            fi
            # The log class's writes (WAL) and data reads of every process,
            # between 1 s into the run and 1 s before its end (dnfs stats).
            (
                sleep 1
                "$DNFS" stats --json >"$WORK/stats.a" 2>/dev/null || true
                sleep $((SECS > 2 ? SECS - 2 : 0))
                "$DNFS" stats --json >"$WORK/stats.b" 2>/dev/null || true
            ) &
            spid=$!
            out=$(runuser -u postgres -- "$PGBIN/pgbench" -h "$WORK/sock" -p "$PGPORT" -c 4 -j 2 \
                -T "$SECS" -l --log-prefix="$WORK/txn/$tag" postgres 2>&1) || die "pgbench: $out"
            wait "$spid"
            if [[ -n $bpid ]]; then wait "$bpid"; fi
            w1=$(date +%s.%N)
            read -r srvcpu srvwait < <(python3 "$PY" sched-delta "$SRVPID" "$WORK/sched")
            tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
            read -r count avg p50 p99 p999 < <(python3 "$PY" latency "$WORK/txn/$tag")
            read -r logw logp50 logp99 datar datap99 < <(python3 "$PY" stats-delta "$EXPORT_PATH" "$WORK/stats.a" "$WORK/stats.b")
            rm -f "$WORK/stats.a" "$WORK/stats.b"
            backups=$(grep -c "^ok" "$WORK/$tag.backups" || true)
            bytes=$(awk '$1 == "bytes" {s += $2} END {print s + 0}' "$WORK/$tag.backups")
            secs=$(python3 -c "print(f'{$w1 - $w0:.3f}')")
            echo "$pass $mode $load $tps $count $avg $p50 $p99 $p999 $backups $bytes $secs $srvcpu $srvwait $logw $logp50 $logp99 $datar $datap99" >>"$RESULTS"
            echo "  TPS $tps, latency avg $avg ms, p99 $p99 ms; WAL writes p99 $logp99 ms; backups $backups ($((bytes / 1000000)) MB)" >&2
        done
        stop_pg
    done
done

# The exit reports: which processes did log-class and bulk-class I/O.
report_line() { # MODE
    local logs=("$WORK"/log/pg."$1".*.log "$WORK"/log/"$1".*.backup.log) r
    read -r reports lg bk both lw bw < <(python3 "$PY" classes "${logs[@]}")
    r="classes $1: $reports process exit reports; $lg with log-class I/O ($lw log writes),"
    echo "$r $bk with bulk-class I/O ($bw bulk writes), $both with both"
}
{
    echo "PostgreSQL 15 through \`dnfs run\`, pgbench TPC-B -c 4 -j 2 -T $SECS, scale $SCALE;"
    echo "backup: pg_basebackup -Ft -c fast -X fetch through \`dnfs run\` into the same mount, in a loop;"
    echo "connections: $CONNS per process; classes on: pg_wal/ log, base/ data, the backup bulk; $(nproc) cores."
    python3 "$PY" table "$RESULTS"
    echo
    report_line on
    report_line off
} | tee "$OUT/pgbench-backup.md"
cp "$RESULTS" "$OUT/pgbench-backup.runs"
echo "(written to $OUT/pgbench-backup.md and .runs)" >&2

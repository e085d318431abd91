#!/usr/bin/env bash
# mariadb-bench.sh — MariaDB on directnfs (unmodified, through `dnfs run`
# and the interception library) side by side with the same server on the
# local file system, with sysbench's OLTP workloads.
#
#   scripts/bench/mariadb-bench.sh
#                              install what is missing, build, start a local
#                              NFS-Ganesha, make the two data directories,
#                              run each workload on both (interleaved,
#                              medians of the repeats), print the table and
#                              write it to bench-results/mariadb.md, stop
#                              what it started.
#
# Both servers run with the same settings, InnoDB's simulated AIO included:
# under the library kernel AIO is refused and InnoDB falls back to it by
# itself (docs/book/src/run/not-served.md), so the local server is given
# --innodb-use-native-aio=0 too and the two differ only in where the files
# are. innodb_flush_log_at_trx_commit=1 (every commit durable), a 64 MiB
# buffer pool against about 100 MiB of tables (reads reach storage).
#
# Workloads (sysbench 1.0, --threads=8, 4 tables of 100k rows):
#   read_write   oltp_read_write
#   write_only   oltp_write_only
#   read_only    oltp_read_only
#
# About 6 minutes with the defaults. Environment (all optional):
#   DNFS_MARIADB_SECONDS   seconds per run (default 30)
#   DNFS_MARIADB_REPEATS   runs per engine and workload, interleaved (default 3)
#   DNFS_MARIADB_MODE      dnfstab `stable:` (default file_sync)
#   DNFS_MARIADB_OUT       results directory (default bench-results)
#   DNFS_MARIADB_EXPORT    exported directory (default /tmp/dnfs-mariadb-export)
#   DNFS_MARIADB_LOCAL     the local data directory's parent (default /var/tmp/dnfs-mariadb-local)
#   DNFS_STATE_DIR, DNFS_NFS_PORT, DNFS_MNT_PORT: passed to nfs-server.sh
#                          (state dir default here: /tmp/dnfs-mariadb-server)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

SECS=${DNFS_MARIADB_SECONDS:-30}
REPEATS=${DNFS_MARIADB_REPEATS:-3}
MODE=${DNFS_MARIADB_MODE:-file_sync}
OUT=${DNFS_MARIADB_OUT:-bench-results}
EXPORT=${DNFS_MARIADB_EXPORT:-/tmp/dnfs-mariadb-export}
LOCAL=${DNFS_MARIADB_LOCAL:-/var/tmp/dnfs-mariadb-local}
export DNFS_STATE_DIR=${DNFS_STATE_DIR:-/tmp/dnfs-mariadb-server}
MNT=/dnfs-mariadb
WORKLOADS=(read_write write_only read_only)

# shellcheck source=scripts/lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"
# shellcheck source=scripts/bench/lib/preload.sh
. "$ROOT/scripts/bench/lib/preload.sh"

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'mariadb-bench.sh: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (MariaDB runs as the mysql user through runuser)"
[[ $MODE == file_sync || $MODE == unstable ]] || die "DNFS_MARIADB_MODE: file_sync or unstable"

# --- packages, build, server ---------------------------------------------------
missing=()
command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs rpcbind)
command -v mariadbd >/dev/null || missing+=(mariadb-server)
command -v sysbench >/dev/null || missing+=(sysbench)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    # The package must not start its own server.
    apt_install_quiet "${missing[@]}"
fi
say "building (release)"
DNFS=$(dnfs_binary "")
nfs_server_up "$EXPORT"

WORK=$(mktemp -d /tmp/dnfs-mariadb.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/sock" "$OUT"
chown mysql "$WORK/sock"
TAB=$WORK/dnfstab
dnfstab_for "$URL" mariadb "$MNT" "stable: $MODE" >"$TAB"
chmod 644 "$TAB"
RUN=("$DNFS" --config "$TAB" run --)

declare -A DATA=([directnfs]=$MNT/my/data [local]=$LOCAL/my/data)
ENGINES=(directnfs local)
UP=
pre() { [[ $1 == local ]] || printf '%s\n' "${RUN[@]}"; }
start_my() { # ENGINE
    local p
    mapfile -t p < <(pre "$1")
    runuser -u mysql -- "${p[@]}" mariadbd --no-defaults --datadir="${DATA[$1]}" \
        --socket="$WORK/sock/my.sock" --skip-networking --log-error="$WORK/sock/$1.log" \
        --pid-file="$WORK/sock/my.pid" --innodb-flush-log-at-trx-commit=1 \
        --innodb-buffer-pool-size=64M --innodb-use-native-aio=0 --max-connections=100 \
        >/dev/null 2>&1 &
    UP=$1
    for _ in $(seq 1 600); do
        mariadb-admin -S "$WORK/sock/my.sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "mariadbd ($1) did not start: $(tail -3 "$WORK/sock/$1.log")"
}
stop_my() {
    mariadb-admin -S "$WORK/sock/my.sock" -uroot shutdown >/dev/null 2>&1 || true
    for _ in $(seq 1 600); do [[ -e $WORK/sock/my.pid ]] || break; sleep 0.1; done
    UP=
}
cleanup() {
    if [[ -n $UP ]]; then stop_my; fi
    "${RUN[@]}" rm -rf "$MNT/my" 2>/dev/null || true
    rm -rf "$LOCAL" "$WORK"
    if ((STARTED)); then bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
SB=(sysbench --db-driver=mysql --mysql-socket="$WORK/sock/my.sock" --mysql-user=root
    --mysql-db=sbtest --tables=4 --table-size=100000)

# --- the data directories -------------------------------------------------------
for e in "${ENGINES[@]}"; do
    say "$e: mariadb-install-db and sysbench prepare"
    if [[ $e == local ]]; then
        rm -rf "$LOCAL"
        mkdir -p "$LOCAL/my"
        chown mysql "$LOCAL/my"
    else
        "${RUN[@]}" sh -c "rm -rf $MNT/my && mkdir -p $MNT/my && chown mysql $MNT/my"
    fi
    mapfile -t p < <(pre "$e")
    runuser -u mysql -- "${p[@]}" mariadb-install-db --no-defaults --datadir="${DATA[$e]}" \
        --auth-root-authentication-method=normal --skip-test-db >"$WORK/install-$e.log" 2>&1 ||
        die "mariadb-install-db ($e): $(tail -3 "$WORK/install-$e.log")"
    start_my "$e"
    mariadb -S "$WORK/sock/my.sock" -uroot -e "CREATE DATABASE sbtest"
    "${SB[@]}" oltp_read_write prepare >/dev/null
    stop_my
done

# --- the runs, interleaved --------------------------------------------------------
RESULTS=$WORK/results
: >"$RESULTS"
for w in "${WORKLOADS[@]}"; do
    for ((r = 1; r <= REPEATS; r++)); do
        for e in "${ENGINES[@]}"; do
            start_my "$e"
            tps=$("${SB[@]}" --threads=8 --time="$SECS" "oltp_$w" run |
                sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p')
            stop_my
            [[ -n $tps ]] || die "sysbench oltp_$w on $e gave no result"
            echo "$w $e $tps" >>"$RESULTS"
            say "$w, run $r, $e: $tps TPS"
        done
    done
done

# --- the table ---------------------------------------------------------------------
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
{
    echo "MariaDB $(mariadbd --version | sed -n 's/.*Ver \([^ ]*\).*/\1/p'), sysbench, 8 threads, 4 x 100k rows,"
    echo "buffer pool 64 MiB, innodb_flush_log_at_trx_commit=1, simulated AIO on both;"
    echo "directnfs stable: $MODE, connections: 1; $SECS s runs, medians of $REPEATS (each run's TPS in brackets)."
    echo
    echo "| workload | directnfs TPS | local TPS | ratio |"
    echo "|---|---|---|---|"
    for w in "${WORKLOADS[@]}"; do
        n=$(awk -v w="$w" '$1 == w && $2 == "directnfs" {print $3}' "$RESULTS")
        l=$(awk -v w="$w" '$1 == w && $2 == "local" {print $3}' "$RESULTS")
        nm=$(median <<<"$n")
        lm=$(median <<<"$l")
        printf '| %s | %.0f [%s] | %.0f [%s] | %.2fx |\n' "$w" "$nm" "$(tr '\n' ' ' <<<"$n" | sed 's/ $//')" \
            "$lm" "$(tr '\n' ' ' <<<"$l" | sed 's/ $//')" "$(awk -v a="$nm" -v b="$lm" 'BEGIN {print a / b}')"
    done
} | tee "$OUT/mariadb.md"

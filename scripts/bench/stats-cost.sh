#!/usr/bin/env bash
# stats-cost.sh — what publishing statistics costs in IOPS: `dnfs bench
# oltp` with publishing off (DIRECTNFS_STATS=off), on (the default: an
# endpoint that nobody reads), and on while read every second (`dnfs stats
# --json` in a loop, as a dashboard or `dnfs exporter` scraped each second
# would), interleaved REPEAT times; prints the median IOPS and mean latency
# of each and the ratio to "off".
#
#   scripts/bench/stats-cost.sh URL [REPEAT] [SECONDS]
#     URL      nfs://host/export?nfsport=N&mountport=M (a server of your own)
#     REPEAT   runs per mode, interleaved (default 5)
#     SECONDS  measured seconds per run (default 10)
#
# Timed figures mean something on a quiet machine only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
URL=${1:?usage: stats-cost.sh URL [REPEAT] [SECONDS]}
REPEAT=${2:-5}
SECS=${3:-10}
DNFS=$ROOT/target/release/dnfs
OUT=$(mktemp -d /tmp/dnfs-stats-cost.XXXXXX)
[[ -x $DNFS ]] || (cd "$ROOT" && cargo build --release -p directnfs-cli)

base=${URL%%\?*}
query=${URL#"$base"}
target="${base%/}/stats-cost.dat$query"

run() { # mode index
    local mode=$1 i=$2 reader=
    local env=(env)
    [[ $mode == off ]] && env+=(DIRECTNFS_STATS=off)
    if [[ $mode == read ]]; then
        (while :; do "$DNFS" stats --json >/dev/null 2>&1 || true; sleep 1; done) &
        reader=$!
    fi
    "${env[@]}" "$DNFS" bench oltp -e directnfs -t "$target" --size 256m -s 2 -q 16 \
        -d "$SECS" -w 2 --quiet --json "$OUT/$mode-$i.json" >/dev/null
    if [[ -n $reader ]]; then
        kill "$reader"
        wait "$reader" 2>/dev/null || true
    fi
}

field() { # file key -> first number after "key":
    grep -o "\"$2\": *[0-9.]*" "$1" | head -1 | sed 's/.*: *//'
}

for ((i = 0; i < REPEAT; i++)); do
    for mode in off on read; do
        run "$mode" "$i"
        printf '%-4s run %d: %s IOPS\n' "$mode" "$i" "$(field "$OUT/$mode-$i.json" iops)" >&2
    done
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A iops lat
for mode in off on read; do
    iops[$mode]=$(for f in "$OUT/$mode"-*.json; do field "$f" iops; done | median)
    lat[$mode]=$(for f in "$OUT/$mode"-*.json; do field "$f" mean; done | median)
done
printf '\n%-34s %12s %14s %10s\n' "statistics publishing" "IOPS" "mean lat (us)" "vs off"
for mode in off on read; do
    case $mode in
        off) name="off (DIRECTNFS_STATS=off)" ;;
        on) name="on, not read (default)" ;;
        read) name="on, read every second" ;;
    esac
    printf '%-34s %12.0f %14.1f %9.3fx\n' "$name" "${iops[$mode]}" "${lat[$mode]}" \
        "$(awk -v a="${iops[$mode]}" -v b="${iops[off]}" 'BEGIN {print a / b}')"
done
echo "(median of $REPEAT interleaved runs of ${SECS} s, oltp 2 sessions x 16, 8 KiB, 25% writes; JSON in $OUT)"

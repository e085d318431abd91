#!/usr/bin/env bash
# responder-bench.sh — the client's own cost, with no real NFS server in the way.
#
#   scripts/bench/responder-bench.sh [--smoke] [--json FILE] [dnfs bench oltp options ...]
#
# Starts `dnfs bench responder` (a minimal in-memory NFSv3 responder for
# benchmarking only: WRITEs are acknowledged and discarded; see
# docs/book/src/reference/benchmarks.md) on a free loopback port, pinned to
# the last core, and runs `dnfs bench oltp` against it pinned to core 0, with
# directnfs and libnfs one after the other (8 KiB blocks; default 100% reads,
# 2 sessions x 16 in flight, 10 s; any option given is passed on and wins).
# Then prints, per engine, the IOPS, the client CPU per I/O (user+sys of the
# engine's process over the measured window), the IOPS one client core would
# sustain at that cost (10^6 / cpu-us-per-I/O, lines starting with RESULT), and
# the responder's CPU per I/O.
#
# --smoke: a one-second run of a 8 MiB file (CI: proves the responder serves
# both clients' mount, open, read and write; the figures mean nothing).
#
# Environment: DNFS_BIN (default target/release/dnfs, else target/debug/dnfs).
# On a machine with one core nothing is pinned.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

DNFS=${DNFS_BIN:-}
if [[ -z $DNFS ]]; then
    DNFS=target/release/dnfs
    [[ -x $DNFS ]] || DNFS=target/debug/dnfs
fi
[[ -x $DNFS ]] || die "no dnfs binary (cargo build --release -p directnfs-cli, or set DNFS_BIN)"

SMOKE=0
JSON=
ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --smoke) SMOKE=1 ;;
    --json) JSON=$2; shift ;;
    *) ARGS+=("$1") ;;
    esac
    shift
done
if [[ $SMOKE == 1 ]]; then
    SIZE=8m
    DEFAULTS=(--duration 1 --warmup 0.2 --write-pct 25 --sessions 1 --queue-depth 4)
else
    SIZE=${DNFS_RESPONDER_SIZE:-256m}
    DEFAULTS=(--duration 10 --warmup 2 --write-pct 0 --sessions 2 --queue-depth 16)
fi

CORES=$(nproc)
PIN_SERVER=() PIN_CLIENT=()
if [[ $CORES -ge 2 ]]; then
    PIN_SERVER=(taskset -c $((CORES - 1)))
    PIN_CLIENT=(taskset -c 0)
fi

WORK=$(mktemp -d /tmp/dnfs-responder.XXXXXX)
SRV_PID=
cleanup() {
    if [[ -n $SRV_PID ]]; then
        kill "$SRV_PID" 2>/dev/null || true
        wait "$SRV_PID" 2>/dev/null || true # killed: 143, not this script's status
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

"${PIN_SERVER[@]}" "$DNFS" bench responder --listen 127.0.0.1:0 --size "$SIZE" \
    --file data --file data.redo >"$WORK/srv.out" 2>"$WORK/srv.err" &
SRV_PID=$!
for _ in $(seq 100); do
    grep -q '^listening on' "$WORK/srv.out" && break
    kill -0 "$SRV_PID" 2>/dev/null || die "responder exited: $(cat "$WORK/srv.err")"
    sleep 0.05
done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/srv.out")
[[ -n $PORT ]] || die "responder did not start"
URL="nfs://127.0.0.1:$PORT/bench/data?nfsport=$PORT&mountport=$PORT"
log "responder pid $SRV_PID on port $PORT (${PIN_SERVER[*]:-unpinned}); client ${PIN_CLIENT[*]:-unpinned}"

# The defaults of the options not given (clap refuses an option twice).
for ((i = 0; i < ${#DEFAULTS[@]}; i += 2)); do
    given=0
    for a in "${ARGS[@]}"; do
        [[ $a == "${DEFAULTS[i]}" || $a == "${DEFAULTS[i]}="* ]] && given=1
    done
    ((given)) || ARGS+=("${DEFAULTS[i]}" "${DEFAULTS[i + 1]}")
done

OUT=${JSON:-$WORK/result.json}
"${PIN_CLIENT[@]}" "$DNFS" bench oltp --target "$URL" --size "$SIZE" --engine directnfs,libnfs \
    --server-pid "$SRV_PID" --json "$OUT" --quiet "${ARGS[@]}"

python3 - "$OUT" "$SMOKE" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
smoke = sys.argv[2] == "1"
engines = {r["engine"] for r in report["runs"]}
missing = {"directnfs", "libnfs"} - engines
if missing:
    sys.exit(f"responder-bench: no result for {', '.join(sorted(missing))} "
             f"(skipped: {report['skipped']}, failed: {report['failed']})")
for r in report["runs"]:
    if r["errors"] or r["ops"] == 0:
        sys.exit(f"responder-bench: {r['engine']}: {r['ops']} I/Os, {r['errors']} errors")
    per_core = 1e6 / r["cpu_us_per_io"] if r["cpu_us_per_io"] > 0 else float("nan")
    srv = r.get("server_cpu_us_per_io")
    print(f"RESULT {r['engine']:<9} IOPS {r['iops']:>9.0f}  client cpu/IO {r['cpu_us_per_io']:6.2f} us"
          f"  IOPS per client core {per_core:>9.0f}"
          f"  responder cpu/IO {srv if srv is None else f'{srv:.2f} us'}"
          + ("  (smoke: figures mean nothing)" if smoke else ""))
PY

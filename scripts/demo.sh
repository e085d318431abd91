#!/usr/bin/env bash
# demo.sh — directnfs side by side with libnfs and the local file system.
#
#   scripts/demo.sh            install what is missing, build, start a local
#                              NFS-Ganesha, run `dnfs bench oltp` and
#                              `dnfs bench scan` with all three engines, print
#                              the comparison tables, write JSON and plots into
#                              bench-results/, stop the server it started.
#
# About 3-5 minutes on a 2-core machine (the first run also builds and fills
# a 1 GiB data file; later runs reuse it).
#
# Environment (all optional):
#   DNFS_DEMO_OUT        results directory (default: bench-results)
#   DNFS_DEMO_SIZE       data file size (default: 1g)
#   DNFS_DEMO_DURATION   measured seconds per engine for oltp (default: 10)
#   DNFS_DEMO_SCAN_DURATION  seconds of full-scan passes per engine (default: 5)
#   DNFS_DEMO_EXTRA=1    also run redo and a sweep (adds ~3 minutes)
#   DNFS_DEMO_TARGETS=1  the performance targets: every run above plus redo,
#                        the sweep, reads at 8 x 128 and oltp at queue depth
#                        1, each engine repeated 3 times (interleaved, the
#                        median run kept); writes targets.md (~15 minutes)
#   DNFS_DEMO_EXPORT     exported directory (default: /tmp/dnfs-demo-export)
#   DNFS_STATE_DIR, DNFS_NFS_PORT, DNFS_MNT_PORT: passed to nfs-server.sh
#                        (state dir default here: /tmp/dnfs-demo-server)
#   DNFS_DEMO_NO_INSTALL=1   never call apt-get
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

OUT=${DNFS_DEMO_OUT:-bench-results}
SIZE=${DNFS_DEMO_SIZE:-1g}
DURATION=${DNFS_DEMO_DURATION:-10}
SCAN_DURATION=${DNFS_DEMO_SCAN_DURATION:-5}
EXPORT=${DNFS_DEMO_EXPORT:-/tmp/dnfs-demo-export}
export DNFS_STATE_DIR=${DNFS_STATE_DIR:-/tmp/dnfs-demo-server}

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# --- 1. packages ----------------------------------------------------------------
PKGS=(nfs-ganesha nfs-ganesha-vfs rpcbind libnfs13 libnfs-utils fonts-dejavu-core)
missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    [[ ${DNFS_DEMO_NO_INSTALL:-} == 1 ]] && die "missing packages: ${missing[*]}"
    SUDO=()
    [[ $(id -u) -ne 0 ]] && SUDO=(sudo)
    say "installing ${missing[*]}"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
else
    say "packages present: ${PKGS[*]}"
fi
command -v cargo >/dev/null || die "cargo not found: install a Rust toolchain (rust-version 1.85+)"

# --- 2. build ---------------------------------------------------------------------
say "building (release)"
cargo build --release -p directnfs-cli
DNFS=$ROOT/target/release/dnfs

# --- 3. server ----------------------------------------------------------------------
STARTED=0
if bash scripts/server/nfs-server.sh status >/dev/null 2>&1; then
    say "using the running server of $DNFS_STATE_DIR"
    URL=$(bash scripts/server/nfs-server.sh url | tail -1)
    # shellcheck disable=SC1091
    EXPORT=$(. "$DNFS_STATE_DIR/state.env" && echo "$EXPORT_DIR")
else
    say "starting NFS-Ganesha on loopback (export $EXPORT)"
    mkdir -p "$EXPORT"
    # The benchmark reads and writes a file whose size never changes:
    # Ganesha's attribute cache stays on (scripts/server/lib/ganesha.sh).
    URL=$(DNFS_ATTR_CACHE=server-default bash scripts/server/nfs-server.sh start "$EXPORT" | tail -1)
    STARTED=1
fi
# shellcheck disable=SC2317  # called by the EXIT trap
stop_server() {
    if ((STARTED)); then
        say "stopping the server"
        bash scripts/server/nfs-server.sh stop >/dev/null 2>&1 || true
    fi
}
trap stop_server EXIT
[[ $URL == nfs://* ]] || die "no server URL (got: $URL)"
PID=$(cat "$DNFS_STATE_DIR/ganesha.pid")
BASE=${URL%%\?*}
QUERY=${URL#*\?}
[[ $QUERY == "$URL" ]] && QUERY=
TARGET="${BASE%/}/bench.dat${QUERY:+?$QUERY}"
LOCAL="$EXPORT/bench.dat"
echo "server: $URL (pid $PID)" >&2
echo "target: $TARGET" >&2
echo "local:  $LOCAL" >&2

mkdir -p "$OUT"
BASE_ARGS=(--target "$TARGET" --local-path "$LOCAL" --server-pid "$PID" --size "$SIZE" --verify)
TARGETS=${DNFS_DEMO_TARGETS:-}
if [[ $TARGETS == 1 ]]; then
    BASE_ARGS+=(--repeat 3)
    DNFS_DEMO_EXTRA=1
fi
COMMON=("${BASE_ARGS[@]}" --engine "directnfs,libnfs,local")
status=0

# --- 4. the benchmarks ---------------------------------------------------------------
say "oltp: 2 sessions x 16 in flight, random 8 KiB, 75% reads / 25% writes, ${DURATION}s per engine"
"$DNFS" bench oltp "${COMMON[@]}" --sessions 2 --queue-depth 16 \
    --duration "$DURATION" --warmup 2 \
    --json "$OUT/oltp.json" --plot "$OUT/oltp.svg" | tee "$OUT/oltp.txt" || status=1

say "oltp, reads only: 2 sessions x 64 in flight, ${DURATION}s per engine"
"$DNFS" bench oltp "${COMMON[@]}" --sessions 2 --queue-depth 64 --write-pct 0 \
    --duration "$DURATION" --warmup 2 \
    --json "$OUT/oltp-read.json" --plot "$OUT/oltp-read.svg" | tee "$OUT/oltp-read.txt" || status=1

say "scan: 1 worker, 1 MiB reads, 4 in flight, full passes for ${SCAN_DURATION}s per engine"
"$DNFS" bench scan "${COMMON[@]}" --workers 1 --queue-depth 4 \
    --duration "$SCAN_DURATION" --warmup 1 \
    --json "$OUT/scan.json" --plot "$OUT/scan.svg" | tee "$OUT/scan.txt" || status=1

if [[ ${DNFS_DEMO_EXTRA:-} == 1 ]]; then
    say "redo: one log writer, sequential FILE_SYNC writes of 8-64 KiB"
    "$DNFS" bench redo "${COMMON[@]}" --duration "$DURATION" --warmup 1 \
        --json "$OUT/redo.json" --plot "$OUT/redo.svg" | tee "$OUT/redo.txt" || status=1
    say "sweep: oltp at 1..16 sessions x 8, the IOPS at 1 ms"
    "$DNFS" bench sweep "${COMMON[@]}" --max-sessions 16 --queue-depth 8 \
        --duration 4 --warmup 1 \
        --json "$OUT/sweep.json" --plot "$OUT/sweep.svg" | tee "$OUT/sweep.txt" || status=1
fi

if [[ $TARGETS == 1 ]]; then
    say "reads only at 8 sessions x 128 (the minimal client's 70k)"
    "$DNFS" bench oltp "${BASE_ARGS[@]}" --engine directnfs,libnfs --sessions 8 \
        --queue-depth 128 --write-pct 0 --duration "$DURATION" --warmup 2 \
        --json "$OUT/oltp-read-8x128.json" | tee "$OUT/oltp-read-8x128.txt" || status=1
    say "oltp at queue depth 1 (1 session)"
    "$DNFS" bench oltp "${BASE_ARGS[@]}" --engine directnfs,libnfs --sessions 1 \
        --queue-depth 1 --duration "$DURATION" --warmup 2 \
        --json "$OUT/oltp-qd1.json" | tee "$OUT/oltp-qd1.txt" || status=1
    python3 scripts/bench/targets.py "$OUT" | tee "$OUT/targets.md"
fi

# --- 5. summary ------------------------------------------------------------------------
say "results in $OUT/"
ls -1 "$OUT" >&2
cat >&2 <<'EOF'

How to read the tables: one row per engine on the same file and server.
IOPS and MB/s are throughput; mean/p50/p99 are per-I/O latencies in
microseconds; cpu/IO is the client's user+system CPU per I/O (each engine
in its own process), srv/IO the server's CPU per I/O. The ratio lines
divide directnfs's figure by libnfs's and by the local file system's:
above 1x is better for IOPS/MB/s, below 1x is better for latency and CPU.
The local engine reads through the page cache, so it is a floor, not a peer.
EOF
exit $status

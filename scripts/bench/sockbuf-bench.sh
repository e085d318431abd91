#!/usr/bin/env bash
# sockbuf-bench.sh — fixed socket buffers against the kernel's autotuning
# (`sockbuf=4m` vs `sockbuf=auto`) on `dnfs bench scan`, interleaved.
#
#   scripts/bench/sockbuf-bench.sh URL [ROUNDS]
#       scan over loopback; URL as nfs-server.sh prints it
#   scripts/bench/sockbuf-bench.sh --netns [ROUNDS]
#       scan over 4 paths of the netns topology, each rate-limited to
#       200 Mbit/s (root; run it as `flock /tmp/dnfs-heavy.lock ...`)
#
# Each round runs one scan per setting, alternating which goes first (ABBA:
# a machine getting busier or quieter during the rounds biases neither);
# every scan is `dnfs bench scan --repeat $DNFS_SOCKBUF_REPEAT` (default 1)
# of a 256 MiB file (`DNFS_SOCKBUF_SIZE`) with 4 workers x 4 reads of 1 MiB
# in flight, for `DNFS_SOCKBUF_SECONDS` (default 5). Prints every run's MB/s
# and client CPU per GB, then the median of each setting (lines starting
# with RESULT), and the buffer sizes each setting got, after connect
# (`dnfs check`) and after reading the file (`dnfs --stats cat`). Timed
# figures mean something only on an otherwise idle machine.
#
# Environment: DNFS_SOCKBUF_SETTINGS (default "4m auto": the values to
# compare), DNFS_SOCKBUF_REPEAT, DNFS_SOCKBUF_SIZE, DNFS_SOCKBUF_SECONDS;
# DNFS_NETNS_STATE_DIR for --netns (default /tmp/dnfs-sockbuf-netns).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

[[ $# -ge 1 ]] || die "usage: $0 URL [ROUNDS] | $0 --netns [ROUNDS]"
MODE=$1
ROUNDS=${2:-5}
read -r -a SETTINGS <<<"${DNFS_SOCKBUF_SETTINGS:-4m auto}"
REPEAT=${DNFS_SOCKBUF_REPEAT:-1}
SIZE=${DNFS_SOCKBUF_SIZE:-256m}
SECONDS_PER_RUN=${DNFS_SOCKBUF_SECONDS:-5}
OUT=$(mktemp -d /tmp/dnfs-sockbuf.XXXXXX)

cargo build --release -p directnfs-cli >&2
DNFS=$ROOT/target/release/dnfs

# target SETTING: the bench's -t argument (and --config FILE for netns).
if [[ $MODE == --netns ]]; then
    [[ $(id -u) == 0 ]] || die "--netns needs root (network namespaces, tc)"
    export DNFS_NETNS_STATE_DIR=${DNFS_NETNS_STATE_DIR:-/tmp/dnfs-sockbuf-netns}
    # shellcheck disable=SC2317  # called by the trap
    teardown() { bash scripts/server/netns.sh down >/dev/null 2>&1 || true; }
    trap teardown EXIT
    bash scripts/server/netns.sh up 4 >/dev/null
    status=$(bash scripts/server/netns.sh status)
    field() { sed -n "s/^$1=//p" <<<"$status"; }
    export_path=$(field export_path)
    for k in 1 2 3 4; do bash scripts/server/netns.sh rate "$k" 200 >/dev/null; done
    target() {
        local tab=$OUT/dnfstab-$1
        {
            echo "server: dnfs-srv"
            for k in 1 2 3 4; do printf 'local: 10.231.%s.1\npath: 10.231.%s.2\n' "$k" "$k"; done
            echo "export: $export_path mount: /sockbuf-bench"
            echo "port: $(field nfs_port)"
            echo "mount_port: $(field mnt_port)"
            echo "connections: 2"
            echo "sockbuf: $1"
        } >"$tab"
        echo "--config $tab -t /sockbuf-bench/sockbuf-scan.dat"
    }
    check_args() { echo "--config $OUT/dnfstab-$1"; }
    cat_args() { echo "--config $OUT/dnfstab-$1 cat /sockbuf-bench/sockbuf-scan.dat"; }
else
    base=${MODE%%\?*}
    query=${MODE#"$base"}
    query=${query#\?}
    target() { echo "-t ${base%/}/sockbuf-scan.dat?${query:+$query&}sockbuf=$1"; }
    check_args() { echo "${base}?${query:+$query&}sockbuf=$1"; }
    cat_args() { echo "cat ${base%/}/sockbuf-scan.dat?${query:+$query&}sockbuf=$1"; }
fi

run() { # run SETTING ROUND
    local json=$OUT/$1-$2.json
    # shellcheck disable=SC2046  # target() gives separate words on purpose
    "$DNFS" bench scan $(target "$1") --size "$SIZE" -e directnfs -p 4 -q 4 \
        -d "$SECONDS_PER_RUN" -w 1 --repeat "$REPEAT" --quiet --json "$json" >/dev/null
    python3 - "$json" "$1" "$2" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
print(f"run sockbuf={sys.argv[2]} round={sys.argv[3]} "
      f"mb_per_s={run['mb_per_s']:.1f} cpu_s_per_gb={run['cpu_s_per_gb']:.3f}")
EOF
}

log "scan: ${ROUNDS} rounds x {${SETTINGS[*]}}, --repeat $REPEAT, results in $OUT"
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${SETTINGS[@]}")
    if ((r % 2 == 0)); then
        order=()
        for ((i = ${#SETTINGS[@]} - 1; i >= 0; i--)); do order+=("${SETTINGS[i]}"); done
    fi
    for s in "${order[@]}"; do run "$s" "$r" | tee -a "$OUT/runs.txt"; done
done

python3 - "$OUT/runs.txt" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    by.setdefault(f["sockbuf"], []).append((float(f["mb_per_s"]), float(f["cpu_s_per_gb"])))
for s, v in by.items():
    mbs = sorted(x[0] for x in v)
    cpu = statistics.median(x[1] for x in v)
    print(f"RESULT sockbuf={s}: median {statistics.median(mbs):.1f} MB/s "
          f"(min {mbs[0]:.1f}, max {mbs[-1]:.1f}, {len(mbs)} runs), "
          f"client CPU {cpu:.3f} s/GB")
EOF

# What each setting got: right after connect (dnfs check), and after
# reading the whole file through one client (its channel statistics).
for s in "${SETTINGS[@]}"; do
    # shellcheck disable=SC2046
    "$DNFS" check $(check_args "$s") | sed "s/^/sockbuf=$s after connect: /"
    # shellcheck disable=SC2046
    "$DNFS" --stats $(cat_args "$s") 2>&1 >/dev/null |
        sed -n '/^CHANNELS/,/^$/p' | sed "/^$/d; s/^/sockbuf=$s after a read of the file: /"
done

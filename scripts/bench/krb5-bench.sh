#!/usr/bin/env bash
# krb5-bench.sh — what Kerberos costs a mount: `dnfs bench scan` and `dnfs bench oltp` with
# sec=sys, krb5, krb5i and krb5p against one server, one flavor after the other, in one run.
#
#   scripts/bench/krb5-bench.sh URL [SIZE]
#
# URL is an NFSv3 URL of a server that takes all four flavors (the Kerberos test server:
# `DNFS_KRB5=1 scripts/server/nfs-server.sh start DIR`), with the realm's KRB5_CONFIG and a
# ticket in KRB5CCNAME in the environment (`scripts/server/kdc.sh env`). SIZE is the data file's
# size (default 256m); the files (one per flavor) are left in the export for the next run. Prints one line per workload and flavor: throughput, and the client's CPU
# per GB (user+sys of the engine's process over the measured window), as `dnfs bench` reports
# them. The scan is 1 MiB reads, 2 workers x 4 in flight; oltp is 8 KiB random I/O, 30% writes,
# 2 sessions x 16 in flight. Timed figures mean something only on an idle machine.
#
# Environment: DNFS_BIN (default target/release/dnfs, else target/debug/dnfs),
# DNFS_KRB5_BENCH_SECONDS (measured seconds per run, default 5).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

[[ $# -ge 1 ]] || die "usage: $0 URL [SIZE]"
URL=$1
SIZE=${2:-256m}
SECONDS_PER_RUN=${DNFS_KRB5_BENCH_SECONDS:-5}
DNFS=${DNFS_BIN:-}
if [[ -z $DNFS ]]; then
    DNFS=target/release/dnfs
    [[ -x $DNFS ]] || DNFS=target/debug/dnfs
fi
[[ -x $DNFS ]] || die "no dnfs binary (cargo build --release -p directnfs-cli, or set DNFS_BIN)"
case $URL in
*\?*) SEP='&' ;;
*) SEP='?' ;;
esac
# A data file per flavor: a file made under sys belongs to the caller's uid, one made under
# Kerberos to the uid the server maps the principal to; neither may write the other's.
file_url() { printf '%s/krb5-bench-%s.dat%s' "${URL%%\?*}" "$1" "${URL#"${URL%%\?*}"}"; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One line of `dnfs bench --json` output: throughput and CPU per GB.
summary() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, workload, flavor = sys.argv[1:]
doc = json.load(open(path))
r = doc["runs"][0]
print(f"RESULT {workload:5} {flavor:6} IOPS {r['iops']:>9.0f}  MB/s {r['mb_per_s']:>8.1f}  "
      f"client cpu s/GB {r['cpu_s_per_gb']:>6.2f}  errors {r['errors']}")
PY
}

for workload in scan oltp; do
    for flavor in sys krb5 krb5i krb5p; do
        url="$(file_url "$flavor")${SEP}sec=${flavor}"
        args=(--target "$url" --size "$SIZE" --duration "$SECONDS_PER_RUN" --engine directnfs --quiet
            --json "$TMP/$workload-$flavor.json")
        if [[ $workload == scan ]]; then
            args+=(--workers 2 --queue-depth 4)
        else
            args+=(--sessions 2 --queue-depth 16 --write-pct 30)
        fi
        log "$workload, sec=$flavor"
        "$DNFS" bench "$workload" "${args[@]}" >"$TMP/$workload-$flavor.out" 2>&1 ||
            die "$workload sec=$flavor failed: $(tail -n 5 "$TMP/$workload-$flavor.out")"
        summary "$TMP/$workload-$flavor.json" "$workload" "$flavor"
    done
done

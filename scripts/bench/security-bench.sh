#!/usr/bin/env bash
# security-bench.sh — what each protection costs a mount, in one run: `dnfs bench scan` and
# `dnfs bench oltp` with sec=sys, krb5, krb5i, krb5p, RPC-with-TLS (sec=sys + xprtsec=tls) and
# Kerberos over TLS (sec=krb5 + xprtsec=tls) against one server, one after the other; and, as
# the control for the TLS rows, sec=sys through the TLS front's clear relay.
#
#   scripts/bench/security-bench.sh URL [SIZE]
#
# URL is an NFSv3 URL of a server that takes all four flavors, with `nfsport=` and
# `mountport=` (the Kerberos test server: `DNFS_KRB5=1 scripts/server/nfs-server.sh start DIR`),
# with the realm's KRB5_CONFIG and a ticket in KRB5CCNAME in the environment
# (`scripts/server/kdc.sh env`). The script starts an RPC-with-TLS front
# (scripts/server/tls-front.py) before the URL's NFS and MOUNT ports for the TLS rows and stops
# it at the end. SIZE is the data file's size (default 256m); the files (one for sys, one for
# Kerberos) are left in the export for the next run. Prints one line per workload and row:
# throughput, and the client's CPU per GB and per I/O (user+sys of the engine's process over the
# measured window, the TLS relay thread included), as `dnfs bench` reports them. The scan is
# 1 MiB reads, 2 workers x 4 in flight; oltp is 8 KiB random I/O, 30% writes, 2 sessions x 16
# in flight. Timed figures mean something only on an idle machine. The TLS rows' throughput is
# the Python front's as much as the client's: compare them with the `sys+relay` row.
#
# Environment: DNFS_BIN (default target/release/dnfs, else target/debug/dnfs),
# DNFS_SECURITY_BENCH_SECONDS (measured seconds per run, default 5; DNFS_KRB5_BENCH_SECONDS is
# still read), DNFS_SECURITY_BENCH_ROWS (the rows to run, default
# "sys krb5 krb5i krb5p sys+relay tls krb5+tls"), DNFS_SECURITY_BENCH_FRONT_DIR (the front's
# state dir, default /tmp/dnfs-security-bench-front) and DNFS_SECURITY_BENCH_FRONT_PORT (its
# first of 8 ports, default 2600).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

[[ $# -ge 1 ]] || die "usage: $0 URL [SIZE]"
URL=$1
SIZE=${2:-256m}
SECONDS_PER_RUN=${DNFS_SECURITY_BENCH_SECONDS:-${DNFS_KRB5_BENCH_SECONDS:-5}}
ROWS=${DNFS_SECURITY_BENCH_ROWS:-sys krb5 krb5i krb5p sys+relay tls krb5+tls}
FRONT_DIR=${DNFS_SECURITY_BENCH_FRONT_DIR:-/tmp/dnfs-security-bench-front}
FRONT_PORT=${DNFS_SECURITY_BENCH_FRONT_PORT:-2600}
DNFS=${DNFS_BIN:-}
if [[ -z $DNFS ]]; then
    DNFS=target/release/dnfs
    [[ -x $DNFS ]] || DNFS=target/debug/dnfs
fi
[[ -x $DNFS ]] || die "no dnfs binary (cargo build --release -p directnfs-cli, or set DNFS_BIN)"
[[ $URL == *\?* ]] || die "$URL: give nfsport= and mountport= (the front needs both ports)"

# The value of option $1 in URL.
url_port() {
    local v=${URL##*"$1"=}
    v=${v%%&*}
    [[ $v =~ ^[0-9]+$ ]] || die "$URL: no $1="
    echo "$v"
}
NFS_PORT=$(url_port nfsport)
MOUNT_PORT=$(url_port mountport)
BASE=${URL%%\?*}
QUERY=${URL#*\?}

# A data file per owner: a file made under sys belongs to the caller's uid, one made under
# Kerberos to the uid the server maps the principal to; neither may write the other's.
# Row -> "file owner|options|nfsport|mountport".
row_spec() {
    local f=$FRONT_PORT m=$((FRONT_PORT + 4)) ca="tls_ca=$FRONT_DIR/ca.pem"
    case $1 in
    sys | krb5 | krb5i | krb5p) echo "${1/krb5*/krb5}|sec=$1|$NFS_PORT|$MOUNT_PORT" ;;
    sys+relay) echo "sys|sec=sys|$((f + 3))|$((m + 3))" ;;
    tls) echo "sys|sec=sys&xprtsec=tls&$ca|$f|$m" ;;
    krb5+tls) echo "krb5|sec=krb5&xprtsec=tls&$ca|$f|$m" ;;
    *) die "unknown row $1 (sys krb5 krb5i krb5p sys+relay tls krb5+tls)" ;;
    esac
}

# The URL of row $1's data file.
row_url() {
    local owner opts nfs mnt query
    IFS='|' read -r owner opts nfs mnt <<<"$(row_spec "$1")"
    query=$(sed -e "s/\(^\|&\)nfsport=[0-9]*/\1nfsport=$nfs/" \
        -e "s/\(^\|&\)mountport=[0-9]*/\1mountport=$mnt/" <<<"$QUERY")
    printf '%s/security-bench-%s.dat?%s&%s' "$BASE" "$owner" "$query" "$opts"
}

TMP=$(mktemp -d)
cleanup() {
    python3 scripts/server/tls-front.py stop "$FRONT_DIR" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
if [[ " $ROWS " == *" tls "* || " $ROWS " == *"relay"* || " $ROWS " == *"+tls"* ]]; then
    log "RPC-with-TLS front on ports $FRONT_PORT-$((FRONT_PORT + 7)) -> $NFS_PORT, $MOUNT_PORT"
    python3 scripts/server/tls-front.py start "$FRONT_DIR" "$NFS_PORT" "$FRONT_PORT" \
        "$MOUNT_PORT" $((FRONT_PORT + 4)) >/dev/null
fi

# One line of `dnfs bench --json` output: throughput and CPU per GB and per I/O.
summary() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, workload, row = sys.argv[1:]
doc = json.load(open(path))
r = doc["runs"][0]
print(f"RESULT {workload:5} {row:9} IOPS {r['iops']:>9.0f}  MB/s {r['mb_per_s']:>8.1f}  "
      f"client cpu s/GB {r['cpu_s_per_gb']:>6.2f}  us/IO {r['cpu_us_per_io']:>8.1f}  "
      f"errors {r['errors']}")
PY
}

for workload in scan oltp; do
    for row in $ROWS; do
        url=$(row_url "$row")
        args=(--target "$url" --size "$SIZE" --duration "$SECONDS_PER_RUN" --engine directnfs --quiet
            --json "$TMP/$workload-$row.json")
        if [[ $workload == scan ]]; then
            args+=(--workers 2 --queue-depth 4)
        else
            args+=(--sessions 2 --queue-depth 16 --write-pct 30)
        fi
        log "$workload, $row"
        "$DNFS" bench "$workload" "${args[@]}" >"$TMP/$workload-$row.out" 2>&1 ||
            die "$workload $row failed: $(tail -n 5 "$TMP/$workload-$row.out")"
        summary "$TMP/$workload-$row.json" "$workload" "$row"
    done
done

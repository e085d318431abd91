#!/usr/bin/env bash
# sqlbench.sh — TPC-B-like SQL benchmark (pgbench's default transaction) on
# SQLite: the directnfs VFS versus the same database on the local file
# system, for each journal mode and each directnfs stable mode, and in
# unstable mode with write-behind off and on.
#
#   scripts/bench/sqlbench.sh [extra sqlbench args, e.g. --clients 1,4 --duration 10]
#
# `--repeat 3` runs each client count 3 times per engine, the engines
# taking turns, and reports medians (one run's TPS varies by 10% or more
# on a small shared machine).
# `--calls 300` adds, per directnfs run, the NFS calls per transaction by
# procedure (counts: repeatable on a busy machine, unlike the TPS).
# `--cache-mib N` gives every connection of both engines an N MiB page
# cache (default: SQLite's 2 MiB); directnfs caches nothing, so pages
# missing from SQLite's cache are READ round trips (see docs/book/src/reference/benchmarks-sqlite.md).
#
# Uses $DNFS_TEST_URL if set; otherwise starts its own Ganesha
# (scripts/server/nfs-server.sh, state in $SQLBENCH_STATE, default
# /tmp/directnfs-sqlbench) and stops it afterwards.
# Environment: JOURNALS (default "delete wal"), STABLES (default
# "file_sync unstable"), WRITE_BEHINDS (write_behind= values tried in
# unstable mode, default "0 8m": off, then the default 8 MiB per file; not
# used with file_sync), OUT (JSON directory, default bench-results),
# LOCAL_DIR (local-engine directory, default /var/tmp/sqlbench-local).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
JOURNALS=${JOURNALS:-delete wal}
STABLES=${STABLES:-file_sync unstable}
WRITE_BEHINDS=${WRITE_BEHINDS:-0 8m}
OUT=${OUT:-bench-results}
LOCAL_DIR=${LOCAL_DIR:-/var/tmp/sqlbench-local}
mkdir -p "$OUT"

cargo build --release -p directnfs-sqlite --lib --examples

started=
if [[ -z ${DNFS_TEST_URL:-} ]]; then
    export DNFS_STATE_DIR=${SQLBENCH_STATE:-/tmp/directnfs-sqlbench}
    DNFS_TEST_URL=$(bash scripts/server/nfs-server.sh start "$DNFS_STATE_DIR/export" | tail -1)
    started=1
    trap 'bash scripts/server/nfs-server.sh stop >/dev/null' EXIT
fi
base=${DNFS_TEST_URL}
sep='?'; [[ $base == *\?* ]] && sep='&'

for journal in $JOURNALS; do
    for stable in $STABLES; do
        wbs=0
        [[ $stable == unstable ]] && wbs=$WRITE_BEHINDS
        for wb in $wbs; do
            name=$journal-$stable
            [[ $stable == unstable ]] && name+=-wb$wb
            echo "=== journal_mode=$journal, directnfs stable=$stable write_behind=$wb"
            target/release/examples/sqlbench --url "${base}${sep}stable=${stable}&write_behind=${wb}" \
                --journal "$journal" --local-dir "$LOCAL_DIR" \
                --json "$OUT/sqlbench-$name.json" "$@"
        done
    done
done
echo "JSON results in $OUT/sqlbench-*.json${started:+ (server started and stopped by this script)}"

#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 20), one after the
# other, starting from the committed seed corpus. New inputs go to
# fuzz/.work/corpus/<target> (not committed), crashes to fuzz/artifacts/.
# Exits non-zero as soon as a target finds a crash.
#
#   fuzz/run-all.sh 20
set -euo pipefail
secs="${1:-20}"
cd "$(dirname "$0")"
for target in $(cargo +nightly fuzz list); do
    work=".work/corpus/$target"
    mkdir -p "$work" "corpus/$target"
    echo "== $target (${secs}s)"
    cargo +nightly fuzz run "$target" "$work" "corpus/$target" -- \
        -max_total_time="$secs" -max_len=4096 -print_final_stats=1 2>&1 \
        | grep -E '^(==|#[0-9]+ +DONE|stat::number_of_executed_units|SUMMARY|.*panicked)' || true
    if [ -n "$(ls -A "artifacts/$target" 2>/dev/null)" ]; then
        echo "!! $target: crash in fuzz/artifacts/$target" >&2
        exit 1
    fi
done
echo "all targets ran ${secs}s without a crash"

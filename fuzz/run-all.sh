#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 20), JOBS targets
# at a time (default 2, DNFS_FUZZ_JOBS; one libFuzzer process per core), from
# the committed seed corpus. New inputs go to fuzz/.work/corpus/<target> (not
# committed), crashes to fuzz/artifacts/<target>/.
#
#   fuzz/run-all.sh 20        # 39 targets x 20 s, 2 at a time: about 7 min
#   DNFS_FUZZ_JOBS=1 fuzz/run-all.sh 30
#   DNFS_FUZZ_PROFILE=dev fuzz/run-all.sh 5   # unoptimised: builds in a fifth
#                                             # of the CPU time (scripts/test.sh)
#
# Every target is built first, in one cargo build. After a crash (or any
# other failure of a fuzzer) no new target starts, the running ones finish,
# and the script exits non-zero naming the targets that failed.
set -euo pipefail
secs="${1:-20}"
jobs="${DNFS_FUZZ_JOBS:-2}"
cd "$(dirname "$0")"

logs=.work/logs
mkdir -p "$logs"
case ${DNFS_FUZZ_PROFILE:-release} in
    release) profile=() ;;
    dev) profile=(--dev) ;;
    *) echo "!! DNFS_FUZZ_PROFILE must be release or dev" >&2; exit 2 ;;
esac
mapfile -t targets < <(cargo +nightly fuzz list)
echo "== building ${#targets[@]} fuzz targets (${DNFS_FUZZ_PROFILE:-release})"
cargo +nightly fuzz build "${profile[@]}" >"$logs/build.log" 2>&1 \
    || { tail -n 60 "$logs/build.log" >&2; echo "!! fuzz targets do not build" >&2; exit 1; }

failed=()
declare -A pid_target=()

# Prints the summary lines of a finished target and records a failure.
finish() { # pid status
    local target=${pid_target[$1]}
    unset "pid_target[$1]"
    grep -E '^(==|#[0-9]+ +DONE|stat::number_of_executed_units|SUMMARY|.*panicked)' \
        "$logs/$target.log" | sed "s/^/[$target] /" || true
    if [[ $2 != 0 || -n $(ls -A "artifacts/$target" 2>/dev/null) ]]; then
        echo "!! $target: fuzzer exited with status $2; crash inputs in fuzz/artifacts/$target, log in fuzz/$logs/$target.log" >&2
        tail -n 40 "$logs/$target.log" >&2
        failed+=("$target")
    fi
}

wait_one() {
    local pid status=0
    wait -n -p pid "${!pid_target[@]}" || status=$?
    finish "$pid" "$status"
}

for target in "${targets[@]}"; do
    ((${#failed[@]} == 0)) || break
    while ((${#pid_target[@]} >= jobs)); do wait_one; done
    ((${#failed[@]} == 0)) || break
    work=".work/corpus/$target"
    mkdir -p "$work" "corpus/$target"
    echo "== $target (${secs}s)"
    cargo +nightly fuzz run "${profile[@]}" "$target" "$work" "corpus/$target" -- \
        -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
        >"$logs/$target.log" 2>&1 &
    pid_target[$!]=$target
done
while ((${#pid_target[@]} > 0)); do wait_one; done

if ((${#failed[@]})); then
    echo "!! fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
echo "all ${#targets[@]} targets ran ${secs}s (${jobs} at a time) without a crash"

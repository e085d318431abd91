#!/usr/bin/env bash
# soak.sh — the fault soak: checksummed I/O through directnfs while a
# seeded schedule cuts, black-holes and restores paths, answers
# NFS3ERR_JUKEBOX and SIGKILLs and restarts the server.
#
#   scripts/ci/soak.sh [--minutes M] [--seed N] [--paths 2..4] [--timeo DS] [--blocking N]
#
# Default: 3 minutes of faults (the CI run, about 3.5 minutes in all), a
# seed from the clock. The seed is printed first; a failed run prints the
# command that replays its schedule. The last lines are the figures: faults
# injected by kind, throughput, longest caller stall, errors that reached a
# caller (must be 0), and the final verification of every block; then
# "soak: PASSED" or "soak: FAILED". Exit 0 only when it passed.
#
# Needs root (network namespaces, tc). The topology is netns.sh's
# namespace dnfs-srv, which exists once per machine: never run this beside
# the multipath tests or another soak. It is torn down on exit, whatever
# happened. The JUKEBOX proxy listens on 127.231.0.1 at the server's NFS
# port (2049 unless DNFS_NETNS_NFS_PORT says otherwise).
#
# Environment:
#   DNFS_SOAK_STATE_DIR  netns.sh state dir (default /tmp/dnfs-soak-netns)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

STATE_DIR=${DNFS_SOAK_STATE_DIR:-/tmp/dnfs-soak-netns}

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

if [[ $(id -u) != 0 ]]; then
    log "the soak needs root (network namespaces, tc)"
    exit 1
fi

minutes=3
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --minutes) minutes=${args[i + 1]:-3} ;;
        --minutes=*) minutes=${args[i]#--minutes=} ;;
        -h | --help)
            sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
            exit 0
            ;;
    esac
done
# The run itself, plus set-up, the final pass and a server restart or two;
# past this the soak has hung (its own watchdog should have said so first).
limit=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 600 }')

# shellcheck disable=SC2317  # called by the trap
teardown() {
    DNFS_NETNS_STATE_DIR=$STATE_DIR bash scripts/server/netns.sh down >/dev/null 2>&1 || true
}
trap teardown EXIT

log "building the soak"
# Through its test target, with the whole workspace selected: the binary of
# the workspace's test build (scripts/test.sh builds it before the lanes),
# where `-p directnfs-soak` alone would resolve other features and rebuild.
cargo test --workspace --release --test soak_cli --no-run

log "soak: ${minutes} min, state dir $STATE_DIR, limit ${limit}s"
rc=0
timeout --kill-after=30 "$limit" target/release/dnfs-soak --state-dir "$STATE_DIR" "$@" || rc=$?
if ((rc == 124 || rc == 137)); then
    log "the soak did not finish within ${limit}s (a hang): FAILED"
fi
exit "$rc"

#!/usr/bin/env bash
# multipath-tests.sh — the multipath failover tests (issue 3, item 8):
# crates/client/tests/multipath.rs against Ganesha in network namespace
# dnfs-srv reached over 4 veth paths (scripts/server/netns.sh).
#
#   scripts/ci/multipath-tests.sh [TEST-NAME-FILTER]
#
# Cuts, black-holes and rate-limits paths and kills the server under a
# load of checksummed 8 KiB blocks; prints the caller stalls and the 1/2/4
# path throughputs (lines starting with RESULT). Needs root. The topology
# is torn down on exit, whatever happened. Exits non-zero on failure.
#
# Environment:
#   DNFS_NETNS_STATE_DIR  netns.sh state dir (default /tmp/dnfs-multipath-netns)
#   DNFS_MULTIPATH_TIMEOUT  seconds allowed for the test run (default 600)
#   DNFS_TEST_SOCKBUF     `sockbuf` of every mount (`auto`, or bytes such as
#                         `4m`); default: the client's default
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

export DNFS_NETNS_STATE_DIR=${DNFS_NETNS_STATE_DIR:-/tmp/dnfs-multipath-netns}
TIMEOUT=${DNFS_MULTIPATH_TIMEOUT:-600}

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

if [[ $(id -u) != 0 ]]; then
    log "multipath tests need root (network namespaces, tc)"
    exit 1
fi

# shellcheck disable=SC2317  # called by the trap
teardown() {
    bash scripts/server/netns.sh down >/dev/null 2>&1 || true
}
trap teardown EXIT

log "building the multipath tests"
cargo test --workspace --release --test multipath --no-run

log "running the multipath tests (state dir $DNFS_NETNS_STATE_DIR, limit ${TIMEOUT}s)"
start=$SECONDS
rc=0
DNFS_NETNS_TESTS=1 timeout --kill-after=30 "$TIMEOUT" \
    cargo test --workspace --release --test multipath -- --test-threads=1 --nocapture "$@" || rc=$?
log "multipath tests: exit $rc after $((SECONDS - start))s"
exit "$rc"

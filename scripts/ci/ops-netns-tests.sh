#!/usr/bin/env bash
# ops-netns-tests.sh — the operations test that needs network namespaces
# (issue 15): crates/cli/tests/ops_netns.rs cuts one of two paths while 8
# directnfs processes do I/O and checks that dnfs stats, dnfs top, dnfs
# exporter and every process's alert log show it within a second, then
# logs the path's return and a server restart.
#
#   scripts/ci/ops-netns-tests.sh
#
# Needs root, tmux and the namespace topology (scripts/server/netns.sh, state dir
# /tmp/dnfs-ops-netns), which exists once per machine: run it by hand only
# as `flock /tmp/dnfs-heavy.lock scripts/ci/ops-netns-tests.sh`. The topology
# is torn down on exit. Exits non-zero on failure.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/log.sh
source "$ROOT/scripts/lib/log.sh"

if [[ $(id -u) != 0 ]]; then
    log "the ops netns test needs root (network namespaces, tc)"
    exit 1
fi

# shellcheck disable=SC2317  # called by the trap
teardown() {
    DNFS_NETNS_STATE_DIR=/tmp/dnfs-ops-netns bash scripts/server/netns.sh down >/dev/null 2>&1 || true
}
trap teardown EXIT

cargo test --workspace --release --test ops_netns --no-run
DNFS_NETNS_TESTS=1 timeout --kill-after=30 "${DNFS_OPS_NETNS_TIMEOUT:-300}" \
    cargo test --workspace --release --test ops_netns -- --nocapture

# shellcheck shell=bash
# What the server scripts (nfs-server.sh, netns.sh) share around their state
# directory. Sourced after lib/ganesha.sh (die), never executed.

# usage: the calling script's header comment (from line 2 to `set -euo`),
# on stderr; exit 2.
usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[-1]}" >&2
    exit 2
}

# take_lock: one command at a time per state directory ($STATE_DIR), for
# up to 120 s. The lock is fd 9; children close it.
take_lock() {
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/lock"
    flock -w 120 9 || die "state dir $STATE_DIR is locked by another command"
}

# shellcheck shell=bash
# Progress lines and fatal errors, as the CI, package and benchmark scripts
# print them. Sourced, never executed.

# log MESSAGE...: one progress line on stderr, "== MESSAGE".
log() { printf '== %s\n' "$*" >&2; }

# die MESSAGE...: "== error: MESSAGE" on stderr, then exit 1.
die() {
    log "error: $*"
    exit 1
}

#!/usr/bin/env bash
# capture-vectors-v41.sh — capture the golden NFSv4.1 records of
# crates/wire/testdata/ (ganesha_v41_*.bin and README-v41.md) from a real
# Ganesha.
#
#   scripts/vectors/capture-vectors-v41.sh [OUTDIR]     (default crates/wire/testdata)
#
# There is no NFSv4.1 client on these machines (libnfs 4.0 has no
# sessions), so the client is this project's own codec: the `capture_v41`
# example of crates/wire runs a scripted session (tests/v41/scenario.rs),
# checks every reply against tests/v41/facts.rs, and writes the records as
# they crossed the wire. The server is started here, with its own state
# dir, a private rpcbind (it disturbs no other server), export Pseudo
# "/export" and NFSv4.1 on (graceless); ports from DNFS_NFS_PORT /
# DNFS_MNT_PORT (default 2049 / 20048, or the next free ones).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/../.." && pwd)
SERVER_DIR=$REPO_DIR/scripts/server
LOG_TAG=capture-vectors-v41
# shellcheck source-path=SCRIPTDIR source=../server/lib/ganesha.sh
source "$SERVER_DIR/lib/ganesha.sh"

OUTDIR=$(realpath -m "${1:-$REPO_DIR/crates/wire/testdata}")
export DNFS_STATE_DIR=/tmp/directnfs-capture-v41
export DNFS_EXPORT_PATH=/export
export DNFS_NFS4=1 DNFS_NFS4_GRACE=0 DNFS_PRIVATE_RPCBIND=1
unset DNFS_NFS4_LEASE
WORK=$(mktemp -d /tmp/directnfs-capture-v41.XXXXXX)

cleanup() {
    "$SERVER_DIR/nfs-server.sh" stop >/dev/null 2>&1 || true
    rm -rf -- "$WORK"
}
trap cleanup EXIT

write_readme_header() {
    cat >"$WORK/header.md" <<HEADER
# Golden NFSv4.1 records captured from NFS-Ganesha

Each \`ganesha_v41_*.bin\` file is one complete ONC RPC record exactly as it
crossed the wire: the 4-byte record mark (RFC 5531 §11) and the RPC
message. \`crates/wire/tests/ganesha_v41.rs\` decodes them and checks the
facts below (\`tests/v41/facts.rs\`); \`tests/ganesha_v41_live.rs\` checks the
same facts against a running server.

Captured by \`scripts/vectors/capture-vectors-v41.sh\` ($(date -u +%Y-%m-%d)) from
NFS-Ganesha $(dpkg-query -W -f '\${Version}' nfs-ganesha) (Debian package, FSAL VFS) on loopback:

- server: \`scripts/server/nfs-server.sh start\` with \`DNFS_NFS4=1\` (NFSv3 and 4.1,
  \`Minor_Versions = 1\`, Graceless, numeric owners, no delegations),
  \`DNFS_EXPORT_PATH=/export\` (\`Pseudo = "/export"\`), MaxRead/MaxWrite 1 MiB;
- client: this project's codec, run by the \`capture_v41\` example of
  \`crates/wire\`: the scripted session of \`tests/v41/scenario.rs\` (AUTH_SYS
  uid 0; one client ID, one session, slot 0 only; \`sa_cachethis\` on all but
  READ and GETATTR). There is no other NFSv4.1 client on these machines.
- what it does, in order: EXCHANGE_ID, CREATE_SESSION (64 slots asked, back
  channel on the connection), RECLAIM_COMPLETE, PUTROOTFH, LOOKUP of
  "export", a LOOKUP of a missing name, OPEN with create of \`hello.txt\`
  (GUARDED4, mode 0644), the hot path's WRITE (UNSTABLE4, 41 bytes), COMMIT
  and READ, GETATTR, SETATTR (mode 0600), ACCESS, LOCK, LOCKT by another
  owner, LOCKU, TEST_STATEID, FREE_STATEID, CLOSE, OPEN by CLAIM_FH,
  OPEN by CLAIM_PREVIOUS (refused: no grace period), READDIR, LINK, RENAME
  (to \`renamed.txt\`), CREATE of a directory, LOOKUPP, REMOVE, a REMOVE re-sent
  on its slot (the reply cache answers), SECINFO_NO_NAME, the errors
  (DELEGRETURN of a made-up stateid, PUTFH of a made-up handle, a sequence id
  ahead of the slot's, an unknown session, operations without SEQUENCE),
  BIND_CONN_TO_SESSION from a second connection, DESTROY_SESSION,
  DESTROY_CLIENTID.

Known contents: \`hello.txt\` holds the 41 bytes
\`directnfs golden vector: hello, ganesha!\\n\` (the NFSv3 vectors' file).

Not captured: callbacks. Ganesha's FSAL VFS grants no delegations
(\`WND4_NOT_SUPP_FTYPE\`: only its GPFS and Ceph FSALs support them) and it
sent no CB_NULL on the back channel, so CB_COMPOUND is tested with
hand-made records only.

Handles, stateids, session and client IDs, times, fileids and change
attributes differ with every capture; the facts below are those the tests
check.

## Files and facts

HEADER
}

main() {
    ensure_packages
    "$SERVER_DIR/nfs-server.sh" stop >/dev/null 2>&1 || true
    "$SERVER_DIR/nfs-server.sh" start >/dev/null
    local url
    url=$("$SERVER_DIR/nfs-server.sh" url --vers 4.1)
    log "server: $url"
    write_readme_header
    (cd "$REPO_DIR" && cargo build -q --release -p directnfs-wire --example capture_v41)
    mkdir -p "$OUTDIR"
    DNFS_V41_README_HEADER="$WORK/header.md" \
        timeout 300 "$REPO_DIR/target/release/examples/capture_v41" "$url" "$OUTDIR"
}

main "$@"

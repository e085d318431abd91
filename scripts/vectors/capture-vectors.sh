#!/usr/bin/env bash
# capture-vectors.sh — capture real Ganesha RPC traffic on loopback and
# extract golden byte vectors into crates/wire/testdata/.
#
#   scripts/vectors/capture-vectors.sh [OUTDIR]     (default crates/wire/testdata)
#
# Starts its own Ganesha (state dir /tmp/directnfs-capture, export Pseudo
# "/export"), captures lo with tcpdump filtered on rpcbind's and the
# server's ports while libnfs tools run, then calls capture-vectors.py to
# write one .bin per chosen RPC record and the README with decoded facts.
# Stop other test servers first if you want the default ports (2049/20048)
# in the vectors; another Ganesha registered with the same rpcbind loses its
# registration while this runs (see docs/server-notes.md, "rpcbind").
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/../.." && pwd)
SERVER_DIR=$REPO_DIR/scripts/server
LOG_TAG=capture-vectors
# shellcheck source-path=SCRIPTDIR source=../server/lib/ganesha.sh
source "$SERVER_DIR/lib/ganesha.sh"

OUTDIR=${1:-$REPO_DIR/crates/wire/testdata}
export DNFS_STATE_DIR=/tmp/directnfs-capture
export DNFS_EXPORT_PATH=/export
SMALL_NAME=hello.txt
BIG_NAME=big.bin
WORK=$(mktemp -d /tmp/directnfs-capture-work.XXXXXX)
TCPDUMP_PID=

cleanup() {
    [[ -n $TCPDUMP_PID ]] && stop_pid "$TCPDUMP_PID" tcpdump INT 10
    "$SERVER_DIR/nfs-server.sh" stop >/dev/null 2>&1 || true
    rm -rf -- "$WORK"
}
trap cleanup EXIT

ensure_tools() {
    ensure_packages
    command -v tcpdump >/dev/null && command -v python3 >/dev/null && return 0
    log "installing tcpdump python3"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq tcpdump python3 >&2
}

# The known contents a decoder test can assert: one text line, and 128 KiB
# where byte i is i % 251 (a prime, so no 4-byte alignment repeats).
make_contents() {
    printf 'directnfs golden vector: hello, ganesha!\n' >"$WORK/$SMALL_NAME"
    python3 -c 'import sys; sys.stdout.buffer.write(bytes(i % 251 for i in range(131072)))' >"$WORK/$BIG_NAME"
}

# Plain `-w FILE` only: on this kernel tcpdump 4.99.3 with -U or -s 0
# counts packets "received by filter" but writes none.
start_capture() {
    # NFS_PORT, MNT_PORT: from the server's state.env, sourced in main.
    # shellcheck disable=SC2153
    local filter="tcp and host 127.0.0.1 and (port 111 or port $NFS_PORT or port $MNT_PORT)"
    tcpdump -i lo -nn -w "$WORK/capture.pcap" "$filter" </dev/null >"$WORK/tcpdump.log" 2>&1 &
    TCPDUMP_PID=$!
    wait_until 10 grep -q "listening on" "$WORK/tcpdump.log" || die "tcpdump did not start: $(cat "$WORK/tcpdump.log")"
    sleep 1
}

# tcpdump hands packets over in blocks retired by a 1 s timeout; packets of
# a block still open at SIGINT are lost. Wait for the last block first.
stop_capture() {
    sleep 3
    stop_pid "$TCPDUMP_PID" tcpdump INT 10
    TCPDUMP_PID=
    log "$(grep captured "$WORK/tcpdump.log")"
}

# Runs one libnfs tool, bounded in time; EXPECT is ok or fail.
step() {
    local expect=$1
    shift
    log "+ $*"
    if timeout 20 "$@" >>"$WORK/steps.out" 2>&1; then
        [[ $expect == ok ]] || die "expected failure: $*"
    else
        [[ $expect == fail ]] || die "failed: $* ($(tail -2 "$WORK/steps.out"))"
    fi
}

run_client_steps() {
    local base="nfs://127.0.0.1$DNFS_EXPORT_PATH" q="nfsport=$NFS_PORT&mountport=$MNT_PORT"
    step ok nfs-ls "$base"                                              # portmapper GETPORT, MNT, READDIRPLUS
    step ok nfs-cp "$WORK/$SMALL_NAME" "$base/$SMALL_NAME?$q"           # CREATE, SETATTR, WRITE, COMMIT
    step ok nfs-cp "$WORK/$BIG_NAME" "$base/$BIG_NAME?$q"
    step fail nfs-cp "$WORK/$SMALL_NAME" "$base/$SMALL_NAME?$q"         # CREATE -> NFS3ERR_EXIST
    step ok nfs-ls "$base?$q"                                           # READDIRPLUS with two entries
    step ok nfs-cp "$base/$SMALL_NAME?$q" "$WORK/out-$SMALL_NAME"       # LOOKUP, ACCESS, READ
    step ok nfs-cp "$base/$BIG_NAME?$q" "$WORK/out-$BIG_NAME"
    step ok nfs-ls -s "$base?$q"                                        # FSSTAT
    step fail nfs-cat "$base/missing.txt?$q"                            # LOOKUP -> NFS3ERR_NOENT
    step fail nfs-ls "nfs://127.0.0.1/no-such-export?$q"                # MNT -> MNT3ERR_ACCES
    cmp "$WORK/$SMALL_NAME" "$WORK/out-$SMALL_NAME"
    cmp "$WORK/$BIG_NAME" "$WORK/out-$BIG_NAME"
}

write_readme_header() {
    cat >"$WORK/header.md" <<EOF
# Golden RPC records captured from NFS-Ganesha

Each \`.bin\` file is one complete ONC RPC record exactly as it crossed the
wire: the 4-byte record-marking header(s) (RFC 5531 §11, top bit = last
fragment) followed by the RPC message. Load them with \`include_bytes!\`.
The NFSv4.1 records (\`ganesha_v41_*.bin\`) have their own README:
\`README-v41.md\` (\`scripts/vectors/capture-vectors-v41.sh\`).

Captured by \`scripts/vectors/capture-vectors.sh\` ($(date -u +%Y-%m-%d)), with
NFS-Ganesha $(dpkg-query -W -f '${Version}' nfs-ganesha) and rpcbind $(dpkg-query -W -f '${Version}' rpcbind)
(Debian packages), libnfs-utils $(dpkg-query -W -f '${Version}' libnfs-utils) as the client, on loopback:

- server: \`scripts/server/nfs-server.sh start\` with \`DNFS_EXPORT_PATH=/export\`
  (Ganesha \`Pseudo = "/export"\`, \`Mount_Path_Pseudo = true\`, NFSv3 only,
  MaxRead/MaxWrite/PrefRead/PrefWrite = 1048576), NFS port $NFS_PORT, MOUNT
  port $MNT_PORT;
- capture: \`tcpdump -i lo -nn -w capture.pcap 'tcp and host 127.0.0.1 and (port 111 or port $NFS_PORT or port $MNT_PORT)'\`;
- client steps, in order (\`B=nfs://127.0.0.1/export\`, \`Q=nfsport=$NFS_PORT&mountport=$MNT_PORT\`):
  1. \`nfs-ls \$B\` (no ports: asks the portmapper, PORTMAP v2 GETPORT)
  2. \`nfs-cp hello.txt \$B/hello.txt?\$Q\` (CREATE, SETATTR, UNSTABLE WRITE, COMMIT)
  3. \`nfs-cp big.bin \$B/big.bin?\$Q\`
  4. \`nfs-cp hello.txt \$B/hello.txt?\$Q\` again (refused: CREATE gets NFS3ERR_EXIST)
  5. \`nfs-ls \$B?\$Q\` (READDIRPLUS listing both files)
  6. \`nfs-cp \$B/hello.txt?\$Q out\` and the same for big.bin (LOOKUP, ACCESS, READ)
  7. \`nfs-ls -s \$B?\$Q\` (FSSTAT)
  8. \`nfs-cat \$B/missing.txt?\$Q\` (LOOKUP gets NFS3ERR_NOENT)
  9. \`nfs-ls nfs://127.0.0.1/no-such-export?\$Q\` (MNT gets MNT3ERR_ACCES: Ganesha
     answers ACCES, not NOENT, for an unknown export)
- extraction: \`scripts/vectors/capture-vectors.py\` (stdlib Python) reassembles the
  TCP streams, splits records, pairs calls and replies by XID and decodes the
  facts below independently of the Rust decoders.

Known file contents:

- \`hello.txt\`: the $(wc -c <"$WORK/$SMALL_NAME") bytes \`directnfs golden vector: hello, ganesha!\\n\` (ASCII, one newline).
- \`big.bin\`: 131072 bytes, byte \`i\` = \`i % 251\`.

Facts that hold for every capture: the getport reply comes from rpcbind, not
Ganesha; every call uses AUTH_SYS (flavor 1) and every reply has an AUTH_NONE
verifier; every record is one fragment (even the 128 KiB READ reply);
each \`_call\` file is the call of the \`_reply\` file of the same name, so
their XIDs match; the WRITE reply's \`verf\` equals the COMMIT reply's: its
first 4 bytes are Ganesha's start time in seconds, little-endian (the
\`epoch\` in its log), the last 4 are zero; libnfs writes UNSTABLE, then
COMMITs. The extraction script checks these and fails if one breaks.
Handles, XIDs, times, fileids and free space change with each capture: the
values below are those of the files committed here.

## Files and facts

EOF
}

main() {
    ensure_tools
    "$SERVER_DIR/nfs-server.sh" stop >/dev/null 2>&1 || true
    "$SERVER_DIR/nfs-server.sh" start >/dev/null
    # shellcheck disable=SC1091
    source "$DNFS_STATE_DIR/state.env"
    make_contents
    start_capture
    run_client_steps
    stop_capture
    write_readme_header
    python3 "$SCRIPT_DIR/capture-vectors.py" "$WORK/capture.pcap" "$OUTDIR" \
        --ports "111,$NFS_PORT,$MNT_PORT" \
        --small-file "$SMALL_NAME" --small-content "$WORK/$SMALL_NAME" \
        --big-file "$BIG_NAME" --big-content "$WORK/$BIG_NAME" \
        --readme-header "$WORK/header.md"
    if [[ ${KEEP_PCAP:-0} == 1 ]]; then
        cp "$WORK/capture.pcap" /tmp/directnfs-capture.pcap
        log "pcap kept in /tmp/directnfs-capture.pcap"
    fi
}

main "$@"

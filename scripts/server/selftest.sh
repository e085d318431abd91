#!/usr/bin/env bash
# selftest.sh — end-to-end checks of nfs-server.sh and netns.sh with the
# libnfs tools. Every step is bounded in time; prints one PASS/FAIL line per
# check and ends with "N passed, N failed" (exit 1 if any failed).
#
#   scripts/server/selftest.sh [server|netns|all]     (default all)
#
# server: runs nfs-server.sh inside a throw-away network + mount namespace
#   (own loopback, own /run), so it starts its own rpcbind on port 111 and
#   never touches servers or rpcbind registrations on the host.
# netns: brings up the 2-path topology (skipped if namespace dnfs-srv is
#   already in use), checks both paths with and without ports, cut, blackhole,
#   restore, a 200 Mbit/s rate limit and restart-server, then tears down.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=selftest
# shellcheck source-path=SCRIPTDIR source=lib/ganesha.sh
source "$SCRIPT_DIR/lib/ganesha.sh"

PASSED=0
FAILED=0
WORK=
NETNS_UP=0

cleanup() {
    if [[ $NETNS_UP == 1 ]]; then
        DNFS_NETNS_STATE_DIR=$WORK/netns "$SCRIPT_DIR/netns.sh" down >/dev/null 2>&1 || true
    fi
    if [[ ${KEEP_WORK:-0} == 1 ]]; then
        log "work dir kept: $WORK"
    else
        rm -rf -- "$WORK"
    fi
}

# check NAME CMD...: runs CMD, records PASS/FAIL.
check() {
    local name=$1
    shift
    if "$@" >>"$WORK/checks.log" 2>&1; then
        echo "PASS $name"
        PASSED=$((PASSED + 1))
    else
        echo "FAIL $name (see output above this line in $WORK/checks.log)"
        tail -5 "$WORK/checks.log" | sed 's/^/    /'
        FAILED=$((FAILED + 1))
    fi
}

# True when CMD... fails within SECS seconds (and not by timing out).
fails_fast() {
    local secs=$1 rc=0
    shift
    timeout "$secs" "$@" || rc=$?
    ((rc != 0 && rc != 124))
}

# True when CMD... is still running after SECS seconds (timeout's 124).
hangs() {
    local secs=$1 rc=0
    shift
    timeout "$secs" "$@" || rc=$?
    ((rc == 124))
}

url_base() { echo "${1%%\?*}"; }
url_query() { echo "${1#*\?}"; }

copy_in_out() {
    local url=$1 name=$2 base q
    base=$(url_base "$url")
    q=$(url_query "$url")
    timeout 20 nfs-cp "$WORK/payload" "$base/$name?$q" &&
        timeout 20 nfs-cp "$base/$name?$q" "$WORK/back-$name" &&
        cmp "$WORK/payload" "$WORK/back-$name"
}

# --- server --------------------------------------------------------------

# Runs inside `unshare -n -m`: lo up, a veth with a 10.231 address (Ganesha
# resolves Bind_addr with AI_ADDRCONFIG, which needs a non-loopback
# address), a private /run for rpcbind's socket.
server_checks_inside() {
    ip link set lo up
    ip link add dnfs-st0 type veth peer name dnfs-st1
    ip addr add 10.231.250.1/24 dev dnfs-st0
    ip link set dnfs-st0 up
    ip link set dnfs-st1 up
    mount -t tmpfs -o mode=0755 dnfs-selftest-run /run
    mkdir -p /run/rpcbind
    chown _rpc /run/rpcbind 2>/dev/null || true
    export DNFS_STATE_DIR=$WORK/server
    local S=$SCRIPT_DIR/nfs-server.sh url base
    head -c 1000000 /dev/urandom >"$WORK/payload"

    check "server: start prints the URL" bash -c "\"$S\" start | tail -1 | grep -q '^nfs://127.0.0.1/.*?nfsport=[0-9]*&mountport=[0-9]*$'"
    url=$("$S" url)
    base=$(url_base "$url")
    check "server: start again is idempotent" bash -c "[[ \$(\"$S\" start) == '$url' ]]"
    check "server: status ends with the URL" bash -c "[[ \$(\"$S\" status | tail -1) == '$url' ]]"
    check "server: nfs-ls with ports" timeout 10 nfs-ls "$url"
    check "server: nfs-cp in and out" copy_in_out "$url" one.bin
    check "server: nfs-cp refuses to overwrite" fails_fast 10 nfs-cp "$WORK/payload" "$base/one.bin?$(url_query "$url")"
    check "server: rpcinfo lists nfs and mountd" bash -c "rpcinfo -p 127.0.0.1 | grep -q nfs && rpcinfo -p 127.0.0.1 | grep -q mountd"
    check "server: nfs-ls via portmapper" timeout 10 nfs-ls "$base"
    check "server: restart" "$S" restart --down 1
    check "server: data survives restart" bash -c "timeout 10 nfs-ls '$url' | grep -q one.bin"
    check "server: restart --kill" "$S" restart --kill --down 1
    check "server: nfs-ls after kill" timeout 10 nfs-ls "$url"
    local gpid
    gpid=$(cat "$WORK/server/ganesha.pid")
    check "server: stop" "$S" stop
    check "server: nothing left running" stopped_and_unregistered "$gpid"
    check "server: status says down" bash -c "\"$S\" status; [[ \$? == 3 ]]"
    export DNFS_STATE_DIR=$WORK/server-root DNFS_EXPORT_PATH=/
    mkdir -p "$WORK/rootexport"
    check "server: export path / (Pseudo)" bash -c "\"$S\" start '$WORK/rootexport' | tail -1 | grep -q '^nfs://127.0.0.1/?'"
    # copy_in_out appends /two.bin to nfs://127.0.0.1/: nfs://127.0.0.1//two.bin
    check "server: file in an export of / is nfs://host//file" copy_in_out "$("$S" url)" two.bin
    check "server: stop (export /)" "$S" stop
    unset DNFS_EXPORT_PATH
    private_rpcbind_checks
    echo "$PASSED $FAILED" >"$WORK/server.counts"
}

# DNFS_PRIVATE_RPCBIND=1, the mode for servers side by side on one host:
# two servers, each with an rpcbind of its own that only it can see, while
# nothing answers on port 111 (the shared-mode rpcbind above was ours and
# is stopped). Every ready check of start and restart must then do without
# a portmapper.
private_rpcbind_checks() {
    local S=$SCRIPT_DIR/nfs-server.sh p1=$WORK/server-private1 p2=$WORK/server-private2 u1 u2
    check "server: no rpcbind answers on port 111" bash -c "! timeout 5 rpcinfo -p 127.0.0.1"
    check "server: private rpcbind: start" env DNFS_PRIVATE_RPCBIND=1 DNFS_STATE_DIR="$p1" "$S" start
    check "server: private rpcbind: a second server side by side" \
        env DNFS_PRIVATE_RPCBIND=1 DNFS_STATE_DIR="$p2" "$S" start
    u1=$(DNFS_STATE_DIR=$p1 "$S" url) || true
    u2=$(DNFS_STATE_DIR=$p2 "$S" url) || true
    check "server: private rpcbind: the two have their own ports" test "$u1" != "$u2"
    check "server: private rpcbind: both answer" bash -c "timeout 10 nfs-ls '$u1' && timeout 10 nfs-ls '$u2'"
    check "server: private rpcbind: status says private" \
        bash -c "DNFS_STATE_DIR='$p1' \"$S\" status | grep -qx rpcbind_mode=private"
    check "server: private rpcbind: still nothing on port 111" bash -c "! timeout 5 rpcinfo -p 127.0.0.1"
    check "server: private rpcbind: restart --kill" env DNFS_STATE_DIR="$p1" "$S" restart --kill --down 1
    check "server: private rpcbind: both answer after the restart" \
        bash -c "timeout 10 nfs-ls '$u1' && timeout 10 nfs-ls '$u2'"
    local pids
    pids="$(cat "$p1/ganesha.pid" "$p2/ganesha.pid" 2>/dev/null) $(
        DNFS_STATE_DIR=$p1 "$S" status 2>/dev/null | sed -n 's/^rpcbind_pid=//p'
        DNFS_STATE_DIR=$p2 "$S" status 2>/dev/null | sed -n 's/^rpcbind_pid=//p'
    )" || true
    check "server: private rpcbind: stop both" \
        bash -c "DNFS_STATE_DIR='$p1' \"$S\" stop && DNFS_STATE_DIR='$p2' \"$S\" stop"
    # shellcheck disable=SC2086  # one word per PID
    check "server: private rpcbind: both Ganeshas and both rpcbinds gone" all_exited $pids
}

# True when every PID (at least 4: two servers and their rpcbinds) has exited.
all_exited() {
    (($# >= 4)) || return 1
    local pid
    for pid in "$@"; do
        [[ ! -d /proc/$pid ]] || is_zombie "$pid" || return 1
    done
}

stopped_and_unregistered() {
    local pid=$1
    { [[ ! -d /proc/$pid ]] || is_zombie "$pid"; } && ! timeout 5 rpcinfo -p 127.0.0.1
}

server_checks() {
    local rc=0
    SELFTEST_INSIDE=1 timeout 300 unshare -n -m --propagation private -- "${BASH_SOURCE[0]}" server-inside "$WORK" || rc=$?
    if [[ -f $WORK/server.counts ]]; then
        read -r p f <"$WORK/server.counts"
        PASSED=$((PASSED + p))
        FAILED=$((FAILED + f))
    else
        echo "FAIL server: checks did not finish (rc $rc)"
        FAILED=$((FAILED + 1))
    fi
}

# --- netns ---------------------------------------------------------------

netns_checks() {
    if ip netns list | grep -qw dnfs-srv; then
        echo "SKIP netns: namespace dnfs-srv is in use (netns.sh down first)"
        return 0
    fi
    export DNFS_NETNS_STATE_DIR=$WORK/netns
    local N=$SCRIPT_DIR/netns.sh u1 u2
    head -c 52428800 /dev/zero >"$WORK/big"
    NETNS_UP=1
    check "netns: up 2" "$N" up 2
    u1=$("$N" urls | sed -n 1p)
    u2=$("$N" urls | sed -n 2p)
    check "netns: path 1 URL is 10.231.1.2" grep -q '^nfs://10.231.1.2/' <<<"$u1"
    check "netns: nfs-ls path 1 with ports" timeout 10 nfs-ls "$u1"
    check "netns: nfs-ls path 2 with ports" timeout 10 nfs-ls "$u2"
    check "netns: nfs-ls path 1 via the namespace portmapper" timeout 10 nfs-ls "$(url_base "$u1")"
    check "netns: nfs-ls path 2 via the namespace portmapper" timeout 10 nfs-ls "$(url_base "$u2")"
    check "netns: cut 1" "$N" cut 1
    check "netns: cut path fails at once" fails_fast 3 nfs-ls "$u1"
    check "netns: path 2 works while 1 is cut" timeout 10 nfs-ls "$u2"
    check "netns: restore 1" "$N" restore 1
    check "netns: restored path works" timeout 10 nfs-ls "$u1"
    check "netns: blackhole 1" "$N" blackhole 1
    check "netns: blackholed path hangs" hangs 5 nfs-ls "$u1"
    check "netns: restore 1 (blackhole)" "$N" restore 1
    check "netns: path works after blackhole" timeout 10 nfs-ls "$u1"
    check "netns: rate limit slows a 50 MiB copy" rate_check "$u1"
    check "netns: restart-server --kill" "$N" restart-server --kill --down 1
    check "netns: both paths work after restart" bash -c "timeout 10 nfs-ls '$u1' && timeout 10 nfs-ls '$u2'"
    check "netns: down" "$N" down
    NETNS_UP=0
    check "netns: namespace and links gone" bash -c "! ip netns list | grep -qw dnfs-srv && ! ip link show dnfs-h1"
}

# 50 MiB at 200 Mbit/s takes >= 2 s; unlimited it takes well under 1 s.
rate_check() {
    local url=$1 base q t0 fast slow
    base=$(url_base "$url")
    q=$(url_query "$url")
    t0=$(date +%s%N)
    timeout 60 nfs-cp "$WORK/big" "$base/fast.bin?$q"
    fast=$((($(date +%s%N) - t0) / 1000000))
    "$SCRIPT_DIR/netns.sh" rate 1 200
    t0=$(date +%s%N)
    timeout 60 nfs-cp "$WORK/big" "$base/slow.bin?$q"
    slow=$((($(date +%s%N) - t0) / 1000000))
    "$SCRIPT_DIR/netns.sh" rate 1 off
    echo "50 MiB: unlimited ${fast} ms, 200 Mbit/s ${slow} ms"
    ((slow >= 1800 && slow > 2 * fast))
}

main() {
    local what=${1:-all}
    if [[ $what == server-inside ]]; then
        WORK=$2
        server_checks_inside
        return 0
    fi
    ensure_packages
    WORK=$(mktemp -d /tmp/directnfs-selftest.XXXXXX)
    trap cleanup EXIT
    case $what in
        server) server_checks ;;
        netns) netns_checks ;;
        all) server_checks; netns_checks ;;
        *) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
    esac
    echo "$PASSED passed, $FAILED failed"
    ((FAILED == 0))
}

main "$@"

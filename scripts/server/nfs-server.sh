#!/usr/bin/env bash
# nfs-server.sh — one NFS-Ganesha (NFSv3, optionally NFSv4.1) on loopback
# for directnfs tests.
#
#   nfs-server.sh start [DIR]      start (or find running) and print the URL
#   nfs-server.sh stop             stop exactly the server we started
#   nfs-server.sh status           key=value lines, the URL last; exit 3 if down
#   nfs-server.sh url [--vers 3|4.1]
#                                  the URL only (v3 form unless --vers 4.1);
#                                  exit 3 if down
#   nfs-server.sh restart [--kill] [--down SECS] [--grace SECS] [--lease SECS]
#                                  stop (SIGTERM, or SIGKILL with --kill), stay
#                                  down SECS (default 2), start the same export
#                                  on the same ports (--grace: with this NFSv4
#                                  grace period from now on; --lease: this
#                                  NFSv4 lease time, "default" for Ganesha's)
#
# The last line on stdout of start/status/url is the URL:
#   nfs://127.0.0.1/<export path>?nfsport=N&mountport=M
# With NFSv4.1 on, `url --vers 4.1` prints the v4.1 form (no MOUNT protocol;
# the path is the export's pseudo-file-system path):
#   nfs://127.0.0.1/<export path>?vers=4.1&nfsport=N
#
# Environment:
#   DNFS_STATE_DIR     state directory (default /tmp/directnfs-server)
#   DNFS_EXPORT_PATH   path clients mount, Ganesha's Pseudo (default: DIR)
#   DNFS_NFS_PORT      NFS port (default 2049, or the next free one)
#   DNFS_MNT_PORT      MOUNT port (default 20048, or the next free one)
#   DNFS_BIND_ADDR     address to listen on (default 127.0.0.1)
#   DNFS_START_TIMEOUT seconds to wait for the server to answer (default 30)
#   DNFS_PRIVATE_RPCBIND=1  give this server an rpcbind of its own (unix
#                      socket only, private mount namespace): servers side
#                      by side stop breaking each other, but portmapper
#                      clients cannot reach it; use the ports in the URL
#   DNFS_KEEP_EXPORT=1 `stop` keeps an export dir it created
#   DNFS_MAX_IO        export MaxRead/MaxWrite (default 1048576; "server-default"
#                      omits them: FSINFO then advertises 64 MiB)
#   DNFS_ATTR_CACHE    the export's attribute cache: off (default, the
#                      attributes read at every call: Ganesha's cache can
#                      answer a size from before a completed WRITE) or
#                      "server-default" (Ganesha's cache, for I/O on files
#                      whose size does not change: the demo)
#   DNFS_NFS4=1        serve NFSv4.1 too (Protocols = 3, 4; Minor_Versions = 1),
#                      with client records in STATE_DIR/v4recovery
#   DNFS_NFS4_GRACE    NFSv4 grace period in seconds after a start (default 0:
#                      none, Graceless; reclaim tests want a real one; during
#                      it NFSv3 SETATTR gets NFS3ERR_JUKEBOX too)
#   DNFS_NFS4_LEASE    NFSv4 lease time in seconds (default: Ganesha's 60)
#   DNFS_NLM=1         turn Ganesha's lock manager on (NLM v4 for NFSv3
#                      locks, Enable_NLM) with an rpc.statd (nfs-common) for
#                      its NSM side. Needs root: the server, its rpcbind and
#                      statd run in a network namespace of their own
#                      (DNFS_NLM_NETNS, default nlm-dnfs; veth addresses
#                      DNFS_NLM_NET.1 on the host, .2 the server, default
#                      10.231.200), so clients find NLM through the
#                      server's portmapper (port 111 of .2) as they would
#                      a real filer's, and the host's rpcbind is untouched
#   DNFS_NLM_PORT      NLM port (default 32803); DNFS_STATD_PORT statd's (32765)
#   DNFS_NLM_PATHS     network paths to the DNFS_NLM server (1-4, default 1):
#                      path K > 1 is one more veth pair, NET.(4K-3) on the
#                      host and NET.(4K-2) the server (/30 each), and a
#                      policy rule sends what is bound to NET.(4K-3) to every
#                      NET.x over path K; the server
#                      listens on every address of its namespace. `status`
#                      prints pathK_host_if, pathK_server (and the netns)
#                      for tests that fault a path
#   DNFS_NLM_BY_ADDRESS=1  the lock manager keys clients by address
#                      (Ganesha's default), not by host name (NSM_Use_Caller_Name,
#                      what these servers do otherwise)
#   DNFS_KRB5=1        Kerberos (RPCSEC_GSS): the export takes SecType krb5,
#                      krb5i, krb5p and sys, and Ganesha accepts the nfs/
#                      principals of the realm that scripts/server/kdc.sh runs
#                      (start it first, with the same DNFS_KDC_STATE_DIR);
#                      Ganesha gets that realm's KRB5_CONFIG and KRB5_KTNAME,
#                      and maps a principal USER@REALM to the local account
#                      USER (STATE_DIR/idmapd.conf, Local-Realms = REALM):
#                      kdc.sh's postgres@REALM is the postgres user; one with
#                      no account here (dnfsuser) is the anonymous uid
#   DNFS_KRB5P_EXPORT  with DNFS_KRB5=1: a second export of this directory
#                      (made, mode 0777; its Pseudo path is the directory)
#                      that takes krb5p only: a client at sec=sys, krb5 or
#                      krb5i must be refused. `status` prints its URL as
#                      krb5p_url= (NFSv3 form; the same ports)
#
# Ganesha needs rpcbind: we use a running one, or start our own and stop it
# again on `stop`. Only one Ganesha may register with one rpcbind (see
# docs/server-notes.md, "rpcbind"); clients given nfsport/mountport never
# need it.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=nfs-server
# shellcheck source-path=SCRIPTDIR source=lib/ganesha.sh
source "$SCRIPT_DIR/lib/ganesha.sh"
# shellcheck source-path=SCRIPTDIR source=lib/state.sh
source "$SCRIPT_DIR/lib/state.sh"
# shellcheck source-path=SCRIPTDIR source=lib/krb5.sh
source "$SCRIPT_DIR/lib/krb5.sh"

STATE_DIR=${DNFS_STATE_DIR:-/tmp/directnfs-server}
START_TIMEOUT=${DNFS_START_TIMEOUT:-30}
GANESHA_WRAPPER=()
# State variables come only from the state file, never from the caller.
unset BIND_ADDR NFS_PORT MNT_PORT EXPORT_DIR EXPORT_PATH EXPORT_CREATED RPCBIND_STARTED RPCBIND_PID RPCBIND_MODE
unset NFS4 NFS4_GRACE NFS4_LEASE NLM NLM_PORT STATD_PORT STATD_PID NETNS NETNS_CREATED NLM_PATHS NLM_BY_ADDRESS
unset KRB5 KRB5_CONF_FILE KRB5_KEYTAB KRB5P_EXPORT
RPCBIND_NS=()

STATE_FILE=$STATE_DIR/state.env
CONF=$STATE_DIR/ganesha.conf
GANESHA_LOG=$STATE_DIR/ganesha.log
GANESHA_OUT=$STATE_DIR/ganesha.out
GANESHA_PIDFILE=$STATE_DIR/ganesha.pid
RECOVERY_ROOT=$STATE_DIR/v4recovery



# --- state ---------------------------------------------------------------

load_state() {
    [[ -f $STATE_FILE ]] || return 1
    # shellcheck disable=SC1090
    source "$STATE_FILE"
    RPCBIND_MODE=${RPCBIND_MODE:-shared}
    NFS4=${NFS4:-0}
    NFS4_GRACE=${NFS4_GRACE:-0}
    NFS4_LEASE=${NFS4_LEASE:-}
    NLM=${NLM:-0}
    NLM_PORT=${NLM_PORT:-}
    STATD_PORT=${STATD_PORT:-}
    STATD_PID=${STATD_PID:-}
    NETNS=${NETNS:-}
    NETNS_CREATED=${NETNS_CREATED:-0}
    NLM_PATHS=${NLM_PATHS:-1}
    NLM_BY_ADDRESS=${NLM_BY_ADDRESS:-0}
    KRB5=${KRB5:-0}
    KRB5_CONF_FILE=${KRB5_CONF_FILE:-}
    KRB5_KEYTAB=${KRB5_KEYTAB:-}
    KRB5P_EXPORT=${KRB5P_EXPORT:-}
}

save_state() {
    cat >"$STATE_FILE" <<EOF
BIND_ADDR=$BIND_ADDR
NFS_PORT=$NFS_PORT
MNT_PORT=$MNT_PORT
EXPORT_DIR=$EXPORT_DIR
EXPORT_PATH=$EXPORT_PATH
EXPORT_CREATED=$EXPORT_CREATED
RPCBIND_STARTED=$RPCBIND_STARTED
RPCBIND_PID=$RPCBIND_PID
RPCBIND_MODE=$RPCBIND_MODE
NFS4=$NFS4
NFS4_GRACE=$NFS4_GRACE
NFS4_LEASE=$NFS4_LEASE
NLM=$NLM
NLM_PORT=$NLM_PORT
STATD_PORT=$STATD_PORT
STATD_PID=$STATD_PID
NETNS=$NETNS
NETNS_CREATED=$NETNS_CREATED
NLM_PATHS=$NLM_PATHS
NLM_BY_ADDRESS=$NLM_BY_ADDRESS
KRB5=$KRB5
KRB5_CONF_FILE=$KRB5_CONF_FILE
KRB5_KEYTAB=$KRB5_KEYTAB
KRB5P_EXPORT=$KRB5P_EXPORT
EOF
}

server_url() {
    echo "nfs://$BIND_ADDR$EXPORT_PATH?nfsport=$NFS_PORT&mountport=$MNT_PORT"
}

# The NFSv4.1 URL: no MOUNT port, the path is the pseudo-file-system path.
server_url41() {
    echo "nfs://$BIND_ADDR$EXPORT_PATH?vers=4.1&nfsport=$NFS_PORT"
}

ganesha_pid() {
    cat "$GANESHA_PIDFILE" 2>/dev/null || true
}

# Running means: our pid file names a live ganesha.nfsd using our config.
ganesha_running() {
    pid_is "$(ganesha_pid)" "$CONF"
}

# --- rpcbind -------------------------------------------------------------

# Shared mode (default): uses a responding rpcbind, else starts one in the
# foreground mode (-f) in its own session so that $! is its PID. Without
# -w: a warm start would bring back stale registrations of a previous
# server. (-h ADDR crashes rpcbind 1.2.6 with a double free, so it listens
# on all addresses.)
# Private mode (DNFS_PRIVATE_RPCBIND=1): an rpcbind of our own that listens
# only on a unix socket in a private mount namespace, where Ganesha is
# started too; several servers can then run side by side without
# unregistering each other, but only clients given the ports reach them.
ensure_rpcbind() {
    if [[ ${RPCBIND_STARTED:-0} == 1 ]] && pid_comm_is "${RPCBIND_PID:-}" rpcbind; then
        use_rpcbind
        return 0
    fi
    RPCBIND_STARTED=0
    RPCBIND_PID=
    if [[ $RPCBIND_MODE == netns ]]; then
        ensure_netns
        start_private_rpcbind "$STATE_DIR/rpcbind.log" "" ip netns exec "$NETNS"
    elif [[ $RPCBIND_MODE == private ]]; then
        write_unix_only_netconfig "$STATE_DIR/netconfig"
        start_private_rpcbind "$STATE_DIR/rpcbind.log" "$STATE_DIR/netconfig"
    elif timeout 5 rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
        log "using the rpcbind already running"
        warn_if_registered
        use_rpcbind
        return 0
    else
        log "starting rpcbind"
        setsid rpcbind -f </dev/null >>"$STATE_DIR/rpcbind.log" 2>&1 9>&- &
        RPCBIND_PID=$!
    fi
    RPCBIND_STARTED=1
    save_state
    use_rpcbind
    if ! wait_until 10 pid_comm_is "$RPCBIND_PID" rpcbind || ! wait_until 10 rpcbind_answers; then
        show_log_tail "$STATE_DIR/rpcbind.log"
        die "rpcbind did not come up"
    fi
}

# Private mode: Ganesha and our rpcinfo checks run in rpcbind's mount
# namespace, where its unix socket is.
use_rpcbind() {
    if [[ $RPCBIND_MODE == netns ]]; then
        RPCBIND_NS=(nsenter -t "$RPCBIND_PID" -m -n --)
    elif [[ $RPCBIND_MODE == private ]]; then
        RPCBIND_NS=(nsenter -t "$RPCBIND_PID" -m --)
    else
        RPCBIND_NS=()
    fi
    GANESHA_WRAPPER=("${RPCBIND_NS[@]}")
}

rpcbind_answers() {
    if [[ $RPCBIND_MODE == private || $RPCBIND_MODE == netns ]]; then
        "${RPCBIND_NS[@]}" timeout 5 rpcinfo | grep portmapper >/dev/null
    else
        timeout 5 rpcinfo -p 127.0.0.1
    fi
}

# True when rpcbind lists NFS and MOUNT (TCP) at our ports. The private
# one is asked over its unix socket (`rpcinfo` without a host), which
# prints universal addresses: port 2049 is "...8.1".
rpcbind_has_us() {
    local listing
    if [[ $RPCBIND_MODE == private ]]; then
        listing=$("${RPCBIND_NS[@]}" timeout 5 rpcinfo 2>/dev/null) || return 1
        grep -Eq "^ *100003 +3 +tcp +[0-9.]+\.$((NFS_PORT / 256))\.$((NFS_PORT % 256)) " <<<"$listing" &&
            grep -Eq "^ *100005 +3 +tcp +[0-9.]+\.$((MNT_PORT / 256))\.$((MNT_PORT % 256)) " <<<"$listing"
    else
        local at=127.0.0.1
        [[ $RPCBIND_MODE == netns ]] && at=$BIND_ADDR
        listing=$(timeout 5 rpcinfo -p "$at" 2>/dev/null) || return 1
        awk -v p="$NFS_PORT" '$1 == 100003 && $3 == "tcp" && $4 == p {f=1} END {exit !f}' <<<"$listing" &&
            awk -v p="$MNT_PORT" '$1 == 100005 && $3 == "tcp" && $4 == p {f=1} END {exit !f}' <<<"$listing" &&
            { [[ $NLM != 1 ]] || awk -v p="$NLM_PORT" '$1 == 100021 && $2 == 4 && $3 == "tcp" && $4 == p {f=1} END {exit !f}' <<<"$listing"; }
    fi
}

# Another Ganesha registered with the shared rpcbind loses its
# registrations when we start (docs/server-notes.md, "rpcbind"): say so.
warn_if_registered() {
    local port
    port=$(timeout 5 rpcinfo -p 127.0.0.1 2>/dev/null | awk '$1 == 100003 && $3 == "tcp" {print $4; exit}')
    if [[ -n $port && $port != "$NFS_PORT" ]]; then
        log "warning: another NFS server (port $port) is registered with rpcbind and loses that"
        log "  registration now (its clients given explicit ports are unaffected); DNFS_PRIVATE_RPCBIND=1 avoids this"
    fi
}

# --- DNFS_NLM: the network namespace and rpc.statd -------------------------

# The namespace NETNS with a veth pair: NET.1 on the host, NET.2 (the
# server's BIND_ADDR) inside, and loopback up (Ganesha reaches statd
# through it); with NLM_PATHS > 1 one more pair per path (path_addrs).
# Made once; kept until stop.
ensure_netns() {
    if ip netns list | grep -qw "$NETNS"; then
        return 0
    fi
    local net=${BIND_ADDR%.*} k host_if ns_if host_addr srv_addr
    log "making network namespace $NETNS ($net.1 here, $BIND_ADDR the server, $NLM_PATHS path(s))"
    ip netns add "$NETNS"
    NETNS_CREATED=1
    save_state
    ip netns exec "$NETNS" ip link set lo up
    for ((k = 1; k <= NLM_PATHS; k++)); do
        read -r host_if ns_if host_addr srv_addr <<<"$(path_addrs "$k")"
        ip link add "$host_if" type veth peer name "$ns_if"
        ip link set "$ns_if" netns "$NETNS"
        ip addr add "$host_addr/30" dev "$host_if"
        ip link set "$host_if" up
        ip netns exec "$NETNS" ip addr add "$srv_addr/30" dev "$ns_if"
        ip netns exec "$NETNS" ip link set "$ns_if" up
        if ((k > 1)); then
            # Connections bound to this path's host address reach every
            # server address over this path (a lock manager keeps a
            # client's locks per server address: NLM changes route, not
            # address).
            ip route replace "$net.0/24" dev "$host_if" table "$(route_table "$k")"
            ip rule add from "$host_addr" table "$(route_table "$k")"
        fi
    done
}

# The routing table of path K's policy rule (from its host address).
route_table() {
    local net=${BIND_ADDR%.*}
    echo $((10000 + ${net##*.} * 10 + $1))
}

# Path K of the namespace: host interface, server interface, host address,
# server address. Path 1 is NET.1 <-> NET.2 (BIND_ADDR); path K, NET.(4K-3)
# <-> NET.(4K-2).
path_addrs() {
    local k=$1 net=${BIND_ADDR%.*}
    if ((k == 1)); then
        echo "${NETNS:0:12}-h ${NETNS:0:12}-n $net.1 $net.2"
    else
        echo "${NETNS:0:11}-h$k ${NETNS:0:11}-n$k $net.$((4 * k - 3)) $net.$((4 * k - 2))"
    fi
}

remove_netns_if_ours() {
    [[ ${NETNS_CREATED:-0} == 1 && -n $NETNS ]] || return 0
    log "removing network namespace $NETNS"
    ip netns del "$NETNS" 2>/dev/null || true
    local k
    for ((k = 1; k <= ${NLM_PATHS:-1}; k++)); do
        ip link del "$(path_addrs "$k" | cut -d' ' -f1)" 2>/dev/null || true
        if ((k > 1)); then
            ip rule del from "$(path_addrs "$k" | cut -d' ' -f3)" table "$(route_table "$k")" 2>/dev/null || true
            ip route flush table "$(route_table "$k")" 2>/dev/null || true
        fi
    done
    NETNS_CREATED=0
}

# rpc.statd in rpcbind's namespaces, before Ganesha (its lock manager
# registers with the same rpcbind and asks statd to monitor each client).
ensure_statd() {
    [[ $NLM == 1 ]] || return 0
    if pid_comm_is "${STATD_PID:-}" rpc.statd; then
        return 0
    fi
    start_statd "$STATE_DIR/statd" "$STATD_PORT" "$STATE_DIR/statd.log"
    save_state
    if ! wait_until 10 rpc_null_ok "$BIND_ADDR" "$STATD_PORT" 100024 1; then
        show_log_tail "$STATE_DIR/statd.log"
        die "rpc.statd did not come up"
    fi
}

stop_statd_if_ours() {
    [[ -n ${STATD_PID:-} ]] || return 0
    if pid_comm_is "$STATD_PID" rpc.statd; then
        kill -TERM "$STATD_PID" 2>/dev/null || true
        wait_until 10 eval "! pid_comm_is $STATD_PID rpc.statd" || kill -KILL "$STATD_PID" 2>/dev/null || true
    fi
    STATD_PID=
}

stop_rpcbind_if_ours() {
    [[ ${RPCBIND_STARTED:-0} == 1 ]] || return 0
    log "stopping our rpcbind (pid $RPCBIND_PID)"
    stop_pid "$RPCBIND_PID" rpcbind TERM 10
    RPCBIND_STARTED=0
    RPCBIND_PID=
}

# --- ganesha -------------------------------------------------------------

# Starts Ganesha from the saved state and waits until NFS and MOUNT answer
# NULL calls on their ports, rpcbind lists them, and (when libnfs-utils is
# there) nfs-ls of the URL works. Fails loudly with the log tail.
launch_and_wait() {
    local v4=()
    local NLM_PORT=$NLM_PORT
    [[ $NLM == 1 ]] || NLM_PORT=
    [[ $NFS4 == 1 ]] && v4=("$RECOVERY_ROOT" "$NFS4_GRACE" "$NFS4_LEASE")
    [[ $KRB5 == 1 ]] && krb5_ganesha_setup "$STATE_DIR/krb5cc" "$STATE_DIR/idmapd.conf" "$KRB5P_EXPORT"
    # Several paths: every address of the namespace (ours alone).
    local bind=$BIND_ADDR
    [[ $NLM == 1 && ${NLM_PATHS:-1} -gt 1 ]] && bind=0.0.0.0
    write_ganesha_conf "$CONF" "$bind" "$NFS_PORT" "$MNT_PORT" "$EXPORT_DIR" "$EXPORT_PATH" "${v4[@]}"
    log "starting ganesha on $BIND_ADDR nfs=$NFS_PORT mnt=$MNT_PORT export $EXPORT_DIR as $EXPORT_PATH$(
        [[ $NFS4 == 1 ]] && echo " (NFSv4.1 too, grace ${NFS4_GRACE}s)")$(
        [[ $KRB5 == 1 ]] && echo " (Kerberos: krb5, krb5i, krb5p, sys)")$(
        [[ -n $KRB5P_EXPORT ]] && echo " and $KRB5P_EXPORT (krb5p only)")"
    start_ganesha "$CONF" "$GANESHA_LOG" "$GANESHA_PIDFILE" "$GANESHA_OUT"
    local deadline=$((SECONDS + START_TIMEOUT))
    local step steps=(pidfile nfs mount rpcbind nfsls)
    [[ $NFS4 == 1 ]] && steps+=(nfs4)
    [[ $NLM == 1 ]] && steps+=(nlm)
    for step in "${steps[@]}"; do
        until check_step "$step"; do
            if ((SECONDS >= deadline)) || { [[ $step != pidfile ]] && ! ganesha_running; }; then
                show_log_tail "$GANESHA_LOG"
                die "ganesha did not come up (waiting for: $step); log: $GANESHA_LOG"
            fi
            sleep 0.2
        done
    done
    log "ganesha is up (pid $(ganesha_pid))"
    [[ $NFS4 == 1 ]] && log "NFSv4.1 URL: $(server_url41)"
    return 0
}

check_step() {
    case $1 in
        pidfile) ganesha_running ;;
        nfs) rpc_null_ok "$BIND_ADDR" "$NFS_PORT" 100003 3 >/dev/null 2>&1 ;;
        mount) rpc_null_ok "$BIND_ADDR" "$MNT_PORT" 100005 3 >/dev/null 2>&1 ;;
        rpcbind) rpcbind_has_us ;;
        nfsls) ! command -v nfs-ls >/dev/null || timeout 10 nfs-ls "$(server_url)" >/dev/null 2>&1 ;;
        nfs4) rpc_null_ok "$BIND_ADDR" "$NFS_PORT" 100003 4 >/dev/null 2>&1 ;;
        nlm) rpc_null_ok "$BIND_ADDR" "$NLM_PORT" 100021 4 >/dev/null 2>&1 ;;
    esac
}

# SIGNAL is TERM for a clean stop (Ganesha unregisters from rpcbind, ~2 s)
# or KILL for a crash.
stop_ganesha() {
    local signal=${1:-TERM}
    local pid
    pid=$(ganesha_pid)
    if ganesha_running; then
        log "stopping ganesha (pid $pid, SIG$signal)"
        stop_pid "$pid" "$CONF" "$signal" 20
    fi
    rm -f "$GANESHA_PIDFILE"
}

# --- commands ------------------------------------------------------------

cmd_start() {
    local dir=${1:-}
    ensure_packages
    take_lock
    if load_state && ganesha_running; then
        if [[ -n $dir && $(realpath -m "$dir") != "$EXPORT_DIR" ]]; then
            die "already running with export $EXPORT_DIR; stop it first"
        fi
        log "already running (pid $(ganesha_pid))"
        server_url
        return 0
    fi
    # A state left by a crashed server: reuse its export and ports.
    new_state "$dir"
    save_state
    trap start_failed EXIT
    ensure_rpcbind
    ensure_statd
    save_state
    launch_and_wait
    trap - EXIT
    server_url
}

# A failed start leaves nothing running: no half-started Ganesha, no
# rpcbind of ours. The state (export dir, ports, logs) stays for the next try.
start_failed() {
    log "start failed: cleaning up"
    stop_ganesha TERM
    stop_statd_if_ours
    stop_rpcbind_if_ours
    remove_netns_if_ours
    save_state
}

# Chooses ports and the export directory for a fresh start.
new_state() {
    local dir=$1
    BIND_ADDR=${DNFS_BIND_ADDR:-127.0.0.1}
    RPCBIND_MODE=shared
    [[ ${DNFS_PRIVATE_RPCBIND:-0} == 1 ]] && RPCBIND_MODE=private
    NLM=${DNFS_NLM:-0}
    [[ $NLM == 0 || $NLM == 1 ]] || die "DNFS_NLM must be 0 or 1"
    KRB5=${DNFS_KRB5:-0}
    [[ $KRB5 == 0 || $KRB5 == 1 ]] || die "DNFS_KRB5 must be 0 or 1"
    KRB5_CONF_FILE=
    KRB5_KEYTAB=
    [[ $KRB5 == 1 ]] && krb5_find_realm
    KRB5P_EXPORT=
    if [[ -n ${DNFS_KRB5P_EXPORT:-} ]]; then
        [[ $KRB5 == 1 ]] || die "DNFS_KRB5P_EXPORT needs DNFS_KRB5=1"
        mkdir -p "$DNFS_KRB5P_EXPORT"
        chmod 0777 "$DNFS_KRB5P_EXPORT"
        KRB5P_EXPORT=$(realpath "$DNFS_KRB5P_EXPORT")
    fi
    NETNS=${NETNS:-}
    NETNS_CREATED=${NETNS_CREATED:-0}
    STATD_PID=${STATD_PID:-}
    NLM_PORT=
    STATD_PORT=
    NLM_PATHS=1
    NLM_BY_ADDRESS=0
    if [[ $NLM == 1 ]]; then
        [[ $(id -u) == 0 ]] || die "DNFS_NLM=1 needs root (a network namespace)"
        RPCBIND_MODE=netns
        NETNS=${DNFS_NLM_NETNS:-nlm-dnfs}
        BIND_ADDR=${DNFS_NLM_NET:-10.231.200}.2
        NLM_PORT=${DNFS_NLM_PORT:-32803}
        STATD_PORT=${DNFS_STATD_PORT:-32765}
        NLM_PATHS=${DNFS_NLM_PATHS:-1}
        [[ $NLM_PATHS =~ ^[1-4]$ ]] || die "DNFS_NLM_PATHS must be 1 to 4"
        NLM_BY_ADDRESS=${DNFS_NLM_BY_ADDRESS:-0}
    fi
    RPCBIND_STARTED=${RPCBIND_STARTED:-0}
    RPCBIND_PID=${RPCBIND_PID:-}
    if [[ -z $dir && -n ${EXPORT_DIR:-} && -d ${EXPORT_DIR:-} ]]; then
        log "reusing export $EXPORT_DIR of a previous start"
    elif [[ -n $dir ]]; then
        mkdir -p "$dir"
        EXPORT_DIR=$(realpath "$dir")
        EXPORT_CREATED=0
    else
        EXPORT_DIR=$(mktemp -d /tmp/directnfs-export.XXXXXX)
        # Tests may mount with uid=/gid= of an unprivileged user.
        chmod 0777 "$EXPORT_DIR"
        EXPORT_CREATED=1
    fi
    EXPORT_PATH=${DNFS_EXPORT_PATH:-$EXPORT_DIR}
    [[ $EXPORT_PATH == /* ]] || die "DNFS_EXPORT_PATH must start with /"
    NFS_PORT=$(pick_port "${DNFS_NFS_PORT:-${NFS_PORT:-2049}}")
    MNT_PORT=$(pick_port "${DNFS_MNT_PORT:-${MNT_PORT:-20048}}" "$NFS_PORT")
    NFS4=${DNFS_NFS4:-0}
    [[ $NFS4 == 0 || $NFS4 == 1 ]] || die "DNFS_NFS4 must be 0 or 1"
    NFS4_GRACE=${DNFS_NFS4_GRACE:-0}
    NFS4_LEASE=${DNFS_NFS4_LEASE:-}
}

cmd_stop() {
    take_lock
    if ! load_state; then
        log "not running (no state in $STATE_DIR)"
        return 0
    fi
    stop_ganesha TERM
    stop_statd_if_ours
    stop_rpcbind_if_ours
    remove_netns_if_ours
    if [[ ${EXPORT_CREATED:-0} == 1 && ${DNFS_KEEP_EXPORT:-0} != 1 ]]; then
        rm -rf -- "$EXPORT_DIR"
    fi
    rm -f "$STATE_FILE"
    log "stopped"
}

cmd_restart() {
    local signal=TERM down=2 grace='' lease=''
    while (($#)); do
        case $1 in
            --kill) signal=KILL ;;
            --down) down=${2:?--down needs seconds}; shift ;;
            --grace) grace=${2:?--grace needs seconds}; shift ;;
            --lease) lease=${2:?--lease needs seconds or default}; shift ;;
            *) usage ;;
        esac
        shift
    done
    take_lock
    load_state || die "nothing to restart: no state in $STATE_DIR (run start first)"
    if [[ -n $grace ]]; then
        [[ $NFS4 == 1 ]] || die "--grace needs a server started with DNFS_NFS4=1"
        NFS4_GRACE=$grace
        save_state
    fi
    if [[ -n $lease ]]; then
        [[ $NFS4 == 1 ]] || die "--lease needs a server started with DNFS_NFS4=1"
        [[ $lease == default || $lease =~ ^[0-9]+$ ]] || die "--lease: seconds or default"
        NFS4_LEASE=${lease/#default/}
        save_state
    fi
    stop_ganesha "$signal"
    # Ganesha's write verifier is its start time in seconds: a downtime of
    # 1 s or more guarantees the verifier changes.
    sleep "$down"
    ensure_rpcbind
    ensure_statd
    save_state
    launch_and_wait
    server_url
}

cmd_status() {
    if ! load_state || ! ganesha_running; then
        log "not running"
        exit 3
    fi
    cat <<EOF
pid=$(ganesha_pid)
bind_addr=$BIND_ADDR
nfs_port=$NFS_PORT
mnt_port=$MNT_PORT
export_dir=$EXPORT_DIR
export_path=$EXPORT_PATH
rpcbind_mode=$RPCBIND_MODE
rpcbind_ours=$RPCBIND_STARTED
rpcbind_pid=$RPCBIND_PID
state_dir=$STATE_DIR
log=$GANESHA_LOG
nfs4=$NFS4
nlm=$NLM
EOF
    if [[ $NLM == 1 ]]; then
        echo "netns=$NETNS"
        echo "nlm_port=$NLM_PORT"
        echo "nlm_paths=$NLM_PATHS"
        local k host_if ns_if host_addr srv_addr
        for ((k = 1; k <= NLM_PATHS; k++)); do
            read -r host_if ns_if host_addr srv_addr <<<"$(path_addrs "$k")"
            echo "path${k}_host_if=$host_if"
            echo "path${k}_server_if=$ns_if"
            echo "path${k}_host=$host_addr"
            echo "path${k}_server=$srv_addr"
        done
    fi
    if [[ $NFS4 == 1 ]]; then
        echo "nfs4_grace=$NFS4_GRACE"
        echo "nfs4_lease=${NFS4_LEASE:-default}"
        echo "recovery_root=$RECOVERY_ROOT"
        echo "url_v41=$(server_url41)"
    fi
    [[ -n $KRB5P_EXPORT ]] &&
        echo "krb5p_url=nfs://$BIND_ADDR$KRB5P_EXPORT?nfsport=$NFS_PORT&mountport=$MNT_PORT"
    server_url
}

cmd_url() {
    local vers
    vers=$(parse_vers "$@") || exit 2
    if ! load_state || ! ganesha_running; then
        log "not running"
        exit 3
    fi
    if [[ $vers == 3 ]]; then
        server_url
    elif [[ $NFS4 == 1 ]]; then
        server_url41
    else
        die "this server does not serve NFSv4.1 (start it with DNFS_NFS4=1)"
    fi
}

main() {
    local cmd=${1:-}
    shift || true
    case $cmd in
        start) cmd_start "$@" ;;
        stop) cmd_stop ;;
        restart) cmd_restart "$@" ;;
        status) cmd_status ;;
        url) cmd_url "$@" ;;
        *) usage ;;
    esac
}

main "$@"

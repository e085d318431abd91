#!/usr/bin/env bash
# netns.sh — the multi-path test topology: a Ganesha in its own network
# namespace, reached over 2-4 veth pairs, with per-path fault injection.
#
#   netns.sh up [N]                N paths (2-4, default 2); prints one URL per path
#   netns.sh down                  kill our processes, delete veths and namespace
#   netns.sh status                key=value lines, then one URL per path; exit 3 if down
#   netns.sh urls [--vers 3|4.1]   one URL per path (v4.1 form: DNFS_NFS4=1 servers)
#   netns.sh rate PATH MBIT|off    tbf rate limit on both ends of path PATH
#   netns.sh cut PATH              host end link down: connects fail at once
#   netns.sh blackhole PATH        link up, every packet dropped: connects hang
#   netns.sh mute PATH             the server's packets on PATH dropped (the
#                                  client's still arrive): calls reach the
#                                  server and execute, their replies are lost
#   netns.sh restore PATH          undo cut/blackhole/mute, re-apply the rate limit
#   netns.sh restart-server [--kill] [--down SECS] [--grace SECS]
#                                  SIGTERM (or SIGKILL) the server, stay down
#                                  SECS (default 2), start it again (--grace:
#                                  with this NFSv4 grace period from now on)
#
# Path K (1..N): host dnfs-hK 10.231.K.1/24 <-> dnfs-sK 10.231.K.2/24 in
# namespace dnfs-srv. URL of path K:
#   nfs://10.231.K.2<export path>?nfsport=2049&mountport=20048
# The namespace has its own rpcbind (port 111 on every server address), so
# URLs without nfsport/mountport work too. With NFSv4.1 on, path K's v4.1
# URL is nfs://10.231.K.2<export path>?vers=4.1&nfsport=2049.
#
# Environment:
#   DNFS_NETNS_STATE_DIR  state directory (default /tmp/directnfs-netns)
#   DNFS_NETNS_EXPORT_DIR export directory (default: a fresh temp dir)
#   DNFS_EXPORT_PATH      path clients mount, Ganesha's Pseudo (default: the dir)
#   DNFS_NETNS_NFS_PORT / DNFS_NETNS_MNT_PORT  ports (default 2049 / 20048)
#   DNFS_START_TIMEOUT    seconds to wait for the server (default 30)
#   DNFS_NETNS_FORCE=1    `up` replaces a namespace it has no state for even
#                         while processes run in it (an empty one it always
#                         reclaims: a killed run's leftover)
#   DNFS_NFS4=1           serve NFSv4.1 too (as nfs-server.sh; client records
#                         in STATE_DIR/v4recovery); DNFS_NFS4_GRACE,
#                         DNFS_NFS4_LEASE as there
#   DNFS_KEEP_EXPORT=1    `down` keeps an export dir it created
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=netns
# shellcheck source-path=SCRIPTDIR source=lib/ganesha.sh
source "$SCRIPT_DIR/lib/ganesha.sh"
# shellcheck source-path=SCRIPTDIR source=lib/state.sh
source "$SCRIPT_DIR/lib/state.sh"

NS=dnfs-srv
HOST_DEV=dnfs-h
SRV_DEV=dnfs-s
STATE_DIR=${DNFS_NETNS_STATE_DIR:-/tmp/directnfs-netns}
START_TIMEOUT=${DNFS_START_TIMEOUT:-30}
STATE_FILE=$STATE_DIR/state.env
CONF=$STATE_DIR/ganesha.conf
GANESHA_LOG=$STATE_DIR/ganesha.log
GANESHA_OUT=$STATE_DIR/ganesha.out
GANESHA_PIDFILE=$STATE_DIR/ganesha.pid
RPCBIND_LOG=$STATE_DIR/rpcbind.log
RECOVERY_ROOT=$STATE_DIR/v4recovery
# State variables come only from the state file, never from the caller.
unset PATHS NFS_PORT MNT_PORT EXPORT_DIR EXPORT_PATH EXPORT_CREATED RPCBIND_PID
unset NFS4 NFS4_GRACE NFS4_LEASE
for _k in 1 2 3 4; do unset "RATE_$_k" "FAULT_$_k"; done



# --- state ---------------------------------------------------------------
# FAULT_K is none, cut, blackhole or mute; RATE_K is off or a rate in Mbit/s.

load_state() {
    [[ -f $STATE_FILE ]] || return 1
    # shellcheck disable=SC1090
    source "$STATE_FILE"
    NFS4=${NFS4:-0}
    NFS4_GRACE=${NFS4_GRACE:-0}
    NFS4_LEASE=${NFS4_LEASE:-}
}

save_state() {
    {
        echo "PATHS=$PATHS"
        echo "NFS_PORT=$NFS_PORT"
        echo "MNT_PORT=$MNT_PORT"
        echo "EXPORT_DIR=$EXPORT_DIR"
        echo "EXPORT_PATH=$EXPORT_PATH"
        echo "EXPORT_CREATED=$EXPORT_CREATED"
        echo "RPCBIND_PID=${RPCBIND_PID:-}"
        echo "NFS4=$NFS4"
        echo "NFS4_GRACE=$NFS4_GRACE"
        echo "NFS4_LEASE=$NFS4_LEASE"
        local k
        for ((k = 1; k <= PATHS; k++)); do
            echo "RATE_$k=$(path_var RATE "$k")"
            echo "FAULT_$k=$(path_var FAULT "$k")"
        done
    } >"$STATE_FILE.tmp"
    mv "$STATE_FILE.tmp" "$STATE_FILE"
}

path_var() {
    local name="$1_$2" default=none
    [[ $1 == RATE ]] && default=off
    echo "${!name:-$default}"
}

set_path_var() {
    printf -v "$1_$2" '%s' "$3"
}

host_addr() { echo "10.231.$1.1"; }
server_addr() { echo "10.231.$1.2"; }

path_url() {
    echo "nfs://$(server_addr "$1")$EXPORT_PATH?nfsport=$NFS_PORT&mountport=$MNT_PORT"
}

path_url41() {
    echo "nfs://$(server_addr "$1")$EXPORT_PATH?vers=4.1&nfsport=$NFS_PORT"
}

# One URL per path; VERS 4.1 prints the v4.1 form.
print_urls() {
    local vers=${1:-3} k
    [[ $vers == 3 || $NFS4 == 1 ]] || die "this topology's server does not serve NFSv4.1 (up with DNFS_NFS4=1)"
    for ((k = 1; k <= PATHS; k++)); do
        if [[ $vers == 4.1 ]]; then path_url41 "$k"; else path_url "$k"; fi
    done
}

ganesha_pid() { cat "$GANESHA_PIDFILE" 2>/dev/null || true; }
ganesha_running() { pid_is "$(ganesha_pid)" "$CONF"; }

# Checks PATH is a number in 1..PATHS.
check_path() {
    if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 1 || $1 > PATHS)); then
        die "no path '$1' (paths are 1..$PATHS)"
    fi
}

# Runs a command in the server's mount and network namespaces: those of our
# rpcbind, so Ganesha finds that rpcbind's unix socket and no other.
in_server_ns() {
    nsenter -t "$RPCBIND_PID" -m -n -- "$@"
}

# --- topology ------------------------------------------------------------

# Without this, a cut path's /24 route disappears and the host would send
# 10.231.K.2 traffic to its default gateway. With it, connects over a cut
# path fail at once (EHOSTUNREACH) and nothing for 10.231/16 ever leaves
# the machine. Kept after `down` on purpose, for the same reason.
guard_route() {
    ip route replace unreachable 10.231.0.0/16
}

create_links() {
    guard_route
    ip netns add "$NS"
    ip -n "$NS" link set lo up
    local k
    for ((k = 1; k <= PATHS; k++)); do
        ip link add "$HOST_DEV$k" type veth peer name "$SRV_DEV$k" netns "$NS"
        # No IPv6 on the paths: router solicitations and MLD would be the
        # only other packets on them and would blur fault and rate tests.
        sysctl -qw "net.ipv6.conf.$HOST_DEV$k.disable_ipv6=1" 2>/dev/null || true
        ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$SRV_DEV$k.disable_ipv6=1" 2>/dev/null || true
        ip addr add "$(host_addr "$k")/24" dev "$HOST_DEV$k"
        ip -n "$NS" addr add "$(server_addr "$k")/24" dev "$SRV_DEV$k"
        ip link set "$HOST_DEV$k" up
        ip -n "$NS" link set "$SRV_DEV$k" up
    done
}

# A private rpcbind (lib/ganesha.sh) in the namespace's network: it listens
# on port 111 of every server address, so portmapper clients on the host
# can use it, and its unix socket is its own, so it never meets the host's.
start_ns_rpcbind() {
    start_private_rpcbind "$RPCBIND_LOG" "" ip netns exec "$NS"
    save_state
    # First the exec chain must have reached rpcbind (else nsenter could
    # still enter the host's namespaces), then it must answer.
    if ! wait_until 10 pid_comm_is "$RPCBIND_PID" rpcbind ||
        ! wait_until 10 in_server_ns timeout 5 rpcinfo -p 127.0.0.1; then
        show_log_tail "$RPCBIND_LOG"
        die "rpcbind in $NS did not come up"
    fi
}

# Starts Ganesha inside the namespace, bound to every server address.
start_ns_ganesha() {
    local v4=()
    [[ $NFS4 == 1 ]] && v4=("$RECOVERY_ROOT" "$NFS4_GRACE" "$NFS4_LEASE")
    write_ganesha_conf "$CONF" 0.0.0.0 "$NFS_PORT" "$MNT_PORT" "$EXPORT_DIR" "$EXPORT_PATH" "${v4[@]}"
    log "starting ganesha in $NS: nfs=$NFS_PORT mnt=$MNT_PORT export $EXPORT_DIR as $EXPORT_PATH"
    GANESHA_WRAPPER=(nsenter -t "$RPCBIND_PID" -m -n --)
    start_ganesha "$CONF" "$GANESHA_LOG" "$GANESHA_PIDFILE" "$GANESHA_OUT"
    wait_for_ganesha
}

# Ready when NFS and MOUNT answer inside the namespace, its rpcbind lists
# them, and nfs-ls works from the host over every path not faulted.
wait_for_ganesha() {
    local deadline=$((SECONDS + START_TIMEOUT)) step
    local steps=(pidfile nfs mount rpcbind)
    [[ $NFS4 == 1 ]] && steps+=(nfs4)
    local k
    for ((k = 1; k <= PATHS; k++)); do
        [[ $(path_var FAULT "$k") == none ]] && steps+=("path$k")
    done
    for step in "${steps[@]}"; do
        until check_step "$step"; do
            if ((SECONDS >= deadline)) || { [[ $step != pidfile ]] && ! ganesha_running; }; then
                show_log_tail "$GANESHA_LOG"
                die "ganesha in $NS did not come up (waiting for: $step)"
            fi
            sleep 0.2
        done
    done
    log "ganesha is up in $NS (pid $(ganesha_pid))"
}

check_step() {
    case $1 in
        pidfile) ganesha_running ;;
        nfs | mount | nfs4)
            # The NULL call itself, inside the namespace (a faulted path
            # cannot fail it; no portmapper asked).
            local port=$NFS_PORT prog=100003 vers=3
            [[ $1 == mount ]] && { port=$MNT_PORT; prog=100005; }
            [[ $1 == nfs4 ]] && vers=4
            in_server_ns bash -c "$(declare -f rpc_null_ok _rpc_null_call _xdr_word); rpc_null_ok 127.0.0.1 $port $prog $vers" \
                >/dev/null 2>&1
            ;;
        rpcbind) in_server_ns timeout 5 rpcinfo -p 127.0.0.1 2>/dev/null | grep nfs >/dev/null ;;
        path*)
            local k=${1#path}
            rpc_null_ok "$(server_addr "$k")" "$NFS_PORT" 100003 3 >/dev/null 2>&1 &&
                { ! command -v nfs-ls >/dev/null || timeout 10 nfs-ls "$(path_url "$k")" >/dev/null 2>&1; }
            ;;
    esac
}

stop_ns_ganesha() {
    local signal=${1:-TERM}
    if ganesha_running; then
        log "stopping ganesha (pid $(ganesha_pid), SIG$signal)"
        stop_pid "$(ganesha_pid)" "$CONF" "$signal" 20
    fi
    rm -f "$GANESHA_PIDFILE"
}

# --- faults and rates ----------------------------------------------------

# Burst of 10 ms at the rate, at least 64 KiB: veths hand tbf GSO packets
# up to 64 KiB, and tbf needs a burst of at least one packet.
tbf_rate_args() {
    local mbit=$1
    local burst=$((mbit * 1000000 / 8 / 100))
    ((burst >= 65536)) || burst=65536
    echo "rate ${mbit}mbit burst $burst latency 100ms"
}

# A tbf whose burst is smaller than any packet drops every packet, while
# the link stays up: the kernel here has no netem (docs/server-notes.md).
BLACKHOLE_ARGS="rate 8bit burst 64 limit 64"

# Sets the root qdisc of both ends of path K: ARGS of a tbf, or "" for none.
set_root_qdisc() {
    local k=$1 args=$2
    if [[ -z $args ]]; then
        tc qdisc del dev "$HOST_DEV$k" root 2>/dev/null || true
        tc -n "$NS" qdisc del dev "$SRV_DEV$k" root 2>/dev/null || true
        return 0
    fi
    # shellcheck disable=SC2086
    tc qdisc replace dev "$HOST_DEV$k" root tbf $args
    # shellcheck disable=SC2086
    tc -n "$NS" qdisc replace dev "$SRV_DEV$k" root tbf $args
}

# Applies the recorded state of path K: fault first, else its rate.
apply_path() {
    local k=$1 fault rate
    fault=$(path_var FAULT "$k")
    rate=$(path_var RATE "$k")
    if [[ $fault == cut ]]; then
        ip link set "$HOST_DEV$k" down
    else
        ip link set "$HOST_DEV$k" up
    fi
    if [[ $fault == blackhole ]]; then
        set_root_qdisc "$k" "$BLACKHOLE_ARGS"
    elif [[ $fault == mute ]]; then
        set_root_qdisc "$k" ""
        # shellcheck disable=SC2086
        tc -n "$NS" qdisc replace dev "$SRV_DEV$k" root tbf $BLACKHOLE_ARGS
    elif [[ $rate != off ]]; then
        set_root_qdisc "$k" "$(tbf_rate_args "$rate")"
    else
        set_root_qdisc "$k" ""
    fi
}

# --- teardown ------------------------------------------------------------

# Tears down whatever exists, from any partial state: our Ganesha and
# rpcbind by PID, then the veths and the namespace. Never fails.
teardown() {
    set +e
    if [[ -n ${RPCBIND_PID:-} ]] || [[ -f $GANESHA_PIDFILE ]]; then
        stop_ns_ganesha TERM
        [[ -n ${RPCBIND_PID:-} ]] && stop_pid "$RPCBIND_PID" rpcbind TERM 10
    fi
    kill_leftovers_in_ns
    local k
    for k in 1 2 3 4; do
        ip link del "$HOST_DEV$k" 2>/dev/null
    done
    ip netns del "$NS" 2>/dev/null
    if [[ ${EXPORT_CREATED:-0} == 1 && -n ${EXPORT_DIR:-} && ${DNFS_KEEP_EXPORT:-0} != 1 ]]; then
        rm -rf -- "$EXPORT_DIR"
    fi
    rm -f "$STATE_FILE" "$GANESHA_PIDFILE"
    set -e
}

# Processes still in the namespace when the state was lost: only ours can
# be there, as we created the namespace. Ganesha first, then rpcbind.
kill_leftovers_in_ns() {
    ip netns list 2>/dev/null | grep -qw "$NS" || return 0
    local pid
    for pid in $(ip netns pids "$NS" 2>/dev/null); do
        pid_is "$pid" ganesha.nfsd && { log "stopping leftover ganesha $pid"; stop_pid "$pid" ganesha.nfsd TERM 20; }
    done
    for pid in $(ip netns pids "$NS" 2>/dev/null); do
        log "stopping leftover pid $pid ($(pid_cmdline "$pid"))"
        stop_pid "$pid" "" TERM 10
    done
}

# --- commands ------------------------------------------------------------

cmd_up() {
    local n=${1:-2}
    [[ $n =~ ^[2-4]$ ]] || die "N must be 2, 3 or 4"
    ensure_packages
    take_lock
    if load_state && ganesha_running; then
        ((PATHS == n)) || die "already up with $PATHS paths; run down first"
        log "already up (pid $(ganesha_pid))"
        print_urls
        return 0
    fi
    # Leftovers of our own failed or interrupted run go first. A namespace
    # we have no state for may belong to another state dir: refuse while a
    # process runs in it; an empty one is what a killed run leaves behind
    # (its state dir gone with it): reclaim it.
    if ! load_state && ip netns list | grep -qw "$NS" && [[ ${DNFS_NETNS_FORCE:-0} != 1 ]]; then
        local users
        users=$(ip netns pids "$NS" 2>/dev/null | tr '\n' ' ')
        [[ -z ${users// /} ]] ||
            die "namespace $NS exists with processes $users but $STATE_DIR has no state for it (another DNFS_NETNS_STATE_DIR?); run down there, or DNFS_NETNS_FORCE=1"
        log "namespace $NS has no state here and no process in it: a killed run's leftover, reclaiming it"
    fi
    teardown
    unset RPCBIND_PID EXPORT_DIR EXPORT_CREATED
    new_state "$n"
    trap 'log "up failed: tearing down"; teardown' EXIT
    save_state
    create_links
    start_ns_rpcbind
    start_ns_ganesha
    trap - EXIT
    print_urls
}

new_state() {
    PATHS=$1
    NFS_PORT=${DNFS_NETNS_NFS_PORT:-2049}
    MNT_PORT=${DNFS_NETNS_MNT_PORT:-20048}
    if [[ -n ${DNFS_NETNS_EXPORT_DIR:-} ]]; then
        mkdir -p "$DNFS_NETNS_EXPORT_DIR"
        EXPORT_DIR=$(realpath "$DNFS_NETNS_EXPORT_DIR")
        EXPORT_CREATED=0
    else
        # The namespace shares the host's file system: a host temp dir.
        EXPORT_DIR=$(mktemp -d /tmp/directnfs-netns-export.XXXXXX)
        chmod 0777 "$EXPORT_DIR"
        EXPORT_CREATED=1
    fi
    EXPORT_PATH=${DNFS_EXPORT_PATH:-$EXPORT_DIR}
    [[ $EXPORT_PATH == /* ]] || die "DNFS_EXPORT_PATH must start with /"
    NFS4=${DNFS_NFS4:-0}
    [[ $NFS4 == 0 || $NFS4 == 1 ]] || die "DNFS_NFS4 must be 0 or 1"
    NFS4_GRACE=${DNFS_NFS4_GRACE:-0}
    NFS4_LEASE=${DNFS_NFS4_LEASE:-}
}

cmd_down() {
    take_lock
    load_state || true
    teardown
    log "down"
}

require_up() {
    load_state || die "topology is not up (no state in $STATE_DIR)"
}

cmd_rate() {
    local k=${1:?rate PATH MBIT|off} mbit=${2:?rate PATH MBIT|off}
    take_lock
    require_up
    check_path "$k"
    [[ $mbit == off || $mbit =~ ^[1-9][0-9]*$ ]] || die "MBIT must be a positive integer or off"
    set_path_var RATE "$k" "$mbit"
    save_state
    apply_path "$k"
    log "path $k rate $mbit"
}

cmd_fault() {
    local fault=$1 k=${2:?PATH needed}
    take_lock
    require_up
    check_path "$k"
    set_path_var FAULT "$k" "$fault"
    save_state
    apply_path "$k"
    log "path $k: ${fault/none/restored}"
}

cmd_restart_server() {
    local signal=TERM down=2 grace=
    while (($#)); do
        case $1 in
            --kill) signal=KILL ;;
            --down) down=${2:?--down needs seconds}; shift ;;
            --grace) grace=${2:?--grace needs seconds}; shift ;;
            *) usage ;;
        esac
        shift
    done
    take_lock
    require_up
    if [[ -n $grace ]]; then
        [[ $NFS4 == 1 ]] || die "--grace needs a topology brought up with DNFS_NFS4=1"
        NFS4_GRACE=$grace
        save_state
    fi
    pid_is "$RPCBIND_PID" rpcbind || die "rpcbind of $NS is gone; run down and up"
    stop_ns_ganesha "$signal"
    # Ganesha's write verifier is its start time in seconds.
    sleep "$down"
    start_ns_ganesha
    print_urls
}

cmd_status() {
    if ! load_state || ! ganesha_running; then
        log "not up"
        exit 3
    fi
    echo "pid=$(ganesha_pid)"
    echo "rpcbind_pid=$RPCBIND_PID"
    echo "namespace=$NS"
    echo "nfs_port=$NFS_PORT"
    echo "mnt_port=$MNT_PORT"
    echo "export_dir=$EXPORT_DIR"
    echo "export_path=$EXPORT_PATH"
    echo "paths=$PATHS"
    local k
    for ((k = 1; k <= PATHS; k++)); do
        echo "path${k}_host=$HOST_DEV$k/$(host_addr "$k")"
        echo "path${k}_server=$SRV_DEV$k/$(server_addr "$k")"
        echo "path${k}_fault=$(path_var FAULT "$k")"
        echo "path${k}_rate=$(path_var RATE "$k")"
    done
    echo "nfs4=$NFS4"
    if [[ $NFS4 == 1 ]]; then
        echo "nfs4_grace=$NFS4_GRACE"
        echo "nfs4_lease=${NFS4_LEASE:-default}"
        for ((k = 1; k <= PATHS; k++)); do
            echo "path${k}_url_v41=$(path_url41 "$k")"
        done
    fi
    echo "log=$GANESHA_LOG"
    print_urls
}

cmd_urls() {
    local vers
    vers=$(parse_vers "$@") || exit 2
    require_up
    print_urls "$vers"
}

main() {
    local cmd=${1:-}
    shift || true
    case $cmd in
        up) cmd_up "$@" ;;
        down) cmd_down ;;
        status) cmd_status ;;
        urls) cmd_urls "$@" ;;
        rate) cmd_rate "$@" ;;
        cut) cmd_fault cut "$@" ;;
        blackhole) cmd_fault blackhole "$@" ;;
        mute) cmd_fault mute "$@" ;;
        restore) cmd_fault none "$@" ;;
        restart-server) cmd_restart_server "$@" ;;
        *) usage ;;
    esac
}

main "$@"

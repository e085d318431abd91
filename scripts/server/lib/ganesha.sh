# shellcheck shell=bash
# Helpers shared by nfs-server.sh and netns.sh: packages, Ganesha config,
# starting/stopping exactly the processes we started, waiting for readiness.
# Sourced, never executed. Callers run with `set -euo pipefail`.
#
# Facts these helpers rely on are in docs/server-notes.md.

# Packages a test server needs; libnfs-utils gives nfs-ls/nfs-cp to check it.
DNFS_PACKAGES=(nfs-ganesha nfs-ganesha-vfs rpcbind libnfs13 libnfs-utils)
# With DNFS_NLM=1 also rpc.statd.
DNFS_NLM_PACKAGES=(nfs-common)
GANESHA_FSAL_VFS_GLOB='/usr/lib/*/ganesha/libfsalvfs.so'

log() { echo "${LOG_TAG:-dnfs}: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Installs the packages when any piece is missing. Non-interactive, so it
# works under CI (no stdin). Debian's policy-rc.d keeps apt from starting
# the system rpcbind/ganesha services, which we do not want anyway.
ensure_packages() {
    local missing=0
    command -v ganesha.nfsd >/dev/null || missing=1
    command -v rpcbind >/dev/null || missing=1
    command -v rpcinfo >/dev/null || missing=1
    command -v nfs-ls >/dev/null || missing=1
    # shellcheck disable=SC2086
    compgen -G $GANESHA_FSAL_VFS_GLOB >/dev/null || missing=1
    local packages=("${DNFS_PACKAGES[@]}")
    if [[ ${DNFS_NLM:-0} == 1 ]]; then
        command -v rpc.statd >/dev/null || [[ -x /usr/sbin/rpc.statd ]] || missing=1
        packages+=("${DNFS_NLM_PACKAGES[@]}")
    fi
    [[ $missing == 0 ]] && return 0
    [[ $(id -u) == 0 ]] || die "packages missing (${packages[*]}) and not root"
    log "installing ${packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "${packages[@]}" >&2
}

# True when something listens on PORT (TCP or UDP) in the current netns.
port_in_use() {
    local port=$1
    [[ -n $(ss -Htuln "sport = :$port" 2>/dev/null) ]]
}

# Echoes PREFERRED when free, else the next free port above it. Ganesha
# binds TCP and UDP on both ports, so both must be free.
pick_port() {
    local port=$1 avoid=${2:-0}
    while port_in_use "$port" || [[ $port == "$avoid" ]]; do
        port=$((port + 1))
        ((port < 65535)) || die "no free port found"
    done
    echo "$port"
}

# The command line of PID, NUL bytes as spaces; empty when it is gone.
pid_cmdline() {
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true
}

# True when PID is alive and its command line contains NEEDLE: guards
# against killing a recycled PID that is no longer ours.
pid_is() {
    local pid=$1 needle=$2
    [[ -n $pid && -d /proc/$pid ]] || return 1
    [[ $(pid_cmdline "$pid") == *"$needle"* ]]
}

# True when PID is alive and runs the program NAME (its comm), e.g. after
# the wrappers that started it have exec'd it.
pid_comm_is() {
    [[ -n $1 && $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]
}

# Sends SIGNAL to PID (only if it still is NEEDLE) and waits up to TIMEOUT
# seconds for it to exit; escalates to SIGKILL after that.
stop_pid() {
    local pid=$1 needle=$2 signal=${3:-TERM} timeout=${4:-15}
    pid_is "$pid" "$needle" || return 0
    kill -s "$signal" "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + timeout))
    while [[ -d /proc/$pid ]] && ! is_zombie "$pid"; do
        if ((SECONDS >= deadline)); then
            log "pid $pid did not exit on SIG$signal within ${timeout}s: SIGKILL"
            kill -s KILL "$pid" 2>/dev/null || true
            deadline=$((SECONDS + 5))
            signal=KILL
        fi
        sleep 0.1
    done
}

is_zombie() {
    [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# Transfer sizes of the export: 1 MiB unless DNFS_MAX_IO says otherwise.
# DNFS_MAX_IO=server-default leaves them unset, so FSINFO advertises
# Ganesha's own default (64 MiB): the case a client must clamp.
transfer_size_lines() {
    local size=${DNFS_MAX_IO:-1048576}
    [[ $size == server-default ]] && return 0
    printf '    MaxRead = %s;\n    MaxWrite = %s;\n    PrefRead = %s;\n    PrefWrite = %s;' \
        "$size" "$size" "$size" "$size"
}

# The export's attribute cache: off unless DNFS_ATTR_CACHE=server-default.
# Ganesha's cache lets a GETATTR that follows a completed WRITE answer the
# size from before it (its trust flag is cleared and set again without a
# lock; upstream issue 553). A client with many connections sees it: an
# O_APPEND write placed at a stale end of file overwrote the file's last
# write. Without the cache Ganesha reads the attributes at every call
# (10-14 us more of its CPU per 8 KiB READ on these machines), so the
# demo's raw I/O on a file whose size never changes keeps the cache.
attr_cache_lines() {
    [[ ${DNFS_ATTR_CACHE:-off} == server-default ]] && return 0
    printf '    Attr_Expiration_Time = 0;'
}

# Writes a Ganesha config: NFSv3 (no NFSv4 grace period) or, when
# RECOVERY_ROOT is given, NFSv3 and NFSv4.1; no NLM or RQUOTA, explicit
# ports, FSAL VFS, one export.
#   write_ganesha_conf FILE BIND_ADDR NFS_PORT MNT_PORT DIR PSEUDO [RECOVERY_ROOT [GRACE [LEASE]]]
# Mount_Path_Pseudo makes MOUNT match the Pseudo path, so PSEUDO is the path
# clients mount (the URL path) and can differ from DIR, e.g. "/". For NFSv4
# PSEUDO is also the export's place in the pseudo file system (the v4 path).
# NFSv4.1: RECOVERY_ROOT is the directory where Ganesha keeps its client
# records across restarts (created here); GRACE is the grace period in
# seconds after a start (0, the default, means none: Graceless); LEASE the
# lease time in seconds (empty: Ganesha's default, 60).
# NLM_PORT (environment, optional): with a port, Ganesha's lock manager
# (NLM v4 for NFSv3 locks) is on and listens there; it needs rpc.statd
# (start_statd) and an rpcbind both can reach.
# GANESHA_SECTYPE (environment, default sys): the export's SecType list;
# GANESHA_EXTRA_BLOCK: a block written before the export (lib/krb5.sh sets
# both for the Kerberos mode). GANESHA_SECOND_EXPORT (environment, "DIR
# SECTYPE"): a second export of DIR (Pseudo DIR, Export_Id 2) that takes
# only the flavors SECTYPE lists (lib/krb5.sh: the krb5p-only export).
# GANESHA_IDMAP_CONF (environment, optional): the idmapd.conf Ganesha maps
# Kerberos principals to uids with (NFSV4 block's IdmapConf, read for NFSv3
# too; lib/krb5.sh writes one), instead of /etc/idmapd.conf.
write_ganesha_conf() {
    local file=$1 bind=$2 nfs_port=$3 mnt_port=$4 dir=$5 pseudo=$6
    local recovery=${7:-} grace=${8:-0} lease=${9:-}
    local protocols=3 nfsv4_block='' nlm_lines="    Enable_NLM = false;"
    if [[ -n ${NLM_PORT:-} ]]; then
        # NSM_Use_Caller_Name: a client's locks are its host name's
        # (caller_name), whichever of its addresses a call comes from, so
        # a client can move its lock calls to another path (Ganesha's
        # default keys them on the caller's IP address).
        # NLM_BY_ADDRESS=1 keeps Ganesha's default (tests of a client
        # that moved).
        local by_name=true
        [[ ${NLM_BY_ADDRESS:-0} == 1 ]] && by_name=false
        nlm_lines=$(printf '    Enable_NLM = true;\n    NLM_Port = %s;\n    NSM_Use_Caller_Name = %s;' "$NLM_PORT" "$by_name")
    fi
    if [[ -n $recovery ]]; then
        protocols="3, 4"
        mkdir -p "$recovery"
        nfsv4_block=$(nfsv4_conf_block "$recovery" "$grace" "$lease")
    elif [[ -n ${GANESHA_IDMAP_CONF:-} ]]; then
        # NFSv3 only: the block carries the principal map alone.
        nfsv4_block=$(printf '\nNFSV4 {\n    IdmapConf = "%s";\n}' "$GANESHA_IDMAP_CONF")
    fi
    cat >"$file" <<EOF
# Generated by scripts/server/lib/ganesha.sh for directnfs tests.
NFS_CORE_PARAM {
    Protocols = $protocols;
    Bind_addr = $bind;
    NFS_Port = $nfs_port;
    MNT_Port = $mnt_port;
$nlm_lines
    Enable_RQUOTA = false;
    Mount_Path_Pseudo = true;
}
$nfsv4_block
${GANESHA_EXTRA_BLOCK:-}
EXPORT {
    Export_Id = 1;
    Path = "$dir";
    Pseudo = "$pseudo";
    Protocols = $protocols;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = ${GANESHA_SECTYPE:-sys};
$(attr_cache_lines)
$(transfer_size_lines)
    FSAL {
        Name = VFS;
    }
}
$(second_export_block "$protocols")

LOG {
    Default_Log_Level = EVENT;
}
EOF
}

# The export GANESHA_SECOND_EXPORT ("DIR SECTYPE") names, if any: as the
# first, with its own directory (also its Pseudo path) and flavors.
#   second_export_block PROTOCOLS
second_export_block() {
    [[ -n ${GANESHA_SECOND_EXPORT:-} ]] || return 0
    local dir=${GANESHA_SECOND_EXPORT%% *} sectype=${GANESHA_SECOND_EXPORT#* }
    cat <<EOB
EXPORT {
    Export_Id = 2;
    Path = "$dir";
    Pseudo = "$dir";
    Protocols = $1;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = $sectype;
$(attr_cache_lines)
$(transfer_size_lines)
    FSAL {
        Name = VFS;
    }
}
EOB
}

# The NFSV4 block: minor version 1 only; client records under RECOVERY for
# reclaim after a restart; Graceless unless GRACE > 0; owners as numeric
# ids ("0", not "root@domain": no idmapper on these machines); no
# delegations (FSAL VFS cannot grant any anyway: Ganesha answers
# WND4_NOT_SUPP_FTYPE, only its GPFS and Ceph FSALs support them); 1024
# session slots (slot_table_size; Ganesha's default grants 64, which would
# cap an NFSv4.1 session at 64 calls in flight where NFSv3 has no cap: a
# NAS grants hundreds).
#   nfsv4_conf_block RECOVERY GRACE LEASE
nfsv4_conf_block() {
    local recovery=$1 grace=$2 lease=$3
    [[ $grace =~ ^[0-9]+$ ]] || die "the NFSv4 grace period must be whole seconds, not '$grace'"
    [[ -z $lease || $lease =~ ^[1-9][0-9]*$ ]] || die "the NFSv4 lease must be whole seconds > 0, not '$lease'"
    echo
    echo "NFSV4 {"
    echo "    Minor_Versions = 1;"
    echo "    RecoveryBackend = fs;"
    echo "    RecoveryRoot = \"$recovery\";"
    if ((grace == 0)); then
        echo "    Graceless = true;"
    else
        echo "    Graceless = false;"
        echo "    Grace_Period = $grace;"
    fi
    [[ -n $lease ]] && echo "    Lease_Lifetime = $lease;"
    echo "    Allow_Numeric_Owners = true;"
    echo "    Only_Numeric_Owners = true;"
    echo "    Delegations = false;"
    echo "    slot_table_size = 1024;"
    [[ -n ${GANESHA_IDMAP_CONF:-} ]] && echo "    IdmapConf = \"$GANESHA_IDMAP_CONF\";"
    echo "}"
}

# Starts ganesha.nfsd, which daemonizes and writes PIDFILE. All paths must
# be absolute: the daemon chdirs to / and silently dies on a relative log or
# pid path. Its stdio goes to a file so that `URL=$(nfs-server.sh start)`
# does not wait for the daemon to close our stdout. Fd 9 (our lock) is
# closed so the daemon does not hold it. Extra leading words (e.g. nsenter
# ...) may be given in the GANESHA_WRAPPER array.
start_ganesha() {
    local conf=$1 logfile=$2 pidfile=$3 outfile=$4
    rm -f "$pidfile"
    "${GANESHA_WRAPPER[@]}" ganesha.nfsd -f "$conf" -L "$logfile" -p "$pidfile" -N NIV_EVENT \
        </dev/null >>"$outfile" 2>&1 9>&-
}

# Polls until CHECK_CMD... succeeds or TIMEOUT seconds pass.
wait_until() {
    local timeout=$1
    shift
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# True when program PROG version VERS answers a NULL call at ADDR:PORT over
# TCP with an accepted SUCCESS reply, without the portmapper. `rpcinfo -n`
# is not that: it asks ADDR's portmapper first ("Program not registered"
# for a server registered with a private rpcbind only) and probes the
# version range (believing Ganesha's PROG_MISMATCH "3..3" for the NFS
# program even when it serves NFSv4). This sends the NULL call itself
# (bash's /dev/tcp; one record, AUTH_NONE, XID 0x444e4653).
#   rpc_null_ok ADDR PORT PROG VERS
rpc_null_ok() {
    timeout 5 bash -c "$(declare -f _rpc_null_call _xdr_word); _rpc_null_call \"\$@\"" _ "$@"
}

_xdr_word() {
    # shellcheck disable=SC2059  # the format is the bytes, built here
    printf "$(printf '\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"
}

_rpc_null_call() {
    local addr=$1 port=$2 prog=$3 vers=$4 w reply
    exec 3<>"/dev/tcp/$addr/$port" || return 1
    for w in $((0x80000028)) $((0x444e4653)) 0 2 "$prog" "$vers" 0 0 0 0 0; do
        _xdr_word "$w"
    done >&3
    reply=$(head -c 28 <&3 | od -An -tx1 | tr -d ' \n')
    # Record mark (last, 24 bytes), our XID, REPLY, MSG_ACCEPTED, AUTH_NONE
    # verifier (flavor, length), SUCCESS.
    [[ $reply == 80000018444e46530000000100000000000000000000000000000000 ]]
}

# Starts an rpcbind of our own in a private mount namespace where /run is a
# fresh tmpfs: its unix socket (/run/rpcbind.sock) is not the host's, so a
# Ganesha started in the same mount namespace (nsenter -t PID -m) registers
# there and nowhere else. Sets RPCBIND_PID (every exec replaces the previous
# process: ip netns exec, unshare and sh all exec, so $! is rpcbind).
#   start_private_rpcbind LOGFILE NETCONFIG [PREFIX...]
# NETCONFIG: a netconfig file to bind over /etc/netconfig (used to make it
# listen on its unix socket only), or "" for the system one. PREFIX: e.g.
# `ip netns exec NS` to run it in a network namespace.
start_private_rpcbind() {
    local logfile=$1 netconfig=$2
    shift 2
    local setup='mount -t tmpfs -o mode=0755 dnfs-run /run && mkdir -p /run/rpcbind && { chown _rpc /run/rpcbind 2>/dev/null || true; }'
    [[ -n $netconfig ]] && setup+=" && mount --bind '$netconfig' /etc/netconfig"
    setsid "$@" unshare --mount --propagation private -- sh -c "$setup && exec rpcbind -f" \
        </dev/null >>"$logfile" 2>&1 9>&- &
    # shellcheck disable=SC2034  # read by the caller
    RPCBIND_PID=$!
}

# Starts rpc.statd (Debian nfs-common), the NSM that Ganesha's lock
# manager asks to monitor each client host, in the foreground in its own
# session, its state in DIR (not /var/lib/nfs), listening on PORT, sending
# no reboot notifications; extra leading words (nsenter ...) in
# GANESHA_WRAPPER. Sets STATD_PID.
#   start_statd DIR PORT LOGFILE
start_statd() {
    local dir=$1 port=$2 logfile=$3
    mkdir -p "$dir/sm" "$dir/sm.bak"
    setsid "${GANESHA_WRAPPER[@]}" rpc.statd -F -P "$dir" -p "$port" -L \
        </dev/null >>"$logfile" 2>&1 9>&- &
    # shellcheck disable=SC2034  # read by the caller
    STATD_PID=$!
}

# Writes a copy of /etc/netconfig whose inet entries are not visible ("v"
# flag dropped): rpcbind then listens only on its unix socket and leaves
# port 111 to the host's rpcbind, while Ganesha still finds the tcp/udp
# entries it registers with.
write_unix_only_netconfig() {
    sed -E 's/^(udp6?|tcp6?)([[:space:]]+[a-z_]+[[:space:]]+)v([[:space:]])/\1\2-\3/' /etc/netconfig >"$1"
}

# Echoes VERS of `url`-style arguments `[--vers 3|4.1]` (3 when absent);
# calls the caller's `usage` on anything else.
parse_vers() {
    local vers=3
    while (($#)); do
        case $1 in
            --vers) vers=${2:?--vers needs 3 or 4.1}; shift ;;
            *) usage ;;
        esac
        shift
    done
    [[ $vers == 3 || $vers == 4.1 ]] || die "--vers must be 3 or 4.1"
    echo "$vers"
}

# Prints the last lines of LOGFILE to stderr, for failures.
show_log_tail() {
    local logfile=$1
    log "---- last lines of $logfile ----"
    tail -n 25 "$logfile" >&2 2>/dev/null || true
    log "--------------------------------"
}

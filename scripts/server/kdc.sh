#!/usr/bin/env bash
# kdc.sh — a throwaway MIT Kerberos realm on loopback for the Kerberos
# (RPCSEC_GSS) tests.
#
#   kdc.sh start     make the realm once (database, principals, keytabs),
#                    start krb5kdc, get the test user's ticket; prints the
#                    env lines last (as `env` does)
#   kdc.sh stop      stop exactly the krb5kdc we started
#   kdc.sh env       KEY=VALUE lines for clients and servers; exit 3 if down
#
# Everything lives in the state dir; the machine's /etc/krb5.conf is never
# read or written (KRB5_CONFIG and KRB5_KDC_PROFILE point into the state
# dir). The realm has:
#   nfs/127.0.0.1, nfs/127.0.0.2, nfs/localhost, nfs/<hostname>   the NFS
#                    service (127.0.0.2: a second loopback path), in
#                    server.keytab (Ganesha's KeytabPath)
#   dnfsuser         the test user, in client.keytab; `start` leaves its
#                    ticket in the cache user.ccache
#   dnfsshort        a user whose tickets live DNFS_KDC_SHORT_LIFE seconds
#                    (default 40), in short.keytab: the ticket renewal test
#   postgres         a daemon's principal, in postgres.keytab (mode 0600,
#                    owned by the local postgres user when there is one):
#                    PostgreSQL's postmaster under `dnfs run` gets its
#                    tickets from it (KRB5_CLIENT_KTNAME); nfs-server.sh's
#                    DNFS_KRB5 server maps it to the local postgres user
#   dnfsexp          a user whose tickets live DNFS_KDC_EXP_LIFE seconds
#                    (default 20) and are never renewable, in exp.keytab
#                    (the test refills a ticket cache with it: kinit -k)
#   dnfsrenew        as dnfsexp, but renewable for 10 minutes (kinit -r),
#                    in renew.keytab: kerberos_expiry.rs
#
# `env` prints:
#   KRB5_CONFIG      the realm's krb5.conf
#   KRB5CCNAME       the test user's ticket cache (FILE:...)
#   DNFS_KRB5_CLIENT_KEYTAB   the test user's keytab (for daemons)
#   DNFS_KRB5_SERVER_KEYTAB   the NFS service's keytab
#   DNFS_KRB5_PRINCIPAL       the test user's principal
#   DNFS_KRB5_SHORT_KEYTAB    the short-lived user's keytab
#   DNFS_KRB5_SHORT_PRINCIPAL the short-lived user's principal
#   DNFS_KRB5_POSTGRES_KEYTAB    the postgres principal's keytab
#   DNFS_KRB5_POSTGRES_PRINCIPAL the postgres principal
#   DNFS_KRB5_EXP_KEYTAB      dnfsexp's keytab (never renewable)
#   DNFS_KRB5_RENEW_KEYTAB    dnfsrenew's keytab (renewable)
#   DNFS_KDC_EXP_LIFE         their tickets' life in seconds
#
# Environment:
#   DNFS_KDC_STATE_DIR  state directory (default /tmp/directnfs-kdc)
#   DNFS_KDC_PORT       KDC port on 127.0.0.1, TCP and UDP (default 2688)
#   DNFS_KDC_REALM      realm name (default DIRECTNFS.TEST)
#   DNFS_KDC_SHORT_LIFE dnfsshort's ticket life in seconds (default 40; set
#                       when the realm is made)
#   DNFS_KDC_EXP_LIFE   dnfsexp's and dnfsrenew's ticket life in seconds
#                       (default 20; set when they are made)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=kdc
# shellcheck source-path=SCRIPTDIR source=lib/ganesha.sh
source "$SCRIPT_DIR/lib/ganesha.sh"

STATE_DIR=${DNFS_KDC_STATE_DIR:-/tmp/directnfs-kdc}
PORT=${DNFS_KDC_PORT:-2688}
REALM=${DNFS_KDC_REALM:-DIRECTNFS.TEST}
USER_PRINCIPAL=dnfsuser
SHORT_PRINCIPAL=dnfsshort
DAEMON_PRINCIPAL=postgres
SHORT_LIFE=${DNFS_KDC_SHORT_LIFE:-40}
EXP_PRINCIPAL=dnfsexp
RENEW_PRINCIPAL=dnfsrenew
EXP_LIFE=${DNFS_KDC_EXP_LIFE:-20}
KDC_PACKAGES=(krb5-kdc krb5-admin-server krb5-user)

KRB5_CONF=$STATE_DIR/krb5.conf
KDC_CONF=$STATE_DIR/kdc.conf
KDC_PIDFILE=$STATE_DIR/krb5kdc.pid
KDC_LOG=$STATE_DIR/krb5kdc.log
SERVER_KEYTAB=$STATE_DIR/server.keytab
CLIENT_KEYTAB=$STATE_DIR/client.keytab
SHORT_KEYTAB=$STATE_DIR/short.keytab
DAEMON_KEYTAB=$STATE_DIR/postgres.keytab
EXP_KEYTAB=$STATE_DIR/exp.keytab
RENEW_KEYTAB=$STATE_DIR/renew.keytab
USER_CCACHE=$STATE_DIR/user.ccache

usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}

# The realm's own tools, never the machine's config.
export KRB5_CONFIG=$KRB5_CONF KRB5_KDC_PROFILE=$KDC_CONF

ensure_kdc_packages() {
    local missing=0
    command -v krb5kdc >/dev/null || [[ -x /usr/sbin/krb5kdc ]] || missing=1
    command -v kadmin.local >/dev/null || [[ -x /usr/sbin/kadmin.local ]] || missing=1
    command -v kinit >/dev/null || missing=1
    [[ $missing == 0 ]] && return 0
    [[ $(id -u) == 0 ]] || die "packages missing (${KDC_PACKAGES[*]}) and not root"
    log "installing ${KDC_PACKAGES[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq -o Dpkg::Options::=--force-confold "${KDC_PACKAGES[@]}" >&2
}

# rdns and dns_canonicalize_hostname off: "nfs@127.0.0.1" names
# nfs/127.0.0.1@REALM as typed. ignore_acceptor_hostname lets Ganesha
# accept any nfs/ principal of its keytab, whatever its host name.
write_configs() {
    mkdir -p "$STATE_DIR"
    cat >"$KRB5_CONF" <<EOF
# Generated by scripts/server/kdc.sh for directnfs tests.
[libdefaults]
    default_realm = $REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = true
    udp_preference_limit = 1
    ticket_lifetime = 10h
    renew_lifetime = 7d
[realms]
    $REALM = {
        kdc = 127.0.0.1:$PORT
    }
[domain_realm]
    127.0.0.1 = $REALM
    localhost = $REALM
EOF
    cat >"$KDC_CONF" <<EOF
# Generated by scripts/server/kdc.sh for directnfs tests.
[kdcdefaults]
    kdc_ports = $PORT
    kdc_tcp_ports = $PORT
[realms]
    $REALM = {
        database_name = $STATE_DIR/principal
        key_stash_file = $STATE_DIR/stash
        acl_file = $STATE_DIR/kadm5.acl
        max_life = 10h
        max_renewable_life = 7d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:$KDC_LOG
EOF
    : >"$STATE_DIR/kadm5.acl"
}

# The database, principals and keytabs are made once per state dir.
ensure_realm() {
    # realm-2: made with nfs/127.0.0.2 (a realm made before is made again).
    [[ -f $STATE_DIR/principal && -f $SERVER_KEYTAB && -f $CLIENT_KEYTAB && -f $SHORT_KEYTAB &&
        -f $STATE_DIR/realm-2 ]] && return 0
    rm -f "$STATE_DIR"/principal* "$STATE_DIR/stash" "$SERVER_KEYTAB" "$CLIENT_KEYTAB" "$SHORT_KEYTAB" "$DAEMON_KEYTAB"
    log "creating realm $REALM in $STATE_DIR"
    kdb5_util create -s -r "$REALM" -P "dnfs-master-$$-$RANDOM" >/dev/null
    local host svc=()
    host=$(hostname)
    # 127.0.0.2: a second loopback path to the same server (the tests'
    # multipath mounts under Kerberos); the principal follows the path.
    for h in 127.0.0.1 127.0.0.2 localhost "$host"; do
        svc+=("nfs/$h")
    done
    local p
    for p in "${svc[@]}" "$USER_PRINCIPAL"; do
        # kadmin.local says "No policy specified ..." on stderr for each.
        kadmin.local -r "$REALM" -q "addprinc -randkey $p@$REALM" 2>&1 >/dev/null | grep -v '^No policy specified' >&2 || true
    done
    for p in "${svc[@]}"; do
        kadmin.local -r "$REALM" -q "ktadd -k $SERVER_KEYTAB $p@$REALM" >/dev/null
    done
    kadmin.local -r "$REALM" -q "ktadd -k $CLIENT_KEYTAB $USER_PRINCIPAL@$REALM" >/dev/null
    # Tickets of SHORT_LIFE seconds (its principal's max life caps them).
    kadmin.local -r "$REALM" -q "addprinc -randkey -maxlife \"$SHORT_LIFE seconds\" -maxrenewlife \"$SHORT_LIFE seconds\" $SHORT_PRINCIPAL@$REALM" 2>&1 >/dev/null | grep -v '^No policy specified' >&2 || true
    kadmin.local -r "$REALM" -q "ktadd -k $SHORT_KEYTAB $SHORT_PRINCIPAL@$REALM" >/dev/null
    touch "$STATE_DIR/realm-2"
    chmod 600 "$SERVER_KEYTAB" "$CLIENT_KEYTAB" "$SHORT_KEYTAB"
}

# The daemon principal, added to a realm made before it too (the realm is
# not made again: a running server keeps its keys). Its keytab is readable
# by the local user of the same name only (chowned at every start: the
# user may come after the realm).
ensure_daemon_principal() {
    if [[ ! -f $DAEMON_KEYTAB ]]; then
        kadmin.local -r "$REALM" -q "addprinc -randkey $DAEMON_PRINCIPAL@$REALM" 2>&1 >/dev/null |
            grep -v '^No policy specified\|already exists' >&2 || true
        kadmin.local -r "$REALM" -q "ktadd -k $DAEMON_KEYTAB.new $DAEMON_PRINCIPAL@$REALM" >/dev/null
        chmod 600 "$DAEMON_KEYTAB.new"
        mv "$DAEMON_KEYTAB.new" "$DAEMON_KEYTAB"
    fi
    if id "$DAEMON_PRINCIPAL" >/dev/null 2>&1; then
        chown "$DAEMON_PRINCIPAL" "$DAEMON_KEYTAB"
    fi
}

# The expiry test's users, added to a realm made before them (its other
# keys, and a running server's keytab, stay as they are).
ensure_expiry_users() {
    [[ -f $EXP_KEYTAB && -f $RENEW_KEYTAB ]] && return 0
    log "adding $EXP_PRINCIPAL and $RENEW_PRINCIPAL (tickets of $EXP_LIFE s)"
    rm -f "$EXP_KEYTAB" "$RENEW_KEYTAB"
    local p
    for p in "$EXP_PRINCIPAL" "$RENEW_PRINCIPAL"; do
        kadmin.local -r "$REALM" -q "delprinc -force $p@$REALM" >/dev/null 2>&1 || true
    done
    # maxrenewlife 0: kinit asks for a renewable ticket (renew_lifetime
    # above) and gets one that is not.
    kadmin.local -r "$REALM" -q "addprinc -randkey -maxlife \"$EXP_LIFE seconds\" -maxrenewlife 0 $EXP_PRINCIPAL@$REALM" 2>&1 >/dev/null | grep -v '^No policy specified' >&2 || true
    kadmin.local -r "$REALM" -q "addprinc -randkey -maxlife \"$EXP_LIFE seconds\" -maxrenewlife \"10 minutes\" $RENEW_PRINCIPAL@$REALM" 2>&1 >/dev/null | grep -v '^No policy specified' >&2 || true
    kadmin.local -r "$REALM" -q "ktadd -k $EXP_KEYTAB $EXP_PRINCIPAL@$REALM" >/dev/null
    kadmin.local -r "$REALM" -q "ktadd -k $RENEW_KEYTAB $RENEW_PRINCIPAL@$REALM" >/dev/null
    chmod 600 "$EXP_KEYTAB" "$RENEW_KEYTAB"
}

kdc_pid() { cat "$KDC_PIDFILE" 2>/dev/null || true; }
kdc_running() { pid_is "$(kdc_pid)" "$STATE_DIR"; }

# krb5kdc runs in the foreground (-n) in its own session, so $! is its PID;
# -P is not used because it only writes the file after forking.
start_kdc() {
    log "starting krb5kdc on 127.0.0.1:$PORT (realm $REALM)"
    setsid krb5kdc -n -r "$REALM" -P "$STATE_DIR/unused.pid" -- </dev/null >>"$KDC_LOG" 2>&1 &
    echo $! >"$KDC_PIDFILE"
}

# A kinit from the client keytab proves the KDC answers.
user_ticket() {
    kinit -k -t "$CLIENT_KEYTAB" -c "FILE:$USER_CCACHE" "$USER_PRINCIPAL@$REALM" 2>>"$STATE_DIR/kinit.err"
}

print_env() {
    echo "KRB5_CONFIG=$KRB5_CONF"
    echo "KRB5CCNAME=FILE:$USER_CCACHE"
    echo "DNFS_KRB5_CLIENT_KEYTAB=$CLIENT_KEYTAB"
    echo "DNFS_KRB5_SERVER_KEYTAB=$SERVER_KEYTAB"
    echo "DNFS_KRB5_PRINCIPAL=$USER_PRINCIPAL@$REALM"
    echo "DNFS_KRB5_SHORT_KEYTAB=$SHORT_KEYTAB"
    echo "DNFS_KRB5_SHORT_PRINCIPAL=$SHORT_PRINCIPAL@$REALM"
    echo "DNFS_KRB5_POSTGRES_KEYTAB=$DAEMON_KEYTAB"
    echo "DNFS_KRB5_POSTGRES_PRINCIPAL=$DAEMON_PRINCIPAL@$REALM"
    echo "DNFS_KRB5_EXP_KEYTAB=$EXP_KEYTAB"
    echo "DNFS_KRB5_RENEW_KEYTAB=$RENEW_KEYTAB"
    echo "DNFS_KDC_EXP_LIFE=$EXP_LIFE"
}

cmd_start() {
    ensure_kdc_packages
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/lock"
    flock -w 60 9 || die "state dir $STATE_DIR is locked by another command"
    write_configs
    ensure_realm
    ensure_daemon_principal
    ensure_expiry_users
    if ! kdc_running; then
        port_in_use "$PORT" && die "port $PORT is taken; set DNFS_KDC_PORT"
        start_kdc 9>&-
    fi
    if ! wait_until 15 user_ticket; then
        show_log_tail "$KDC_LOG"
        tail -n 3 "$STATE_DIR/kinit.err" >&2 || true
        die "the KDC did not issue a ticket to $USER_PRINCIPAL@$REALM"
    fi
    log "KDC up (pid $(kdc_pid)); ticket cache $USER_CCACHE"
    print_env
}

cmd_stop() {
    if kdc_running; then
        log "stopping krb5kdc (pid $(kdc_pid))"
        stop_pid "$(kdc_pid)" "$STATE_DIR" TERM 10
    fi
    rm -f "$KDC_PIDFILE"
}

cmd_env() {
    kdc_running || { log "the KDC is not running"; exit 3; }
    print_env
}

case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    *) usage ;;
esac

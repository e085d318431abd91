# shellcheck shell=bash
# crates/preload/tests/secure.sh — sourced by run.sh: the `secure` group.
#
#   secure  `dnfs run` under Kerberos and RPC-with-TLS, on NFSv3 and
#           NFSv4.1: python3 (tests/secure.py: writes, fsyncs, reads back,
#           renames, replaces, truncates, lists, removes) on a mount with
#           `security_default: krb5p` of the Kerberos server's export that
#           takes krb5p only (DNFS_TEST_URL_KRB5P), and on a mount with
#           `xprtsec: tls` through the STARTTLS port of the TLS front
#           (DNFS_TEST_TLS_DIR, DNFS_TEST_TLS_PORT) before the main server:
#           the same transcript as in a local directory, and the server's
#           copy of the tree the same as the local one. The same mounts at
#           `security_default: krb5i` (the export refuses it) and without
#           `xprtsec` (the front closes the connection) fail: so what
#           worked was krb5p, or TLS. Without a ticket (KRB5CCNAME naming
#           an empty cache, no client keytab): EACCES and a message naming
#           kinit, within seconds; a server certificate without the name
#           asked for (`tls_name`): the error at once, on a hard mount.
#
# Uses run.sh's helpers and variables (DNFS_BIN, WORK, RUNID, host,
# export_path, mountport, DNFS_TEST_EXPORT_DIR, check, ok, bad, step).
# shellcheck disable=SC2154  # run.sh's variables

group_secure() {
    step "dnfs run under Kerberos (krb5p) and RPC-with-TLS, NFSv3 and NFSv4.1 (secure.py)"
    local tab=$WORK/secure.tab
    # Soft mounts: a mount or call that cannot work (TLS or the flavor
    # lost) fails in about 30 s instead of waiting for ever as hard would.
    local BOUND='soft\ntimeo: 100\nretrans: 2\nmnt_timeout: 10'
    : >"$tab"
    local krb5p=${DNFS_TEST_URL_KRB5P:-} have_krb5=1 have_tls=1
    if [[ -z $krb5p ]]; then
        have_krb5=0
        if [[ -n ${DNFS_TEST_REQUIRE_KRB5:-} ]]; then
            bad "secure: Kerberos" "DNFS_TEST_REQUIRE_KRB5 is set but DNFS_TEST_URL_KRB5P is not"
        else
            echo "SKIPPED preload:secure krb5p: DNFS_TEST_URL_KRB5P is not set"
        fi
    fi
    if [[ -z ${DNFS_TEST_TLS_DIR:-} || -z ${DNFS_TEST_TLS_PORT:-} ]]; then
        have_tls=0
        if [[ -n ${DNFS_TEST_REQUIRE_TLS:-} ]]; then
            bad "secure: TLS" "DNFS_TEST_REQUIRE_TLS is set but DNFS_TEST_TLS_DIR or _PORT is not"
        else
            echo "SKIPPED preload:secure tls: DNFS_TEST_TLS_DIR/DNFS_TEST_TLS_PORT are not set"
        fi
    fi
    local kview=
    if ((have_krb5)); then
        local u=${krb5p#nfs://}
        local kh=${u%%/*} kr=/${u#*/}
        kview=${kr%%\?*}
        local kq=${kr#*\?} kport kmport
        kport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$kq")
        kmport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$kq")
        # krb5p on each version; krb5i, which this export refuses.
        {
            printf 'server: k3\npath: %s\nport: %s\nmount_port: %s\nsecurity_default: krb5p\n%b\nexport: %s mount: /dnfs-secure-k3\n' \
                "$kh" "$kport" "$kmport" "$BOUND" "$kview"
            printf 'server: k41\npath: %s\nport: %s\nnfs_version: nfsv4.1\nsecurity_default: krb5p\n%b\nexport: %s mount: /dnfs-secure-k41\n' \
                "$kh" "$kport" "$BOUND" "$kview"
            printf 'server: ki3\npath: %s\nport: %s\nmount_port: %s\nsecurity_default: krb5i\nmnt_timeout: 10\nexport: %s mount: /dnfs-secure-ki3\n' \
                "$kh" "$kport" "$kmport" "$kview"
        } >>"$tab"
    fi
    if ((have_tls)); then
        local ca=$DNFS_TEST_TLS_DIR/ca.pem tport=$DNFS_TEST_TLS_PORT
        # The front relays the main server's NFS port at tport and its MOUNT
        # port at tport+8 (MOUNT goes in TLS too: docs/security.md).
        local mountport=$((DNFS_TEST_TLS_PORT + 8))
        {
            printf 'server: t3\npath: %s\nport: %s\nmount_port: %s\nxprtsec: tls\ntls_ca: %s\n%b\nexport: %s mount: /dnfs-secure-t3\n' \
                "$host" "$tport" "$mountport" "$ca" "$BOUND" "$export_path"
            printf 'server: t41\npath: %s\nport: %s\nnfs_version: nfsv4.1\nxprtsec: tls\ntls_ca: %s\n%b\nexport: %s mount: /dnfs-secure-t41\n' \
                "$host" "$tport" "$ca" "$BOUND" "$export_path"
            printf 'server: tname\npath: %s\nport: %s\nmount_port: %s\nxprtsec: tls\ntls_ca: %s\ntls_name: other.test\nexport: %s mount: /dnfs-secure-tname\n' \
                "$host" "$tport" "$mountport" "$ca" "$export_path"
            printf 'server: tplain\npath: %s\nport: %s\nmount_port: %s\nsoft\ntimeo: 10\nretrans: 1\nmnt_timeout: 1\nexport: %s mount: /dnfs-secure-tplain\n' \
                "$host" "$tport" "$mountport" "$export_path"
        } >>"$tab"
    fi
    chmod 644 "$tab"
    local SRUN=("$DNFS_BIN" --config "$tab" run --)

    # The reference: the program in a local directory.
    mkdir -p "$WORK/secure-local"
    if ! python3 crates/preload/tests/secure.py "$WORK/secure-local" >"$WORK/secure-local.out" 2>&1; then
        bad "secure.py in a local directory" "$(tail -3 "$WORK/secure-local.out" | tr '\n' ' ')"
        return
    fi
    local want
    want=$(cd "$WORK/secure-local" && find . -type f -exec sha256sum {} + | sort)

    # secure_mount LABEL MOUNT VIEW: secure.py on MOUNT/RUNID-secure, its
    # transcript and the server's copy (VIEW, the export on this host)
    # compared with the local run.
    secure_mount() {
        local label=$1 dir=$2/$RUNID-secure view=$3/$RUNID-secure
        if ! "${SRUN[@]}" mkdir "$dir" 2>"$WORK/secure.err"; then
            bad "$label: mkdir" "$(tail -2 "$WORK/secure.err" | tr '\n' ' ')"
            return
        fi
        if ! "${SRUN[@]}" python3 crates/preload/tests/secure.py "$dir" >"$WORK/secure.out" 2>"$WORK/secure.err"; then
            bad "$label: secure.py" "$(tail -3 "$WORK/secure.err" | tr '\n' ' ')"
        else
            check "$label: python3 writes, fsyncs, reads, renames: the local transcript" \
                "$(cat "$WORK/secure-local.out")" "$(cat "$WORK/secure.out")"
            check "$label: the server's copy is the local tree" "$want" \
                "$(cd "$view" && find . -type f -exec sha256sum {} + | sort)"
        fi
        rm -rf "$view"
    }
    # refused LABEL PATH: `ls PATH` through dnfs run fails, at once.
    refused() {
        local label=$1 t0=$SECONDS out code=0
        out=$("${SRUN[@]}" ls "$2" 2>&1) || code=$?
        if ((code > 0 && code < 128 && SECONDS - t0 <= 10)); then
            ok "$label (exit $code in $((SECONDS - t0)) s)"
        else
            bad "$label" "exit $code after $((SECONDS - t0)) s: $out"
        fi
    }

    if ((have_krb5)); then
        secure_mount "krb5p, NFSv3" /dnfs-secure-k3 "$kview"
        secure_mount "krb5p, NFSv4.1" /dnfs-secure-k41 "$kview"
        refused "the krb5p-only export refuses security_default: krb5i" /dnfs-secure-ki3
        # No ticket: an empty cache, no client keytab.
        : >"$WORK/empty.ccache"
        local t0=$SECONDS out code=0 m
        for m in k3 k41; do
            t0=$SECONDS
            code=0
            out=$(KRB5CCNAME=FILE:$WORK/empty.ccache KRB5_CLIENT_KTNAME=FILE:$WORK/missing.keytab \
                "${SRUN[@]}" cat "/dnfs-secure-$m/none" 2>&1) || code=$?
            if ((code > 0 && code < 128 && SECONDS - t0 <= 5)) &&
                [[ $out == *"Permission denied"* && $out == *kinit* ]]; then
                ok "no ticket ($m): EACCES naming kinit in $((SECONDS - t0)) s"
            else
                bad "no ticket ($m): EACCES naming kinit within 5 s" "exit $code after $((SECONDS - t0)) s: $out"
            fi
        done
    fi
    if ((have_tls)); then
        secure_mount "TLS, NFSv3" /dnfs-secure-t3 "$DNFS_TEST_EXPORT_DIR"
        secure_mount "TLS, NFSv4.1" /dnfs-secure-t41 "$DNFS_TEST_EXPORT_DIR"
        refused "the front's STARTTLS port refuses a mount without xprtsec" /dnfs-secure-tplain
        # A certificate that does not carry the name asked for: a hard
        # mount, failed at once with the reason (it used to wait for ever).
        local t0=$SECONDS out code=0
        out=$("${SRUN[@]}" ls /dnfs-secure-tname 2>&1) || code=$?
        if ((code > 0 && code < 128 && SECONDS - t0 <= 5)) && [[ $out == *'not valid for name "other.test"'* ]]; then
            ok "TLS, a certificate without the name asked for: an error naming it in $((SECONDS - t0)) s (hard mount)"
        else
            bad "TLS, a certificate without the name asked for" "exit $code after $((SECONDS - t0)) s: $out"
        fi
    fi
}

# pgkrb: PostgreSQL 15, unchanged, through `dnfs run` on the krb5p-only
# export of the Kerberos server (DNFS_TEST_URL_KRB5P), NFSv3 and NFSv4.1.
# The postmaster has no one to run kinit: every process of the cluster gets
# its tickets from the postgres principal's keytab (kdc.sh's postgres.keytab,
# DNFS_KRB5_POSTGRES_KEYTAB, else beside KRB5_CONFIG) through MIT's
# KRB5_CLIENT_KTNAME, into a ticket cache of postgres's own. The server maps
# postgres@REALM to the postgres user (nfs-server.sh's idmapd.conf): a
# directory postgres makes there is postgres's on each version (checked
# first, saying what to fix when it is not). Over NFSv3: initdb -k, pg_ctl
# start (which refuses a data directory owned by another uid), pgbench -i
# -s 1 and -T 5 with no failed transaction, the rows checked, a clean stop;
# then the same cluster over NFSv4.1 (one initdb: it takes most of the
# time): start, a new table, pgbench -T 5, the rows, stop. Every file of
# the cluster on the server is owned by postgres.
PGKRB_PIDFILE=
group_pgkrb() {
    step "PostgreSQL 15 through dnfs run at krb5p with postgres's keytab, NFSv3 and NFSv4.1"
    local krb5p=${DNFS_TEST_URL_KRB5P:-}
    if [[ -z $krb5p ]]; then
        if [[ -n ${DNFS_TEST_REQUIRE_KRB5:-} ]]; then
            bad "pgkrb" "DNFS_TEST_REQUIRE_KRB5 is set but DNFS_TEST_URL_KRB5P is not"
        else
            echo "SKIPPED preload:pgkrb: DNFS_TEST_URL_KRB5P is not set"
        fi
        return
    fi
    id postgres >/dev/null 2>&1 || { bad "pgkrb: postgres user" "missing (apt-get install postgresql)"; return; }
    local keytab=${DNFS_KRB5_POSTGRES_KEYTAB:-$(dirname "${KRB5_CONFIG:-/nonexistent/x}")/postgres.keytab}
    if [[ ! -f $keytab ]]; then
        bad "pgkrb: postgres's keytab" "no $keytab (scripts/server/kdc.sh start makes it)"
        return
    fi
    check "pgkrb: postgres's keytab is readable by postgres alone" "postgres 600" "$(stat -c '%U %a' "$keytab")"
    local u=${krb5p#nfs://}
    local kh=${u%%/*} kr=/${u#*/}
    local kview=${kr%%\?*}
    local kq=${kr#*\?} kport kmport
    kport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$kq")
    kmport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$kq")
    local tab=$WORK/pgkrb.tab
    {
        printf 'server: pk3\npath: %s\nport: %s\nmount_port: %s\nsecurity_default: krb5p\nexport: %s mount: /dnfs-pgkrb-k3\n' \
            "$kh" "$kport" "$kmport" "$kview"
        printf 'server: pk41\npath: %s\nport: %s\nnfs_version: nfsv4.1\nsecurity_default: krb5p\nexport: %s mount: /dnfs-pgkrb-k41\n' \
            "$kh" "$kport" "$kview"
    } >"$tab"
    chmod 644 "$tab"
    # ANCHOR: pgkrb_env
    # postgres's own ticket cache (the caller's KRB5CCNAME is root's) and
    # its keytab: MIT's library gets and renews the tickets from it.
    local cc=$WORK/pgkrb-cc sock=$WORK/pgkrb-sock
    mkdir -p "$cc" "$sock"
    chown postgres "$cc" "$sock" "$WORK"
    chmod 700 "$cc"
    local PG=(runuser -u postgres -- env KRB5CCNAME="FILE:$cc/ccache" KRB5_CLIENT_KTNAME="FILE:$keytab"
        "$DNFS_BIN" --config "$tab" run --)
    # ANCHOR_END: pgkrb_env
    local PSQL=(runuser -u postgres -- "$PGBIN/psql" -X -q -At -h "$sock" -p 5432 postgres)
    local opts="-p 5432 -k $sock -c listen_addresses=''"
    local name=$RUNID-pgkrb view=$kview/$RUNID-pgkrb v L owner t0=$SECONDS
    # The principal's uid on each version: a directory postgres makes.
    for v in 3 41; do
        L="pgkrb: krb5p, NFSv${v/41/4.1}: "
        if ! "${PG[@]}" mkdir -p "/dnfs-pgkrb-k$v/$name/v$v" 2>"$WORK/pgkrb.err"; then
            bad "${L}mkdir as postgres" "$(tail -2 "$WORK/pgkrb.err" | tr '\n' ' ')"
            rm -rf "$view"
            return
        fi
        owner=$(stat -c '%U:%G (%u:%g)' "$view/v$v")
        if [[ $owner != postgres:postgres* ]]; then
            bad "${L}the server maps postgres's principal to the postgres user" \
                "the directory postgres made is $owner on the server: Ganesha mapped the principal to another uid (anonymous: its idmapd.conf lacks Local-Realms = the realm; nfs-server.sh DNFS_KRB5 writes it), and pg_ctl would refuse a data directory it does not own"
            rm -rf "$view"
            return
        fi
        ok "${L}the server maps postgres's principal to the postgres user ($owner)"
    done
    # pgkrb_rows LABEL: every account is there, the accounts', tellers' and
    # branches' balances agree (each pgbench transaction adds its delta to
    # one of each: a lost or torn write breaks it), and the last run's
    # transactions are in the history (pgbench empties it before a run).
    pgkrb_rows() {
        check "$1the rows: 100000 accounts, balances agree, transactions recorded" "100000|t|t" \
            "$("${PSQL[@]}" -c "SELECT count(*), sum(abalance) = (SELECT sum(tbalance) FROM pgbench_tellers) AND sum(abalance) = (SELECT sum(bbalance) FROM pgbench_branches), (SELECT count(*) > 0 FROM pgbench_history) FROM pgbench_accounts" 2>&1)"
    }
    pgkrb_bench() {
        if runuser -u postgres -- "$PGBIN/pgbench" -h "$sock" -p 5432 -c 4 -j 2 -T 5 postgres >"$WORK/pgkrb-bench" 2>&1 &&
            grep -q "number of failed transactions: 0" "$WORK/pgkrb-bench"; then
            ok "$1pgbench -c 4 -j 2 -T 5: $(grep -o 'tps = [0-9.]*' "$WORK/pgkrb-bench" | head -1), 0 failed"
        else
            bad "$1pgbench -c 4 -j 2 -T 5" "$(tail -3 "$WORK/pgkrb-bench" | tr '\n' ' ')"
        fi
    }
    L="pgkrb: krb5p, NFSv3: "
    local data=/dnfs-pgkrb-k3/$name/data log=$WORK/pgkrb.log
    # ANCHOR: pgkrb_start
    expect "${L}initdb -k as postgres" "${PG[@]}" "$PGBIN/initdb" -k -A trust -D "$data"
    expect "${L}pg_ctl start" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 120 start
    # ANCHOR_END: pgkrb_start
    PGKRB_PIDFILE=$view/data/postmaster.pid
    expect "${L}pgbench -i -s 1" runuser -u postgres -- "$PGBIN/pgbench" -q -h "$sock" -p 5432 -i -s 1 postgres
    pgkrb_bench "$L"
    pgkrb_rows "$L"
    expect "${L}clean shutdown" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -m fast -w -t 120 stop
    PGKRB_PIDFILE=
    # The same cluster through the NFSv4.1 mount of the same export.
    L="pgkrb: krb5p, NFSv4.1: "
    data=/dnfs-pgkrb-k41/$name/data
    expect "${L}pg_ctl start of the same cluster" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 120 start
    PGKRB_PIDFILE=$view/data/postmaster.pid
    expect "${L}a new table (new files)" "${PSQL[@]}" -c "CREATE TABLE v41 AS SELECT g AS id FROM generate_series(1, 10000) g"
    pgkrb_bench "$L"
    pgkrb_rows "$L"
    check "${L}the new table's rows" "10000|50005000" "$("${PSQL[@]}" -c "SELECT count(*), sum(id) FROM v41" 2>&1)"
    expect "${L}clean shutdown" "${PG[@]}" "$PGBIN/pg_ctl" -D "$data" -m fast -w -t 120 stop
    # shellcheck disable=SC2034 # read by run.sh's cleanup
    PGKRB_PIDFILE=
    check "pgkrb: every file of the cluster on the server is postgres's" "0 not postgres's, PG_VERSION 15" \
        "$(find "$view" ! -user postgres | wc -l) not postgres's, PG_VERSION $(cat "$view/data/PG_VERSION" 2>/dev/null)"
    echo "     (pgkrb: $((SECONDS - t0)) s)"
    rm -rf "$view"
}

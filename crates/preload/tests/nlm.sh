# shellcheck shell=bash
# crates/preload/tests/nlm.sh — sourced by run.sh: the `nlm` group.
#
#   nlm   NFSv3 locks through the server's lock manager (NLM), on a server
#         started with DNFS_NLM=1 (DNFS_TEST_URL_NLM): two programs with
#         different shadow directories (no local lock in common, as on two
#         hosts) exclude each other — F_GETLK sees the other's lock with
#         its pid, F_SETLK EAGAIN, F_SETLKW waits, close and exit release,
#         a SIGKILLed holder's lock goes at the next lock of its host;
#         sqlite3 read-modify-write transactions from the two "hosts" on
#         one database end exact (NFSv3 with NLM, and NFSv4.1); a DuckDB
#         database open read-write on one host is refused to the other
#         until it is closed (both versions; tests/duckhost.py); without a
#         lock manager (the main server) the lock fails with ENOLCK and
#         one warning naming `nolock`; with `nolock` it is local and works.
#
# Uses run.sh's helpers and variables (RUN, WORK, RUNID, MNT, NFS,
# export_path, server_block, check, ok, bad, step).
# shellcheck disable=SC2154,SC2093,SC1083  # run.sh's variables; coproc fds

# The dnfstab lines of the NLM server (`nlm`) and of the main server
# without `nolock` (`nonlm`), appended to run.sh's dnfstab.
nlm_dnfstab() {
    if [[ -n ${DNFS_TEST_URL_NLM:-} ]]; then
        local u=${DNFS_TEST_URL_NLM#nfs://}
        local h=${u%%/*} r=/${u#*/}
        local e=${r%%\?*} q=${r#*\?} p
        echo "server: nlm"
        echo "path: $h"
        # The NFS and MOUNT ports as given; NLM's from the server's
        # portmapper (GETPORT), as for a filer.
        p=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$q")
        [[ -n $p ]] && echo "port: $p"
        p=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$q")
        [[ -n $p ]] && echo "mount_port: $p"
        echo "export: $e mount: $MNT-nlm"
        echo "server: nlm41"
        echo "path: $h"
        p=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$q")
        [[ -n $p ]] && echo "port: $p"
        echo "nfs_version: nfsv4.1"
        echo "export: $e mount: $MNT-nlm41"
    fi
    server_block nonlm "$export_path" "$MNT-nonlm"
}

group_nlm() {
    step "NFSv3 locks through NLM: two hosts exclude each other (lockprobe.c, sqlite3)"
    cc -O1 -Wall -Werror -o "$WORK/lockprobe" crates/preload/tests/c/lockprobe.c
    mkdir -p "$WORK/shadowA" "$WORK/shadowB"

    # Without a lock manager (the main server, mounted without nolock):
    # ENOLCK for F_GETLK and F_SETLK, one warning naming the option.
    local out err n
    nfs sh -c ": > '$MNT-nonlm/$RUNID/nolm'"
    out=$(probeA try "$MNT-nonlm/$RUNID/nolm" fcntl w 0 1 2>"$WORK/nolm.err")
    err=$(cat "$WORK/nolm.err")
    check "no NLM on the server: F_GETLK and F_SETLK fail with ENOLCK" "$(printf 'getlk ENOLCK\nENOLCK')" "$out"
    n=$(grep -c "ENOLCK (this warning is given once)" <<<"$err" || true)
    if [[ $n == 1 && $err == *nolock* && $err == *local_lock=* ]]; then
        ok "no NLM: one warning, naming nolock and local_lock="
    else
        bad "no NLM: one warning, naming nolock and local_lock=" "$n warnings: $err"
    fi
    check "no NLM: flock fails with ENOLCK" ENOLCK "$(probeA try "$MNT-nonlm/$RUNID/nolm" flock w 0 0 2>/dev/null)"
    # The same server through the main mount, which says nolock: local.
    nfs sh -c ": > '$NFS/nolm'"
    check "nolock: the lock is taken on this host only" "$(printf 'getlk u 0 1 0\nok')" \
        "$(probeA try "$NFS/nolm" fcntl w 0 1)"

    if [[ -z ${DNFS_TEST_URL_NLM:-} ]]; then
        if [[ -n ${DNFS_TEST_REQUIRE_SERVER:-} ]]; then bad "nlm" "DNFS_TEST_URL_NLM is not set"; fi
        echo "SKIPPED nlm (two hosts): DNFS_TEST_URL_NLM is not set"
        return
    fi
    nfs mkdir -p "$MNT-nlm/$RUNID"
    # shellcheck disable=SC2034 # line: set by hold and tell (run.sh)
    local f=$MNT-nlm/$RUNID/locked line t
    nfs sh -c ": > '$f'"

    hold fcntl w 0 100
    out=$(probeB try "$f" fcntl w 50 10)
    if [[ $out == "getlk w 0 100 "[1-9]*$'\n'EAGAIN ]]; then
        ok "NFSv3: B's F_GETLK sees A's lock (NLM4_TEST, with A's pid), F_SETLK EAGAIN"
    else
        bad "NFSv3: B's F_GETLK sees A's lock (NLM4_TEST, with A's pid), F_SETLK EAGAIN" "$out"
    fi
    check "NFSv3: a read lock conflicts too" EAGAIN "$(probeB try "$f" fcntl r 99 1 | tail -1)"
    check "NFSv3: flock (the whole file on the server) conflicts" EAGAIN "$(probeB try "$f" flock w 0 0)"
    check "NFSv3: bytes beyond the range are free" "$(printf 'getlk u 200 10 0\nok')" \
        "$(probeB try "$f" fcntl w 200 10)"
    probeB wait "$f" fcntl w 0 100 >"$WORK/nlm-waited" &
    local waiter=$!
    sleep 2
    tell unlock
    wait "$waiter" || true
    out=$(cat "$WORK/nlm-waited")
    t=${out#ok }
    if [[ $out == ok* ]] && ((t >= 1500)); then ok "NFSv3: B's F_SETLKW waited for A's unlock (${t} ms)"; else bad "NFSv3: B's F_SETLKW waited for A's unlock" "$out"; fi
    unhold

    hold fcntl w 0 0
    tell closeother
    check "NFSv3: A's close of another descriptor released the record lock" ok "$(probeB try "$f" fcntl w 0 0 | tail -1)"
    unhold

    hold ofd w 0 0
    check "NFSv3: OFD lock conflicts" EAGAIN "$(probeB try "$f" ofd w 0 1 | tail -1)"
    tell close
    check "NFSv3: the OFD lock went with its descriptor" ok "$(probeB try "$f" ofd w 0 1 | tail -1)"
    unhold

    hold flock w 0 0
    check "NFSv3: flock conflicts" EAGAIN "$(probeB try "$f" flock r 0 0)"
    unhold
    # A exited holding it (no close, no unlock): its exit released it.
    check "NFSv3: A's exit released its flock lock on the server" ok "$(probeB try "$f" flock w 0 0)"
    hold fcntl w 0 0
    unhold
    check "NFSv3: A's exit released its record lock on the server" ok "$(probeB try "$f" fcntl w 0 0 | tail -1)"

    # A killed (SIGKILL) holding a lock: it stays on the server (B, another
    # host, is refused) until another process of A's host wants a lock,
    # which releases the dead holder's locks (its list in A's shadow
    # directory) and gets it.
    local victim
    hold fcntl w 0 0
    out=$(probeB try "$f" fcntl w 0 1)
    victim=$(sed -n 's/^getlk w 0 0 \([0-9][0-9]*\)$/\1/p' <<<"$out")
    if [[ -n $victim && $(cat "/proc/$victim/comm" 2>/dev/null) == lockprobe ]]; then
        kill -9 "$victim"
        wait "$HOLD_PID" 2>/dev/null || true
        check "NFSv3: a SIGKILLed holder's lock stays on the server (another host refused)" EAGAIN \
            "$(probeB try "$f" fcntl w 0 1 | tail -1)"
        check "NFSv3: the next process of the dead holder's host releases it and locks" ok \
            "$(probeA try "$f" fcntl w 0 1 | tail -1)"
        check "NFSv3: then the other host gets it too" ok "$(probeB try "$f" fcntl w 0 1 | tail -1)"
    else
        bad "NFSv3: F_GETLK names the holder's pid" "$out"
        unhold
    fi

    nlm_sqlite_two_hosts "NFSv3 with NLM" "$MNT-nlm/$RUNID/rmw.db"
    nfs mkdir -p "$MNT-nlm41/$RUNID/v41"
    nlm_sqlite_two_hosts "NFSv4.1" "$MNT-nlm41/$RUNID/v41/rmw.db"
    nlm_duckdb_two_hosts "NFSv3 with NLM" "$MNT-nlm/$RUNID/duck.db"
    nlm_duckdb_two_hosts "NFSv4.1" "$MNT-nlm41/$RUNID/v41/duck.db"
}

# nlm_duckdb_two_hosts LABEL DB: host A opens a DuckDB database
# read-write and keeps it open; host B's read-write open is refused with
# DuckDB's lock error (its fcntl lock reached the server); once A closed
# it, B opens it and sees A's row. DuckDB comes from PyPI (pip), installed
# here when missing.
nlm_duckdb_two_hosts() {
    local label=$1 db=$2 line out
    if ! python3 -c 'import duckdb' 2>/dev/null; then
        python3 -m pip install --quiet duckdb >"$WORK/pip.out" 2>&1 ||
            { bad "$label: DuckDB" "pip install duckdb failed: $(tail -1 "$WORK/pip.out")"; return; }
    fi
    local duck=(python3 "$ROOT/crates/preload/tests/duckhost.py")
    coproc DUCK { DIRECTNFS_SHADOW_DIR=$WORK/shadowA nfs "${duck[@]}" hold "$db" 2>&1; }
    local pid=$DUCK_PID
    line=
    read -r -t 120 line <&"${DUCK[0]}" || true
    check "$label: DuckDB host A opens the database read-write" held "$line"
    out=$(DIRECTNFS_SHADOW_DIR=$WORK/shadowB nfs "${duck[@]}" try "$db" 2>&1)
    if [[ $out == "refused: "*"Could not set lock on file"* ]]; then
        ok "$label: DuckDB host B's read-write open is refused while A has it (${out:0:60}...)"
    else
        bad "$label: DuckDB host B's read-write open is refused while A has it" "$out"
    fi
    exec {DUCK[1]}>&-
    line=
    read -r -t 120 line <&"${DUCK[0]}" || true
    wait "$pid" || true
    check "$label: DuckDB host A closes it" closed "$line"
    check "$label: then host B opens it read-write and sees A's row" "opened 2" \
        "$(DIRECTNFS_SHADOW_DIR=$WORK/shadowB nfs "${duck[@]}" try "$db" 2>&1)"
}

# nlm_sqlite_two_hosts LABEL DB: two "hosts" (shadow directories A and
# B) each run NLM_SQLITE_TXNS (default 200) read-modify-write
# transactions on one counter at once; the count must be exact.
nlm_sqlite_two_hosts() {
    local label=$1 db=$2 txns=${NLM_SQLITE_TXNS:-200} w
    nfs sqlite3 "$db" "CREATE TABLE c(n INTEGER); INSERT INTO c VALUES (0);"
    local script
    script=$(for _ in $(seq 1 "$txns"); do
        echo "BEGIN IMMEDIATE; UPDATE c SET n = n + 1; COMMIT;"
    done)
    for w in A B; do
        DIRECTNFS_SHADOW_DIR=$WORK/shadow$w nfs sqlite3 -cmd ".timeout 120000" "$db" "$script" \
            >"$WORK/rmw-$w.out" 2>&1 &
    done
    wait
    check "$label: 2 x $txns sqlite3 read-modify-write transactions from two hosts end exact" \
        "$(printf '%s\nok' $((2 * txns)))" \
        "$(nfs sqlite3 "$db" "SELECT n FROM c; PRAGMA integrity_check;" 2>&1)"
}

#!/usr/bin/env bash
# crates/sqlite/tests/run.sh — the extension in the real sqlite3 shell: the
# contract that `.load target/release/libdirectnfs_sqlite` needs no entry
# point, a database by nfs:// URL, DELETE and WAL journals, integrity, a
# local path refused, and DIRECTNFS_SQLITE_DEFAULT=1.
# (The Rust tests in tests/sql.rs cover the rest through libsqlite3.)
#
#   DNFS_TEST_URL='nfs://127.0.0.1/export?nfsport=2049&mountport=20048' crates/sqlite/tests/run.sh
#
# DNFS_SQLITE3 names the shell (default sqlite3); tests/sanitized.sh sets it
# to a small shell built with ASan + UBSan against a sanitized SQLite.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
if [[ -z ${DNFS_TEST_URL:-} ]]; then
    [[ -z ${DNFS_TEST_REQUIRE_SERVER:-} ]] || { echo "run.sh: DNFS_TEST_REQUIRE_SERVER set but DNFS_TEST_URL not" >&2; exit 1; }
    echo "run.sh: SKIPPED sqlite3 shell tests: DNFS_TEST_URL is not set" >&2
    exit 0
fi
SQLITE3=${DNFS_SQLITE3:-sqlite3}
command -v "$SQLITE3" >/dev/null || { echo "run.sh: $SQLITE3 shell not installed (apt-get install sqlite3)" >&2; exit 1; }
# dnfs too: the stuck-lock case runs `dnfs sqlite-unlock`.
# The whole workspace, as the other steps build it (a build of some
# packages only resolves other features and rebuilds them).
cargo build --release --workspace

# nfs://host/export?q -> file: URI naming nfs://host/export/NAME?q, with ?
# and & percent-encoded so the shell's URI parser keeps them in the name.
base=${DNFS_TEST_URL%%\?*}
query=${DNFS_TEST_URL#"$base"}
query=${query#\?}
name=cli-$$-$RANDOM.db
enc_query=${query//&/%26}
uri="file:${base%/}/$name${enc_query:+%3F$enc_query}?vfs=directnfs"
plain="${base%/}/$name${query:+?$query}"
fail=0
check() { # name expected actual
    if [[ $2 == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2] got [$3]"; fail=1; fi
}

out=$("$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open $uri
PRAGMA journal_mode=DELETE;
CREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
INSERT INTO t SELECT i, printf('row-%06d', i) FROM n;
CREATE INDEX t_v ON t(v);
SELECT count(*), sum(i) FROM t;
PRAGMA integrity_check;
PRAGMA journal_mode=WAL;
BEGIN; UPDATE t SET v = v || '!' WHERE i % 2 = 0; COMMIT;
SELECT count(*) FROM t WHERE v LIKE '%!';
PRAGMA integrity_check;
SQL
)
check "load without entry point, DELETE then WAL" \
    "$(printf 'delete\n5000|12502500\nok\nwal\n2500\nok')" "$out"

out=$("$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open $uri
SELECT count(*) FROM t;
PRAGMA journal_mode;
PRAGMA integrity_check;
PRAGMA journal_mode=DELETE;
SQL
)
check "reopened by a new process" "$(printf '5000\nwal\nok\ndelete')" "$out"

out=$(DIRECTNFS_SQLITE_DEFAULT=1 "$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open $plain
SELECT count(*) FROM t;
SQL
)
check "DIRECTNFS_SQLITE_DEFAULT=1 makes it the default VFS" "5000" "$out"

out=$(DIRECTNFS_TAB=/nonexistent "$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open file:/tmp/not-on-nfs-$$.db?vfs=directnfs
SELECT 1;
SQL
)
# (A sanitizer report also ends the shell; it must not pass for a refusal.)
if [[ $out == *"unable to open database"* && $out != *Sanitizer* && $out != *"runtime error:"* ]]; then
    echo "ok   a local path is refused"
else
    echo "FAIL a local path is refused: $out"
    fail=1
fi

# A stuck lock: a lock file naming a process of a host that is gone
# (NFSv3; on NFSv4.1 the lock is a byte-range LOCK and no file is made).
# SQLite itself says only "database is locked"; the owner and the lock
# file reach the user through the SQLite error log (`.log stderr`, code 5
# SQLITE_BUSY) and, with DIRECTNFS_SQLITE_VERBOSE=1, stderr. Then `dnfs
# sqlite-unlock` removes it once told that host is gone, and the write
# goes through.
if [[ $DNFS_TEST_URL == *vers=4* ]]; then
    echo "ok   (stuck lock file: NFSv3 only; NFSv4.1 makes no lock file)"
elif [[ -z ${DNFS_TEST_EXPORT_DIR:-} ]]; then
    if [[ -n ${DNFS_TEST_REQUIRE_SERVER:-} ]]; then
        echo "FAIL stuck lock: DNFS_TEST_REQUIRE_SERVER is set but DNFS_TEST_EXPORT_DIR is not"
        fail=1
    else
        echo "run.sh: SKIPPED stuck lock owner shown: DNFS_TEST_EXPORT_DIR is not set" >&2
    fi
else
    stuck=cli-stuck-$$-$RANDOM.db
    stuck_uri="file:${base%/}/$stuck${enc_query:+%3F$enc_query}?vfs=directnfs"
    stuck_plain="${base%/}/$stuck${query:+?$query}"
    stuck_owner="pid 4242 on host gone-host.invalid"
    out=$("$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open $stuck_uri
CREATE TABLE s(i);
SQL
)
    check "stuck lock: database made" "" "$out"
    ln -s "directnfs-sqlite-lock 2 pid=4242 start=1 nonce=00000000000000ab host=gone-host.invalid" \
        "$DNFS_TEST_EXPORT_DIR/$stuck.dnfs-lock"
    out=$("$SQLITE3" <<SQL 2>&1 || true
.log stderr
.load target/release/libdirectnfs_sqlite
.open $stuck_uri
INSERT INTO s VALUES (1);
SQL
)
    if [[ $out == *"database is locked"* && $out == *"(5) "*"locked by $stuck_owner (lock file "*"$stuck.dnfs-lock"* ]]; then
        echo "ok   stuck lock: the SQLite log names its owner and lock file"
    else
        echo "FAIL stuck lock: the SQLite log names its owner and lock file: $out"
        fail=1
    fi
    out=$(DIRECTNFS_SQLITE_VERBOSE=1 "$SQLITE3" <<SQL 2>&1 || true
.load target/release/libdirectnfs_sqlite
.open $stuck_uri
INSERT INTO s VALUES (1);
SQL
)
    if [[ $out == *"directnfs-sqlite: "*"locked by $stuck_owner"*"--host-gone gone-host.invalid"* ]]; then
        echo "ok   stuck lock: DIRECTNFS_SQLITE_VERBOSE=1 prints its owner"
    else
        echo "FAIL stuck lock: DIRECTNFS_SQLITE_VERBOSE=1 prints its owner: $out"
        fail=1
    fi
    out=$(target/release/dnfs sqlite-unlock "$stuck_plain" --host-gone gone-host.invalid 2>&1 || true)
    check "stuck lock: dnfs sqlite-unlock --host-gone removes it" \
        "removed lock file /$stuck.dnfs-lock of $stuck_owner" "$out"
    out=$("$SQLITE3" <<SQL 2>&1 || echo "[exit status $?]"
.load target/release/libdirectnfs_sqlite
.open $stuck_uri
INSERT INTO s VALUES (1);
SELECT count(*) FROM s;
SQL
)
    check "stuck lock: the database is writable again" "1" "$out"
    rm -f "$DNFS_TEST_EXPORT_DIR/$stuck.dnfs-lock"
    target/release/dnfs rm "$stuck_plain" >/dev/null 2>&1 || true
fi

# Clean up with the dnfs CLI when it is built (cargo build --release).
if [[ -x target/release/dnfs ]]; then
    target/release/dnfs rm "$plain" >/dev/null 2>&1 || true
fi
exit $fail

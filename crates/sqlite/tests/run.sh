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
cargo build --release -p directnfs-sqlite

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

# Clean up with the dnfs CLI when it is built (cargo build --release).
if [[ -x target/release/dnfs ]]; then
    target/release/dnfs rm "$plain" >/dev/null 2>&1 || true
fi
exit $fail

#!/usr/bin/env bash
# crates/sqlite/tests/sanitized.sh — the SQLite VFS integration tests
# (tests/sql.rs and tests/run.sh) once more, with SQLite itself built with
# AddressSanitizer + UndefinedBehaviorSanitizer, so that every buffer SQLite
# hands the VFS (xRead, xWrite, xFullPathname, xShmMap, ...) and everything
# SQLite does with what the VFS returns is checked.
#
#   DNFS_TEST_URL='nfs://127.0.0.1/export?nfsport=2049&mountport=20048' crates/sqlite/tests/sanitized.sh
#
# How:
# * SQLite: the amalgamation that rusqlite's libsqlite3-sys crate ships
#   (already downloaded by cargo for these tests), built as a sanitized
#   libsqlite3.so.0 in target/sqlite-sanitized/lib with the compile options
#   of Debian's libsqlite3 (list below) plus SQLITE_DEBUG, whose assert()s
#   check the pager's and WAL's expectations of the VFS.
# * tests/sql.rs: the same test binary cargo builds, run with that library
#   first on LD_LIBRARY_PATH and the ASan runtime in LD_PRELOAD (the binary
#   and the extension are Rust, not instrumented; ASan still replaces
#   malloc with redzoned allocations and checks memcpy/memset/recv/... made
#   by them). Its child processes inherit both.
# * tests/run.sh: with DNFS_SQLITE3 pointing at minishell (sanitized/minishell.c,
#   the few shell commands run.sh uses), built with the sanitizers against
#   that library. Debian's sqlite3 shell cannot be used: it exits when the
#   library is not the version it was built with.
# * Any sanitizer report, in any process (children included), fails the run:
#   halt_on_error and -fno-sanitize-recover stop the process, and the
#   output of every process is kept in target/sqlite-sanitized/reports/
#   and searched for reports at the end (a child's death alone might not
#   fail its test).
#
# Environment: CC (default gcc), DNFS_SQLITE_SAN_OUT (output directory),
# DNFS_SQLITE_SAN_TESTS (extra arguments for the sql test binary, e.g. a
# test name filter), DNFS_SQL_TEST_BIN (the sql test binary, when the
# caller found it already).
#
# `sanitized.sh --test-binary` prints the path of the sql test binary of
# `cargo test --workspace --release` and exits: scripts/test.sh asks it
# before its lanes start, since a cargo command made beside them would
# wait for their builds and could rebuild what their steps are running.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
CC=${CC:-gcc}
OUT=${DNFS_SQLITE_SAN_OUT:-$ROOT/target/sqlite-sanitized}
REPORTS=$OUT/reports

# The Rust side: the extension and the sql test binary, the very build of
# `cargo test --workspace --release` (nothing is rebuilt after it).
sql_test_binary() {
    cargo test --workspace --release --no-run --message-format=json \
        | grep '"src_path":"[^"]*/crates/sqlite/tests/sql.rs"' \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}
if [[ ${1:-} == --test-binary ]]; then
    sql_test_binary
    exit 0
fi

if [[ -z ${DNFS_TEST_URL:-} ]]; then
    [[ -z ${DNFS_TEST_REQUIRE_SERVER:-} ]] || { echo "sanitized.sh: DNFS_TEST_REQUIRE_SERVER set but DNFS_TEST_URL not" >&2; exit 1; }
    echo "sanitized.sh: SKIPPED sanitized SQLite tests: DNFS_TEST_URL is not set" >&2
    exit 0
fi

SAN=("-fsanitize=address,undefined" -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
# GCC 12's object-size check reports an in-bounds load in SQLite's
# balance_nonroot, `(nNew>nOld ? apNew : apOld)[nOld-1]` (two arrays of
# different sizes under ?:; reproduced outside SQLite with a 10-line
# program). It is off for sqlite3.c only; ASan still bounds-checks there.
SQLITE_SAN=("${SAN[@]}" -fno-sanitize=object-size)
# Debian 12's libsqlite3 compile options (PRAGMA compile_options), the ones
# that change behaviour or the API; THREADSAFE=1 and load_extension are the
# defaults. OMIT_LOOKASIDE also makes every small allocation a real,
# redzoned malloc.
SQLITE_DEFS=(-DSQLITE_THREADSAFE=1 -DSQLITE_USE_URI=1 -DSQLITE_ENABLE_COLUMN_METADATA
             -DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_SECURE_DELETE
             -DSQLITE_OMIT_LOOKASIDE -DSQLITE_DEFAULT_SECTOR_SIZE=4096 -DSQLITE_TEMP_STORE=1
             -DSQLITE_MAX_MMAP_SIZE=0x7fff0000 -DSQLITE_ENABLE_MATH_FUNCTIONS
             -DSQLITE_DEBUG)

testbin=${DNFS_SQL_TEST_BIN:-$(sql_test_binary)}
[[ -x $testbin ]] || { echo "sanitized.sh: sql test binary not found" >&2; exit 1; }

# The amalgamation shipped by the libsqlite3-sys crate rusqlite uses.
manifest=$(cargo metadata --format-version 1 \
    | grep -o '"manifest_path":"[^"]*/libsqlite3-sys-[^"]*/Cargo.toml"' | head -n 1 \
    | sed 's/"manifest_path":"\(.*\)\/Cargo.toml"/\1/')
src=$manifest/sqlite3
[[ -f $src/sqlite3.c ]] || { echo "sanitized.sh: sqlite3.c not found (libsqlite3-sys at '$manifest')" >&2; exit 1; }

mkdir -p "$OUT/lib"
lib=$OUT/lib/libsqlite3.so.0
stamp="$src $CC ${SQLITE_SAN[*]} ${SQLITE_DEFS[*]}"
if [[ ! -f $lib || $(cat "$OUT/lib/stamp" 2>/dev/null) != "$stamp" ]]; then
    echo "sanitized.sh: building a sanitized libsqlite3 from $src/sqlite3.c"
    "$CC" -O1 -g -fPIC -shared "${SQLITE_SAN[@]}" "${SQLITE_DEFS[@]}" -Wl,-soname,libsqlite3.so.0 \
        -o "$lib.tmp" "$src/sqlite3.c" -lpthread -ldl -lm
    mv "$lib.tmp" "$lib"
    ln -sf libsqlite3.so.0 "$OUT/lib/libsqlite3.so"
    echo "$stamp" > "$OUT/lib/stamp"
fi
"$CC" -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror "${SAN[@]}" -I"$src" \
    -o "$OUT/minishell" "$ROOT/crates/sqlite/tests/sanitized/minishell.c" \
    -L"$OUT/lib" -lsqlite3 -Wl,-rpath,"$OUT/lib"

# The test binary must load the sanitized library, not the system's.
# (ldd's output is captured first: `ldd | grep -q` under pipefail fails at
# random when grep exits at the first match and ldd gets SIGPIPE.)
loaded=$(LD_LIBRARY_PATH=$OUT/lib ldd "$testbin")
[[ $loaded == *"$lib"* ]] \
    || { echo "sanitized.sh: $testbin does not load $lib" >&2; echo "$loaded" >&2; exit 1; }

asan_rt=$("$CC" -print-file-name=libasan.so)
[[ -f $asan_rt ]] || { echo "sanitized.sh: no ASan runtime for $CC" >&2; exit 1; }

rm -rf "$REPORTS"
mkdir -p "$REPORTS"
# Leaks are not checked here: the process-lifetime allocations of the Rust
# test harness, rusqlite's and the extension's statics (the registered VFS
# and its clients live as long as the process) would all be reported, and
# the C tests (tests/c/run.sh) already run LeakSanitizer on the library.
# Reports go to stderr (GCC's separate libubsan ignores log_path), which
# child processes inherit; it is kept in $REPORTS/*.log and searched.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:exitcode=86:detect_leaks=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:print_summary=1:exitcode=87

status=0
echo "== tests/sql.rs with a sanitized SQLite"
# Verbose: an I/O error the VFS returns is printed with its file and NFS
# error (a test that fails on one says no more than "disk I/O error").
# shellcheck disable=SC2086 # DNFS_SQLITE_SAN_TESTS is a list of arguments
DIRECTNFS_SQLITE_VERBOSE=1 LD_PRELOAD=$asan_rt LD_LIBRARY_PATH=$OUT/lib "$testbin" ${DNFS_SQLITE_SAN_TESTS:-} 2>&1 \
    | tee "$REPORTS/sql.log" || status=1
echo "== tests/run.sh with a sanitized SQLite (minishell)"
DNFS_SQLITE3=$OUT/minishell bash "$ROOT/crates/sqlite/tests/run.sh" 2>&1 \
    | tee "$REPORTS/run.log" || status=1

if grep -E -q 'ERROR: AddressSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$REPORTS"/*.log; then
    echo "sanitized.sh: FAILED: sanitizer report (above; kept in $REPORTS)" >&2
    exit 1
fi
((status == 0)) || { echo "sanitized.sh: FAILED (no sanitizer report; see the test output)" >&2; exit 1; }
echo "sanitized.sh: sql.rs and run.sh passed under ASan + UBSan with no report"

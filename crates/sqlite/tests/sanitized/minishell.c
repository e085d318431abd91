/* minishell.c — the part of the sqlite3 shell that crates/sqlite/tests/run.sh
 * uses, so that run.sh can drive a SQLite built with AddressSanitizer +
 * UBSan (crates/sqlite/tests/sanitized.sh). The system's sqlite3 shell
 * cannot: it refuses to run with a libsqlite3 of another version.
 *
 * Reads SQL from stdin. A line starting with '.' outside a statement is a
 * command: `.load FILE` (sqlite3_load_extension, no entry point named),
 * `.open NAME` (a URI or a file name, read-write, created if missing),
 * `.log stderr|stdout|off` (the SQLite error log, sqlite3_config
 * SQLITE_CONFIG_LOG, written as the shell writes it: "(CODE) MESSAGE").
 * Everything else is SQL, run when sqlite3_complete() says a statement is
 * complete; rows print as the shell's list mode does (columns joined by '|',
 * NULL empty). Errors go to stderr as "Error: ..." and the input goes on; a
 * failed statement, .load or close makes the exit status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite3.h"

static int failed;
static FILE *log_out; /* .log: where the SQLite error log goes, or NULL */

/* The SQLite error log callback, registered before SQLite initialises
 * (as the shell does); silent until `.log` names a stream. */
static void shell_log(void *arg, int code, const char *msg) {
    (void)arg;
    if (!log_out) return;
    fprintf(log_out, "(%d) %s\n", code, msg);
    fflush(log_out);
}

static void print_rows(sqlite3_stmt *st) {
    int n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        const unsigned char *v = sqlite3_column_text(st, i);
        printf("%s%s", i ? "|" : "", v ? (const char *)v : "");
    }
    if (n > 0) putchar('\n');
}

static void run_sql(sqlite3 *db, const char *sql) {
    const char *tail = sql;
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, tail, -1, &st, &tail);
        if (rc != SQLITE_OK) {
            fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
            failed = 1;
            return;
        }
        if (!st) continue; /* whitespace or a comment */
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) print_rows(st);
        if (rc != SQLITE_DONE) {
            fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
            failed = 1;
        }
        sqlite3_finalize(st);
    }
}

/* The argument of a dot command, trimmed; NULL when there is none. */
static char *argument(char *line, size_t cmdlen) {
    char *a = line + cmdlen;
    a += strspn(a, " \t");
    size_t n = strlen(a);
    while (n && (a[n - 1] == '\n' || a[n - 1] == '\r' || a[n - 1] == ' ')) a[--n] = 0;
    return n ? a : NULL;
}

static void dot_command(sqlite3 **db, char *line) {
    char *arg;
    if (strncmp(line, ".load ", 6) == 0 && (arg = argument(line, 5))) {
        char *err = NULL;
        sqlite3_enable_load_extension(*db, 1);
        if (sqlite3_load_extension(*db, arg, NULL, &err) != SQLITE_OK) {
            fprintf(stderr, "Error: %s\n", err ? err : "load failed");
            failed = 1;
        }
        sqlite3_free(err);
    } else if (strncmp(line, ".open ", 6) == 0 && (arg = argument(line, 5))) {
        sqlite3_close(*db);
        *db = NULL;
        int rc = sqlite3_open_v2(arg, db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                                 NULL);
        if (rc != SQLITE_OK) {
            /* Like the shell: said, but not an exit status of its own. */
            fprintf(stderr, "Error: unable to open database \"%s\": %s\n", arg,
                    *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
            sqlite3_close(*db);
            sqlite3_open(":memory:", db);
        }
    } else if (strncmp(line, ".log ", 5) == 0 && (arg = argument(line, 4))) {
        if (strcmp(arg, "stderr") == 0) log_out = stderr;
        else if (strcmp(arg, "stdout") == 0) log_out = stdout;
        else if (strcmp(arg, "off") == 0) log_out = NULL;
        else {
            fprintf(stderr, "Error: .log takes stderr, stdout or off\n");
            failed = 1;
        }
    } else {
        fprintf(stderr, "Error: unknown command: %s", line);
        failed = 1;
    }
}

int main(void) {
    sqlite3 *db = NULL;
    sqlite3_config(SQLITE_CONFIG_LOG, shell_log, NULL);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "Error: cannot open an in-memory database\n");
        return 1;
    }
    char *sql = NULL;
    size_t len = 0, cap = 0;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t n;
    while ((n = getline(&line, &linecap, stdin)) > 0) {
        if (len == 0 && line[0] == '.') {
            dot_command(&db, line);
            continue;
        }
        if (len + (size_t)n + 1 > cap) {
            cap = (len + (size_t)n + 1) * 2;
            char *grown = realloc(sql, cap);
            if (!grown) {
                fprintf(stderr, "Error: out of memory\n");
                return 1;
            }
            sql = grown;
        }
        memcpy(sql + len, line, (size_t)n + 1);
        len += (size_t)n;
        if (sqlite3_complete(sql)) {
            run_sql(db, sql);
            len = 0;
        }
    }
    if (len) run_sql(db, sql);
    free(line);
    free(sql);
    if (sqlite3_close(db) != SQLITE_OK) {
        fprintf(stderr, "Error: close: %s\n", sqlite3_errmsg(db));
        failed = 1;
    }
    return failed;
}

/*
 * test_secure.c — libdirectnfs through its C interface under Kerberos and
 * RPC-with-TLS, against the real KDC, the Kerberized NFS-Ganesha and the
 * TLS front scripts/test.sh starts; each test on NFSv3 and NFSv4.1. Built
 * with -fsanitize=address,undefined and run by tests/c/run.sh.
 *
 * Environment (scripts/test.sh exports it):
 *   DNFS_TEST_URL_KRB5P   NFSv3 URL of an export that takes krb5p ONLY
 *                         (nfs-server.sh DNFS_KRB5P_EXPORT), with the realm's
 *                         KRB5_CONFIG and the test user's KRB5CCNAME
 *   DNFS_TEST_URL, DNFS_TEST_URL_V41, DNFS_TEST_TLS_DIR, DNFS_TEST_TLS_PORT
 *                         the main server and the TLS front before it, whose
 *                         STARTTLS port closes any connection that does not
 *                         start with the AUTH_TLS probe
 *
 * Why a pass proves the flavour: the krb5p-only export refuses every other
 * flavour (krb5p_only_export_refuses_* shows it does), and the front's
 * STARTTLS port refuses a client without TLS; so I/O that works there was
 * sealed with krb5p, or carried in TLS, and nothing was dropped silently.
 *
 * `test_secure no-ticket URL` is the child the no-ticket test runs with
 * KRB5CCNAME naming an empty cache: it tries to mount and prints errno and
 * the message.
 */
#include <directnfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *g_krb5p;   /* NFSv3 URL of the krb5p-only export */
static const char *g_main;    /* NFSv3 URL of the main server */
static const char *g_main41;  /* its NFSv4.1 URL */
static const char *g_tls_dir; /* the front's certificates */
static int g_tls_port;        /* the front's STARTTLS port */
static const char *g_self;    /* argv[0] */

#include "check.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The value of `key=` in URL's query, as a number; -1 if absent. */
static long query_number(const char *url, const char *key)
{
    const char *q = strchr(url, '?');
    size_t klen = strlen(key);
    while (q) {
        q++;
        if (strncmp(q, key, klen) == 0 && q[klen] == '=')
            return strtol(q + klen + 1, NULL, 10);
        q = strchr(q, '&');
    }
    return -1;
}

/* nfs://HOST/PATH?vers=4.1&nfsport=N from an NFSv3 URL of the same server
 * (NFSv4.1 has no MOUNT port; the export's path is its pseudo path). */
static void v41_url(const char *v3, char *out, size_t len)
{
    const char *q = strchr(v3, '?');
    int head = q ? (int)(q - v3) : (int)strlen(v3);
    snprintf(out, len, "%.*s?vers=4.1&nfsport=%ld", head, v3, query_number(v3, "nfsport"));
}

/* URL with its nfsport replaced by PORT and EXTRA options added. */
static void with_port(const char *url, int port, const char *extra, char *out, size_t len)
{
    const char *q = strchr(url, '?');
    int head = q ? (int)(q - url) : (int)strlen(url);
    int n = snprintf(out, len, "%.*s?nfsport=%d", head, url, port);
    const char *p = q;
    while (p && (size_t)n < len) {
        p++;
        const char *end = strchr(p, '&');
        int plen = end ? (int)(end - p) : (int)strlen(p);
        /* MOUNT goes in TLS too: the front's port for it is PORT+8 */
        if (strncmp(p, "mountport=", 10) == 0)
            n += snprintf(out + n, len - (size_t)n, "&mountport=%d", port + 8);
        else if (strncmp(p, "nfsport=", 8) != 0 && plen > 0)
            n += snprintf(out + n, len - (size_t)n, "&%.*s", plen, p);
        p = end;
    }
    if ((size_t)n < len)
        snprintf(out + n, len - (size_t)n, "&%s", extra);
}

/* The krb5p-only export's URL on `v41` (NFSv4.1) or NFSv3, with OPTIONS. */
static void krb5p_url(int v41, const char *options, char *out, size_t len)
{
    char base[1024];
    if (v41)
        v41_url(g_krb5p, base, sizeof base);
    else
        snprintf(base, sizeof base, "%s", g_krb5p);
    snprintf(out, len, "%s&%s", base, options);
}

/* The front's STARTTLS URL of the main server on `v41` or NFSv3. */
static void tls_url(int v41, char *out, size_t len)
{
    char extra[512];
    snprintf(extra, sizeof extra, "xprtsec=tls&tls_ca=%s/ca.pem&mnt_timeout=5", g_tls_dir);
    with_port(v41 ? g_main41 : g_main, g_tls_port, extra, out, len);
}

/* ------------------------------------------------------------------ */

/* Creates a file in a directory of its own, writes 1 MiB + 17 bytes,
 * fsyncs, closes; opens it again (a second client), checks size and bytes,
 * renames it, removes it and the directory. */
static int write_fsync_read_back(const char *url)
{
    dnfs_client *c = dnfs_client_open_url(url);
    CHECK(c != NULL);
    char dir[64], name[128], moved[128];
    snprintf(dir, sizeof dir, "secure-%d-%ld", (int)getpid(), (long)(now() * 1000) % 100000);
    snprintf(name, sizeof name, "%s/data", dir);
    snprintf(moved, sizeof moved, "%s/renamed", dir);
    CHECK_EQ(dnfs_mkdir(c, dir, 0755), 0);
    size_t len = 1024 * 1024 + 17;
    unsigned char *w = malloc(len), *r = malloc(len);
    CHECK(w && r);
    for (size_t i = 0; i < len; i++)
        w[i] = (unsigned char)(i * 167 + i / 4093);
    dnfs_file *f = dnfs_open(c, name, DNFS_O_CREAT | DNFS_O_TRUNC, 0644);
    CHECK(f != NULL);
    CHECK_EQ(dnfs_pwrite(f, w, len, 0), (long long)len);
    CHECK_EQ(dnfs_fsync(f), 0);
    CHECK_EQ(dnfs_close(f), 0);
    dnfs_client_close(c);

    c = dnfs_client_open_url(url);
    CHECK(c != NULL);
    struct dnfs_stat st;
    CHECK_EQ(dnfs_stat(c, name, &st), 0);
    CHECK_EQ(st.size, (long long)len);
    f = dnfs_open(c, name, 0, 0);
    CHECK(f != NULL);
    memset(r, 0, len);
    CHECK_EQ(dnfs_pread(f, r, len, 0), (long long)len);
    CHECK(memcmp(w, r, len) == 0);
    CHECK_EQ(dnfs_close(f), 0);
    CHECK_EQ(dnfs_rename(c, name, moved), 0);
    CHECK_EQ(dnfs_stat(c, name, &st), -ENOENT);
    CHECK_EQ(dnfs_unlink(c, moved), 0);
    CHECK_EQ(dnfs_rmdir(c, dir), 0);
    dnfs_client_close(c);
    free(w);
    free(r);
    return 0;
}

static int krb5p_body(int v41)
{
    char url[1200];
    krb5p_url(v41, "sec=krb5p&mnt_timeout=10", url, sizeof url);
    return write_fsync_read_back(url);
}

static int krb5p_file_is_written_fsynced_and_read_back_on_nfsv3(void)
{
    return krb5p_body(0);
}

static int krb5p_file_is_written_fsynced_and_read_back_on_nfsv41(void)
{
    return krb5p_body(1);
}

static int tls_body(int v41)
{
    char url[1200];
    tls_url(v41, url, sizeof url);
    return write_fsync_read_back(url);
}

static int tls_file_is_written_fsynced_and_read_back_on_nfsv3(void)
{
    return tls_body(0);
}

static int tls_file_is_written_fsynced_and_read_back_on_nfsv41(void)
{
    return tls_body(1);
}

/* sec=krb5, krb5i and sys on the export that lists krb5p only: NULL,
 * EACCES at once (mnt_timeout=30 is not waited out), and a message that
 * names the flavour the export takes. */
static int refusal_body(int v41)
{
    const char *flavors[] = {"krb5", "krb5i", "sys"};
    for (int i = 0; i < 3; i++) {
        char opt[64], url[1200];
        snprintf(opt, sizeof opt, "sec=%s&mnt_timeout=30", flavors[i]);
        krb5p_url(v41, opt, url, sizeof url);
        double t0 = now();
        errno = 0;
        dnfs_client *c = dnfs_client_open_url(url);
        if (c != NULL) {
            fprintf(stderr, "    mounted %s: the krb5p-only export took sec=%s\n", url,
                    flavors[i]);
            dnfs_client_close(c);
            return 1;
        }
        int e = errno;
        const char *msg = dnfs_last_error();
        fprintf(stderr, "    sec=%s: errno %d: %s\n", flavors[i], e, msg);
        CHECK_EQ(e, EACCES);
        CHECK(strstr(msg, "krb5p") != NULL);
        CHECK(strstr(msg, flavors[i]) != NULL);
        CHECK(now() - t0 < 10.0);
    }
    return 0;
}

static int krb5p_only_export_refuses_krb5_krb5i_and_sys_with_eacces_on_nfsv3(void)
{
    return refusal_body(0);
}

static int krb5p_only_export_refuses_krb5_krb5i_and_sys_with_eacces_on_nfsv41(void)
{
    return refusal_body(1);
}

/* This program again, as `no-ticket URL`, with KRB5CCNAME naming an empty
 * ticket cache and no client keytab: the mount fails with EACCES and a
 * message naming kinit, in seconds, never a hang (mnt_timeout=30). */
static int no_ticket_body(int v41)
{
    char url[1200], cache[128], keytab[128];
    krb5p_url(v41, "sec=krb5p&mnt_timeout=30", url, sizeof url);
    snprintf(cache, sizeof cache, "/tmp/dnfs-c-empty-%d.ccache", (int)getpid());
    snprintf(keytab, sizeof keytab, "/tmp/dnfs-c-missing-%d.keytab", (int)getpid());
    int fd = open(cache, O_CREAT | O_TRUNC | O_WRONLY, 0600); /* an empty cache */
    CHECK(fd >= 0);
    close(fd);
    int out[2];
    CHECK(pipe(out) == 0);
    double t0 = now();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char env_cache[160], env_keytab[160];
        snprintf(env_cache, sizeof env_cache, "FILE:%s", cache);
        snprintf(env_keytab, sizeof env_keytab, "FILE:%s", keytab);
        setenv("KRB5CCNAME", env_cache, 1);
        setenv("KRB5_CLIENT_KTNAME", env_keytab, 1);
        dup2(out[1], 1);
        close(out[0]);
        execl(g_self, g_self, "no-ticket", url, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(out[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = 0;
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    double took = now() - t0;
    unlink(cache);
    fprintf(stderr, "    no ticket: %.1f s: %s", took, buf);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int e = atoi(buf);
    CHECK_EQ(e, EACCES);
    CHECK(strstr(buf, "kinit") != NULL);
    CHECK(strstr(buf, "permission denied") != NULL);
    CHECK(took < 5.0);
    return 0;
}

static int no_ticket_is_eacces_naming_kinit_at_once_on_nfsv3(void)
{
    return no_ticket_body(0);
}

static int no_ticket_is_eacces_naming_kinit_at_once_on_nfsv41(void)
{
    return no_ticket_body(1);
}

/* The child of no_ticket_body: prints "ERRNO MESSAGE"; exit 1 if it mounted. */
static int no_ticket_child(const char *url)
{
    errno = 0;
    dnfs_client *c = dnfs_client_open_url(url);
    if (c != NULL) {
        printf("0 mounted without a ticket\n");
        dnfs_client_close(c);
        return 1;
    }
    printf("%d %s\n", errno, dnfs_last_error());
    return 0;
}

/* A required variable: NULL (and a SKIPPED line, or a failure where the
 * servers must be there) when it is missing. */
static const char *need(const char *name, const char *require)
{
    const char *v = getenv(name);
    if (v && *v)
        return v;
    if (getenv(require)) {
        fprintf(stderr, "FAILED test_secure: %s is set but %s is not\n", require, name);
        exit(1);
    }
    fprintf(stderr, "SKIPPED test_secure: %s is not set\n", name);
    return NULL;
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    if (argc == 3 && strcmp(argv[1], "no-ticket") == 0)
        return no_ticket_child(argv[2]);
    g_krb5p = need("DNFS_TEST_URL_KRB5P", "DNFS_TEST_REQUIRE_KRB5");
    g_main = need("DNFS_TEST_URL", "DNFS_TEST_REQUIRE_TLS");
    g_main41 = need("DNFS_TEST_URL_V41", "DNFS_TEST_REQUIRE_TLS");
    g_tls_dir = need("DNFS_TEST_TLS_DIR", "DNFS_TEST_REQUIRE_TLS");
    const char *port = need("DNFS_TEST_TLS_PORT", "DNFS_TEST_REQUIRE_TLS");
    g_tls_port = port ? atoi(port) : 0;
    int have_krb5 = g_krb5p != NULL;
    int have_tls = g_main && g_main41 && g_tls_dir && port;

    struct {
        const char *name;
        int (*fn)(void);
        int runs;
    } tests[] = {
#define T(f, ok) {#f, f, ok}
        /* first: before this process has loaded the GSS-API library */
        T(no_ticket_is_eacces_naming_kinit_at_once_on_nfsv3, have_krb5),
        T(no_ticket_is_eacces_naming_kinit_at_once_on_nfsv41, have_krb5),
        T(krb5p_file_is_written_fsynced_and_read_back_on_nfsv3, have_krb5),
        T(krb5p_file_is_written_fsynced_and_read_back_on_nfsv41, have_krb5),
        T(krb5p_only_export_refuses_krb5_krb5i_and_sys_with_eacces_on_nfsv3, have_krb5),
        T(krb5p_only_export_refuses_krb5_krb5i_and_sys_with_eacces_on_nfsv41, have_krb5),
        T(tls_file_is_written_fsynced_and_read_back_on_nfsv3, have_tls),
        T(tls_file_is_written_fsynced_and_read_back_on_nfsv41, have_tls),
#undef T
    };
    int n = (int)(sizeof tests / sizeof tests[0]), failed = 0, ran = 0;
    for (int i = 0; i < n; i++) {
        if (!tests[i].runs) {
            fprintf(stderr, "SKIPPED %s: its server is not there (above)\n", tests[i].name);
            continue;
        }
        int rc = tests[i].fn();
        printf("%s %s\n", rc == 0 ? "ok  " : "FAIL", tests[i].name);
        fflush(stdout);
        failed += rc != 0;
        ran++;
    }
    printf("%d/%d passed\n", ran - failed, ran);
    return failed ? 1 : 0;
}

/*
 * boards.c — sizes for lseek(SEEK_END) and names for open/access that
 * one process of the host asked the server for, and another uses, stay
 * right when other processes of the host change the file or the names
 * (the shared boards: crates/preload/src/sizes.rs and lookups.rs), and a
 * change made outside the library is seen after DIRECTNFS_PRELOAD_TTL_MS.
 *
 *   boards count PATH N     open PATH, N x lseek(SEEK_END), exit (the
 *                           caller counts the GETATTRs in the library's
 *                           DIRECTNFS_PRELOAD_STATS=calls report)
 *   boards opens PATH N     N x open + close of PATH (the caller counts
 *                           the LOOKUPs)
 *   boards eofs PATH N      open PATH, read it to its end, then N x read
 *                           at the end, and fgets of an fopen stream to
 *                           its end (the caller counts the READs: the
 *                           end is known from the short READ)
 *   boards names DIR        names another process (a forked child)
 *                           changes — rename over, unlink, create,
 *                           chmod, a new directory — are seen at once
 *                           by the parent's open and access (the
 *                           board of names, crates/preload/src/lookups.rs)
 *   boards procs PATH       another process (a forked child) extends,
 *                           shrinks, truncates by path, re-creates with
 *                           O_TRUNC, writes within the size; after each
 *                           the parent's lseek(SEEK_END) on the
 *                           descriptor it kept says the new size, and
 *                           its read at the old end gets the new bytes
 *   boards outside PATH DIR MS   a write past the end by a process
 *                           with another shadow directory DIR (so
 *                           another board: as another host) is seen by
 *                           lseek(SEEK_END) and by a read at the old end
 *                           after MS milliseconds
 * Prints "ok ..." / "FAIL ..." lines; exits 1 if anything failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void expect_size(int fd, off_t want, const char *what)
{
    off_t got = lseek(fd, 0, SEEK_END);
    if (got == want) {
        printf("ok   %s: size %lld\n", what, (long long)got);
    } else {
        printf("FAIL %s: size %lld, want %lld (%s)\n", what, (long long)got, (long long)want,
               got < 0 ? strerror(errno) : "stale");
        failures++;
    }
}

/* pread of up to 16 KiB at `at` gives `want` bytes. */
static void expect_read(int fd, off_t at, ssize_t want, const char *what)
{
    static char buf[16384];
    ssize_t got = pread(fd, buf, sizeof buf, at);
    if (got == want) {
        printf("ok   %s: read at %lld gave %zd bytes\n", what, (long long)at, got);
    } else {
        printf("FAIL %s: read at %lld gave %zd bytes, want %zd (%s)\n", what, (long long)at, got,
               want, got < 0 ? strerror(errno) : "stale");
        failures++;
    }
}

/* Runs `step` in a forked child (its own client), waits for it. */
static void in_child(void (*step)(const char *), const char *path)
{
    fflush(stdout);
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        exit(1);
    }
    if (c == 0) {
        step(path);
        exit(0);
    }
    int status;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL child step failed\n");
        failures++;
    }
}

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "boards: %s: %s\n", what, strerror(errno));
        exit(1);
    }
}

static char block[8192];

static void extend(const char *path)
{
    int fd = open(path, O_RDWR);
    must(fd >= 0, "open");
    must(pwrite(fd, block, 8192, 8192) == 8192, "pwrite past the end");
    close(fd);
}

static void shrink(const char *path)
{
    int fd = open(path, O_RDWR);
    must(fd >= 0, "open");
    must(ftruncate(fd, 100) == 0, "ftruncate");
    close(fd);
}

static void grow_by_path(const char *path)
{
    must(truncate(path, 30000) == 0, "truncate");
}

static void inside(const char *path)
{
    int fd = open(path, O_RDWR);
    must(fd >= 0, "open");
    must(pwrite(fd, block, 100, 0) == 100, "pwrite inside");
    close(fd);
}

static void recreate(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    must(fd >= 0, "open O_TRUNC");
    must(write(fd, block, 10) == 10, "write");
    close(fd);
}

static void appended(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    must(fd >= 0, "open O_APPEND");
    must(write(fd, block, 5) == 5, "append");
    close(fd);
}

static off_t child_expects;

/* A new process's first lseek(SEEK_END) (it may use the size another
 * process published on the board). */
static void sees(const char *path)
{
    int fd = open(path, O_RDONLY);
    must(fd >= 0, "open");
    off_t got = lseek(fd, 0, SEEK_END);
    close(fd);
    if (got != child_expects) {
        printf("FAIL a new process sees size %lld, want %lld\n", (long long)got,
               (long long)child_expects);
        exit(1);
    }
    printf("ok   a new process sees size %lld\n", (long long)got);
    fflush(stdout);
}

static int procs(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    must(fd >= 0, "open");
    must(pwrite(fd, block, 8192, 0) == 8192, "pwrite");
    expect_size(fd, 8192, "own write");
    expect_size(fd, 8192, "asked again");
    expect_read(fd, 8192, 0, "at the end");
    in_child(extend, path);
    expect_read(fd, 8192, 8192, "after another process wrote past the end");
    expect_size(fd, 16384, "after another process wrote past the end");
    expect_read(fd, 0, 16384, "the whole file, to its end");
    expect_read(fd, 16384, 0, "at the end");
    in_child(shrink, path);
    expect_size(fd, 100, "after another process's ftruncate");
    expect_read(fd, 50, 50, "after another process's ftruncate");
    in_child(grow_by_path, path);
    expect_read(fd, 100, 16384, "after another process's truncate(path)");
    expect_size(fd, 30000, "after another process's truncate(path)");
    in_child(inside, path);
    expect_size(fd, 30000, "after another process wrote inside the file");
    in_child(recreate, path);
    expect_size(fd, 10, "after another process's open(O_TRUNC) and write");
    child_expects = 10;
    in_child(sees, path);
    in_child(appended, path);
    child_expects = 15;
    in_child(sees, path);
    expect_size(fd, 15, "after another process's O_APPEND write");
    must(pwrite(fd, block, 1, 99) == 1, "pwrite");
    expect_size(fd, 100, "own write past the end again");
    close(fd);
    return failures != 0;
}

static int count(const char *path, int n)
{
    int fd = open(path, O_RDONLY);
    must(fd >= 0, "open");
    for (int i = 0; i < n; i++)
        must(lseek(fd, 0, SEEK_END) >= 0, "lseek");
    close(fd);
    return 0;
}

static int outside(const char *path, const char *dir, int ms, const char *self)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    must(fd >= 0, "open");
    expect_size(fd, 0, "new file");
    fflush(stdout);
    pid_t c = fork();
    must(c >= 0, "fork");
    if (c == 0) {
        /* A new program with another shadow directory: its library has
         * another board, as a process on another host would. */
        setenv("DIRECTNFS_SHADOW_DIR", dir, 1);
        execl(self, self, "extend", path, (char *)NULL);
        _exit(127);
    }
    int status;
    must(waitpid(c, &status, 0) == c && WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "the other board's writer");
    off_t now = lseek(fd, 0, SEEK_END);
    printf("note the size right after it: %lld (the remembered 0 until it expires)\n",
           (long long)now);
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L + 100000000L};
    nanosleep(&t, NULL);
    expect_read(fd, 8192, 8192,
                "a write another board never saw, read after the remembered size expired");
    expect_size(fd, 16384, "a write another board never saw, after the remembered size expired");
    close(fd);
    return failures != 0;
}

static char name_a[4096], name_b[4096], dir_d[4096];

static void put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    must(fd >= 0, "open for put");
    must(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
    close(fd);
}

/* What open + read of `path` gives: the text, or "errno N". */
static const char *got(const char *path)
{
    static char buf[64];
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(buf, sizeof buf, "errno %d", errno);
        return buf;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        snprintf(buf, sizeof buf, "read errno %d", errno);
    else
        buf[n] = 0;
    close(fd);
    return buf;
}

static void expect_text(const char *path, const char *want, const char *what)
{
    const char *g = got(path);
    if (strcmp(g, want) == 0) {
        printf("ok   %s: %s\n", what, g);
    } else {
        printf("FAIL %s: got [%s], want [%s]\n", what, g, want);
        failures++;
    }
}

static void expect_access(const char *path, int mode, int want_ok, const char *what)
{
    int r = access(path, mode);
    if ((r == 0) == want_ok) {
        printf("ok   %s\n", what);
    } else {
        printf("FAIL %s: access gave %d (%s)\n", what, r, strerror(errno));
        failures++;
    }
}

static void rename_b_over_a(const char *unused)
{
    (void)unused;
    must(rename(name_b, name_a) == 0, "rename");
}
static void unlink_a(const char *unused)
{
    (void)unused;
    must(unlink(name_a) == 0, "unlink");
}
static void create_a(const char *unused)
{
    (void)unused;
    int fd = open(name_a, O_WRONLY | O_CREAT | O_EXCL, 0644);
    must(fd >= 0, "create");
    must(write(fd, "three", 5) == 5, "write");
    close(fd);
}
static void chmod_a_755(const char *unused)
{
    (void)unused;
    must(chmod(name_a, 0755) == 0, "chmod");
}
static void chmod_a_644(const char *unused)
{
    (void)unused;
    must(chmod(name_a, 0644) == 0, "chmod");
}
static void make_d(const char *unused)
{
    (void)unused;
    char in_d[4200];
    must(mkdir(dir_d, 0755) == 0, "mkdir");
    snprintf(in_d, sizeof in_d, "%s/f", dir_d);
    put(in_d, "four");
}

static int names(const char *dir)
{
    snprintf(name_a, sizeof name_a, "%s/a", dir);
    snprintf(name_b, sizeof name_b, "%s/b", dir);
    snprintf(dir_d, sizeof dir_d, "%s/d", dir);
    put(name_a, "one");
    put(name_b, "two");
    expect_text(name_a, "one", "first open");
    expect_text(name_a, "one", "open again");
    in_child(rename_b_over_a, dir);
    expect_text(name_a, "two", "after another process renamed a file over it");
    in_child(unlink_a, dir);
    char want[32];
    snprintf(want, sizeof want, "errno %d", ENOENT);
    expect_text(name_a, want, "after another process removed it");
    in_child(create_a, dir);
    expect_text(name_a, "three", "after another process created it again");
    chmod(name_a, 0644);
    expect_access(name_a, X_OK, 0, "access(X_OK) of a 0644 file");
    in_child(chmod_a_755, dir);
    expect_access(name_a, X_OK, 1, "access(X_OK) after another process's chmod 755");
    in_child(chmod_a_644, dir);
    expect_access(name_a, X_OK, 0, "access(X_OK) after another process's chmod 644");
    in_child(make_d, dir);
    char in_d[4200];
    snprintf(in_d, sizeof in_d, "%s/f", dir_d);
    expect_text(in_d, "four", "a file another process made in a new directory");
    return failures != 0;
}

static int opens(const char *path, int n)
{
    for (int i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY);
        must(fd >= 0, "open");
        close(fd);
    }
    return 0;
}

static int eofs(const char *path, int n)
{
    static char buf[65536];
    int fd = open(path, O_RDONLY);
    must(fd >= 0, "open");
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) == (ssize_t)sizeof buf)
        ;
    must(got >= 0, "read to the end");
    for (int i = 0; i < n; i++)
        if (read(fd, buf, sizeof buf) != 0) {
            printf("FAIL a read at the end did not give end of file\n");
            failures++;
        }
    close(fd);
    /* A stream read to its end (PostgreSQL reads its pg_internal.init
     * files so, in fread calls until one returns nothing). */
    FILE *f = fopen(path, "r");
    must(f != NULL, "fopen");
    while (fgets(buf, sizeof buf, f))
        ;
    must(!ferror(f), "fgets");
    fclose(f);
    return failures != 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "eofs") == 0)
        return eofs(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "opens") == 0)
        return opens(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "names") == 0)
        return names(argv[2]);
    if (argc == 4 && strcmp(argv[1], "count") == 0)
        return count(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "procs") == 0)
        return procs(argv[2]);
    if (argc == 5 && strcmp(argv[1], "outside") == 0)
        return outside(argv[2], argv[3], atoi(argv[4]), argv[0]);
    if (argc == 3 && strcmp(argv[1], "extend") == 0) {
        extend(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: boards count PATH N | opens PATH N | eofs PATH N | procs PATH | names DIR | "
                    "outside PATH DIR MS | extend PATH\n");
    return 2;
}

/*
 * sizecheck.c — lseek(SEEK_END) sizes remembered by one process stay
 * right when other processes of the host change the file (the shared
 * board of crates/preload/src/sizes.rs), and a change made outside the
 * library is seen after the remembered size expires.
 *
 *   sizecheck count PATH N     open PATH, N x lseek(SEEK_END), exit (the
 *                              caller counts the GETATTRs in the library's
 *                              DIRECTNFS_PRELOAD_STATS=calls report)
 *   sizecheck procs PATH       another process (a forked child) extends,
 *                              shrinks, truncates by path, re-creates with
 *                              O_TRUNC, writes within the size; after each
 *                              the parent's lseek(SEEK_END) on the
 *                              descriptor it kept says the new size
 *   sizecheck outside PATH DIR MS   a write past the end by a process
 *                              with another shadow directory DIR (so
 *                              another board: as another host) is seen by
 *                              lseek(SEEK_END) after MS milliseconds
 * Prints "ok ..." / "FAIL ..." lines; exits 1 if anything failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        fprintf(stderr, "sizecheck: %s: %s\n", what, strerror(errno));
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
    in_child(extend, path);
    expect_size(fd, 16384, "after another process wrote past the end");
    in_child(shrink, path);
    expect_size(fd, 100, "after another process's ftruncate");
    in_child(grow_by_path, path);
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
    expect_size(fd, 16384, "a write another board never saw, after the remembered size expired");
    close(fd);
    return failures != 0;
}

int main(int argc, char **argv)
{
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
    fprintf(stderr, "usage: sizecheck count PATH N | procs PATH | outside PATH DIR MS | extend PATH\n");
    return 2;
}

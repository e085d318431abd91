/*
 * forkstart.c — what a new process's first NFS calls cost after fork (a
 * PostgreSQL backend forked by the postmaster): the parent makes its
 * client with one stat, then forks N children one after the other; each
 * child makes CALLS calls on the path and exits (exit, so the library's
 * DIRECTNFS_PRELOAD_STATS report runs). A call is a `stat` (MODE `stat`,
 * the default) or an open + 512-byte read + close (MODE `read`: what a
 * backend does with its pg_filenode.map). Prints the mean time of one
 * fork + the child's calls + its exit, as seen by the parent, and the
 * children's mean CPU time (user + system, every thread) and minor page
 * faults, from wait4, and the parent's CPU per fork (every thread of its,
 * the client's included: a postmaster's cost of each backend).
 *
 * Under valgrind --tool=callgrind (--callgrind-out-file=...%p) each child
 * writes its own profile: the parent zeroes its counters just before each
 * fork, so a child's total is its whole life — the fork handlers, its
 * calls, client and threads, and its exit — and nothing of the parent's.
 *
 *   forkstart PATH N CALLS [stat|read]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double seconds(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* One call of the child's: 0 on success. */
static int one_call(const char *path, int read_mode)
{
    if (!read_mode) {
        struct stat st;
        return stat(path, &st);
    }
    char buf[512];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf);
    return close(fd) != 0 || n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: forkstart PATH N CALLS [stat|read]\n");
        return 2;
    }
    const char *path = argv[1];
    int n = atoi(argv[2]), calls = atoi(argv[3]);
    int read_mode = argc == 5 && strcmp(argv[4], "read") == 0;
    if (argc == 5 && !read_mode && strcmp(argv[4], "stat") != 0) {
        fprintf(stderr, "forkstart: MODE is stat or read\n");
        return 2;
    }
    if (n <= 0 || calls < 0) {
        fprintf(stderr, "forkstart: N must be positive and CALLS not negative\n");
        return 2;
    }
    if (one_call(path, read_mode) != 0) {
        perror(path);
        return 1;
    }
    struct rusage self0, self1;
    getrusage(RUSAGE_SELF, &self0);
    double t0 = now(), cpu = 0, faults = 0;
    for (int i = 0; i < n; i++) {
        CALLGRIND_ZERO_STATS;
        pid_t c = fork();
        if (c < 0) {
            perror("fork");
            return 1;
        }
        if (c == 0) {
            for (int k = 0; k < calls; k++)
                if (one_call(path, read_mode) != 0)
                    exit(1);
            exit(0);
        }
        int status;
        struct rusage ru;
        if (wait4(c, &status, 0, &ru) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "forkstart: child %d failed\n", i);
            return 1;
        }
        cpu += seconds(ru.ru_utime) + seconds(ru.ru_stime);
        faults += (double)ru.ru_minflt;
    }
    double t1 = now();
    getrusage(RUSAGE_SELF, &self1);
    double parent = seconds(self1.ru_utime) + seconds(self1.ru_stime) - seconds(self0.ru_utime) -
                    seconds(self0.ru_stime);
    printf("%.1f us per fork + %d %s call(s) + exit; child CPU %.1f us, %.0f page faults;"
           " parent CPU %.1f us\n",
           (t1 - t0) / n * 1e6, calls, read_mode ? "read" : "stat", cpu / n * 1e6, faults / n,
           parent / n * 1e6);
    return 0;
}

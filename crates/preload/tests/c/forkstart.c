/*
 * forkstart.c — what a new process's first NFS call costs after fork (a
 * PostgreSQL backend forked by the postmaster): the parent makes its
 * client with one stat, then forks N children one after the other; each
 * child stats the path CALLS times and exits (exit, so the library's
 * DIRECTNFS_PRELOAD_STATS report runs). Prints the mean time of one
 * fork + the child's calls + its exit, as seen by the parent.
 *
 *   forkstart PATH N CALLS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: forkstart PATH N CALLS\n");
        return 2;
    }
    const char *path = argv[1];
    int n = atoi(argv[2]), calls = atoi(argv[3]);
    struct stat st;
    if (stat(path, &st) != 0) {
        perror("stat");
        return 1;
    }
    double t0 = now();
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c < 0) {
            perror("fork");
            return 1;
        }
        if (c == 0) {
            for (int k = 0; k < calls; k++)
                if (stat(path, &st) != 0)
                    exit(1);
            exit(0);
        }
        int status;
        if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "forkstart: child %d failed\n", i);
            return 1;
        }
    }
    printf("%.1f us per fork + %d call(s) + exit\n", (now() - t0) / n * 1e6, calls);
    return 0;
}

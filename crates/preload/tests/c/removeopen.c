/* removeopen.c: a file one process holds open while another process
 * removes its name (unlink, rename over), as pg_ctl reads postmaster.pid
 * while the postmaster removes it (crates/preload/src/silly.rs).
 *
 *   removeopen hold FILE READY GO   open FILE, create READY, wait for GO,
 *                                   then read it whole, write, read again,
 *                                   close; prints what it saw
 *   removeopen reader FILE SECS     open + read FILE in a loop (stdio, as
 *                                   pg_ctl), prints the I/O errors seen
 *   removeopen churn FILE SECS      create, write, close, unlink FILE in
 *                                   a loop (as a postmaster starting and
 *                                   stopping)
 *
 * Output is the same on a local file system and on NFS through the
 * library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int hold(const char *file, const char *ready, const char *go)
{
    int fd = open(file, O_RDWR);
    if (fd < 0) {
        printf("open: %s\n", strerror(errno));
        return 1;
    }
    int r = open(ready, O_CREAT | O_WRONLY, 0644);
    if (r >= 0)
        close(r);
    for (int i = 0; access(go, F_OK) != 0; i++) {
        if (i > 3000) {
            printf("no go\n");
            return 1;
        }
        usleep(10000);
    }
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0) {
        printf("read after remove: %s\n", strerror(errno));
        return 1;
    }
    buf[n] = 0;
    printf("read after remove: %zd bytes: %s", n, buf);
    n = pwrite(fd, "appended\n", 9, n);
    printf("write after remove: %zd%s%s\n", n, n < 0 ? " " : "", n < 0 ? strerror(errno) : "");
    n = pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0) {
        printf("read again: %s\n", strerror(errno));
        return 1;
    }
    buf[n] = 0;
    printf("read again: %zd bytes: %s", n, buf);
    struct stat st;
    if (fstat(fd, &st) == 0)
        printf("fstat: size %lld\n", (long long)st.st_size);
    else
        printf("fstat: %s\n", strerror(errno));
    printf("close: %d\n", close(fd));
    return 0;
}

static int reader(const char *file, double secs)
{
    long opened = 0, withdata = 0, errors = 0;
    double end = now() + secs;
    while (now() < end) {
        FILE *f = fopen(file, "r");
        if (!f) {
            if (errno != ENOENT) {
                errors++;
                fprintf(stderr, "fopen: %s\n", strerror(errno));
            }
            continue;
        }
        opened++;
        long pid = 0;
        usleep(200);
        int got = fscanf(f, "%ld", &pid);
        if (ferror(f)) {
            errors++;
            fprintf(stderr, "read: %s\n", strerror(errno));
        } else if (got == 1) {
            withdata++;
            if (pid != 12345) {
                errors++;
                fprintf(stderr, "read %ld, not 12345\n", pid);
            }
        }
        fclose(f);
    }
    /* The loop must have met the file often enough to mean something. */
    printf("reader: %s (%ld errors; opened %s 50 times)\n", errors ? "errors" : "no errors",
           errors, opened >= 50 ? "at least" : "fewer than");
    fprintf(stderr, "reader: opened %ld, with data %ld, errors %ld\n", opened, withdata, errors);
    return errors != 0;
}

static int churn(const char *file, double secs)
{
    double end = now() + secs;
    long rounds = 0;
    while (now() < end) {
        int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0) {
            perror("churn: open");
            return 1;
        }
        if (write(fd, "12345\n", 6) != 6) {
            perror("churn: write");
            return 1;
        }
        close(fd);
        usleep(300);
        if (unlink(file) != 0) {
            perror("churn: unlink");
            return 1;
        }
        rounds++;
    }
    fprintf(stderr, "churn: %ld rounds\n", rounds);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 5 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "reader") == 0)
        return reader(argv[2], atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "churn") == 0)
        return churn(argv[2], atof(argv[3]));
    fprintf(stderr, "usage: removeopen hold FILE READY GO | reader FILE SECS | churn FILE SECS\n");
    return 2;
}

/*
 * lockprobe: takes or tries one lock on a file, for the lock tests of
 * crates/preload/tests/run.sh (group v4locks). Run under `dnfs run`; two
 * copies with different DIRECTNFS_SHADOW_DIR do not share local locks, as
 * two hosts, so only the server's locks can keep them apart.
 *
 *   lockprobe hold PATH KIND TYPE START LEN
 *       takes the lock (blocking), prints "held", then reads commands from
 *       stdin: "unlock" (F_UNLCK / LOCK_UN), "closeother" (closes a second
 *       descriptor of the file: POSIX drops the process's record locks),
 *       "close" (closes the locking descriptor); prints "done CMD" after
 *       each; exits at end of input.
 *   lockprobe try PATH KIND TYPE START LEN
 *       one non-blocking attempt: prints "ok" or the errno's name; for
 *       fcntl and ofd first "getlk TYPE START LEN PID" (F_GETLK's answer).
 *   lockprobe wait PATH KIND TYPE START LEN
 *       a blocking attempt: prints "ok MS" (milliseconds it waited) or the
 *       errno's name.
 *
 * KIND: fcntl (F_SETLK...), ofd (F_OFD_SETLK...), flock (whole file).
 * TYPE: r or w.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static const char *errname(int e)
{
    switch (e) {
    case EAGAIN: return "EAGAIN";
    case ENOLCK: return "ENOLCK";
    case EACCES: return "EACCES";
    case EDEADLK: return "EDEADLK";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    case ENOTSUP: return "ENOTSUP";
    default: return strerror(e);
    }
}

static int lock(int fd, const char *kind, int type, long start, long len, int wait)
{
    if (strcmp(kind, "flock") == 0) {
        int op = type == F_UNLCK ? LOCK_UN : type == F_WRLCK ? LOCK_EX : LOCK_SH;
        return flock(fd, op | (wait ? 0 : LOCK_NB));
    }
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    int ofd = strcmp(kind, "ofd") == 0;
    int cmd = ofd ? (wait ? F_OFD_SETLKW : F_OFD_SETLK) : (wait ? F_SETLKW : F_SETLK);
    return fcntl(fd, cmd, &fl);
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: lockprobe hold|try|wait PATH fcntl|ofd|flock r|w START LEN\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2], *kind = argv[3];
    int type = argv[4][0] == 'w' ? F_WRLCK : F_RDLCK;
    long start = atol(argv[5]), len = atol(argv[6]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        printf("open %s\n", errname(errno));
        return 1;
    }
    if (strcmp(mode, "hold") == 0) {
        int other = open(path, O_RDONLY);
        if (lock(fd, kind, type, start, len, 1) != 0) {
            printf("hold %s\n", errname(errno));
            return 1;
        }
        printf("held\n");
        char line[64];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\n")] = 0;
            if (strcmp(line, "unlock") == 0)
                lock(fd, kind, F_UNLCK, start, len, 0);
            else if (strcmp(line, "closeother") == 0)
                close(other);
            else if (strcmp(line, "close") == 0)
                close(fd);
            printf("done %s\n", line);
        }
        return 0;
    }
    if (strcmp(mode, "try") == 0 && strcmp(kind, "flock") != 0) {
        struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
        int cmd = strcmp(kind, "ofd") == 0 ? F_OFD_GETLK : F_GETLK;
        if (fcntl(fd, cmd, &fl) != 0)
            printf("getlk %s\n", errname(errno));
        else
            printf("getlk %c %ld %ld %d\n",
                   fl.l_type == F_UNLCK ? 'u' : fl.l_type == F_WRLCK ? 'w' : 'r',
                   (long)fl.l_start, (long)fl.l_len, (int)fl.l_pid);
    }
    long t0 = now_ms();
    if (lock(fd, kind, type, start, len, strcmp(mode, "wait") == 0) != 0) {
        printf("%s\n", errname(errno));
        return 0;
    }
    if (strcmp(mode, "wait") == 0)
        printf("ok %ld\n", now_ms() - t0);
    else
        printf("ok\n");
    lock(fd, kind, F_UNLCK, start, len, 0);
    close(fd);
    return 0;
}

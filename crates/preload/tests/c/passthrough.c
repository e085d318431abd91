/*
 * passthrough: N calls of each kind on a local path or descriptor, each
 * kind in its own function, for counting the instructions the
 * interception library adds to calls it does not serve (run.sh's "cost"
 * group runs it under callgrind with and without the library and reads
 * each function's inclusive count).
 *
 *   passthrough N
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOOP(name, body)                                                                           \
    __attribute__((noinline, noclone)) static void name(long n, int fd)                                     \
    {                                                                                              \
        struct stat st;                                                                            \
        char b;                                                                                    \
        (void)st;                                                                                  \
        (void)b;                                                                                   \
        (void)fd;                                                                                  \
        for (long i = 0; i < n; i++) {                                                             \
            body;                                                                                  \
            __asm__ volatile("" ::: "memory");                                                     \
        }                                                                                          \
    }

LOOP(loop_stat, stat("/usr/lib/x86_64-linux-gnu/libc.so.6", &st))
LOOP(loop_access, access("Makefile", R_OK))
LOOP(loop_open, close(open("/dev/null", O_RDONLY)))
LOOP(loop_read, if (read(fd, &b, 1) < 0) abort())
LOOP(loop_fstat, fstat(fd, &st))
/* fd here is a local directory: an *at call relative to it */
LOOP(loop_fstatat, fstatat(fd, "libc.so.6", &st, 0))

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    long n = atol(argv[1]);
    int zero = open("/dev/zero", O_RDONLY);
    loop_stat(n, zero);
    loop_access(n, zero);
    loop_open(n, zero);
    loop_read(n, zero);
    loop_fstat(n, zero);
    loop_fstatat(n, open("/usr/lib/x86_64-linux-gnu", O_RDONLY | O_DIRECTORY));
    return 0;
}

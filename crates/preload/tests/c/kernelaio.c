/*
 * kernelaio.c — liburing's ring set-up under the library, with an NFS
 * descriptor open: `io_uring_queue_init` is found the way a program linked
 * with liburing finds it (the first definition in the global scope, which
 * is the preloaded library's), so this sees what MariaDB sees.
 *
 *   kernelaio NFS_FILE
 *
 * Prints "init R" (R: io_uring_queue_init's result, 0 or -errno) and
 * exits 0; 2 when liburing.so.2 is not installed. Run under `dnfs run`,
 * with and without DIRECTNFS_PRELOAD_KERNEL_AIO=allow: refused, R is
 * -ENOSYS (-38) and the library warns that it refused; allowed, R is 0
 * and the library warns that this process uses io_uring and NFS
 * descriptors.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: kernelaio NFS_FILE\n");
        return 1;
    }
    int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    if (!dlopen("liburing.so.2", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "kernelaio: %s\n", dlerror());
        return 2;
    }
    int (*init)(unsigned, void *, unsigned) = (int (*)(unsigned, void *, unsigned))dlsym(RTLD_DEFAULT, "io_uring_queue_init");
    void (*fini)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "io_uring_queue_exit");
    if (!init || !fini) {
        fprintf(stderr, "kernelaio: liburing has no io_uring_queue_init\n");
        return 2;
    }
    /* struct io_uring is 216 bytes in liburing 2.3; room to spare. */
    static char ring[4096] __attribute__((aligned(64)));
    int r = init(8, ring, 0);
    printf("init %d\n", r);
    fflush(stdout);
    if (r == 0)
        fini(ring);
    close(fd);
    return 0;
}

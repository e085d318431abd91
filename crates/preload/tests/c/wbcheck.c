/*
 * wbcheck.c — write-behind through the interception library (run.sh group
 * wb, on a mount in stable=unstable mode): 1000 pwrites of 4 KiB, each
 * read back at once (the WRITE may still be in flight), sync_file_range
 * with WAIT_AFTER every 100 writes, fdatasync at the end, then close; any
 * failure exits non-zero with a message.
 *
 *   wbcheck FILE        write FILE as above
 *   wbcheck --expected  print the expected contents on stdout
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 1000
#define BLOCK 4096

static void fill(unsigned char *b, int i)
{
    for (int k = 0; k < BLOCK; k++)
        b[k] = (unsigned char)(i * 31 + k * 7);
}

static int fail(const char *what)
{
    fprintf(stderr, "wbcheck: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    unsigned char w[BLOCK], r[BLOCK];
    if (argc == 2 && strcmp(argv[1], "--expected") == 0) {
        for (int i = 0; i < BLOCKS; i++) {
            fill(w, i);
            if (fwrite(w, 1, BLOCK, stdout) != BLOCK)
                return 1;
        }
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: wbcheck FILE | --expected\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fail("open");
    for (int i = 0; i < BLOCKS; i++) {
        fill(w, i);
        if (pwrite(fd, w, BLOCK, (off_t)i * BLOCK) != BLOCK)
            return fail("pwrite");
        if (pread(fd, r, BLOCK, (off_t)i * BLOCK) != BLOCK)
            return fail("pread");
        if (memcmp(w, r, BLOCK) != 0) {
            fprintf(stderr, "wbcheck: block %d read back differs\n", i);
            return 1;
        }
        if (i % 100 == 99 &&
            sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                          SYNC_FILE_RANGE_WAIT_AFTER) != 0)
            return fail("sync_file_range");
    }
    if (fdatasync(fd) != 0)
        return fail("fdatasync");
    if (close(fd) != 0)
        return fail("close");
    return 0;
}

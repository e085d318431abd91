/*
 * example.c — libdirectnfs in one page: mount, write a file, read it back
 * with a batch of parallel reads, list the directory, print statistics.
 *
 *   cc example.c $(PKG_CONFIG_PATH=target/release pkg-config --cflags --libs directnfs)
 *   ./a.out 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048'
 *
 * The URL may also come from $DNFS_TEST_URL.
 */
#include <directnfs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 8192
#define NBLOCKS 16

static int print_entry(void *ctx, const struct dnfs_dirent *e)
{
    (void)ctx;
    printf("  %-24s %10llu bytes\n", e->name,
           e->has_stat ? (unsigned long long)e->st.size : 0ULL);
    return 0;
}

static int fail(const char *what, long rc)
{
    fprintf(stderr, "%s: %s (%ld)\n", what, dnfs_last_error(), rc);
    return 1;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("DNFS_TEST_URL");
    if (!url) {
        fprintf(stderr, "usage: %s nfs://host/export?nfsport=N&mountport=M\n", argv[0]);
        return 2;
    }
    printf("libdirectnfs %s\n", dnfs_version());

    dnfs_client *c = dnfs_client_open_url(url);
    if (!c)
        return fail("mount", 0);
    printf("mounted export %s (target %s)\n", dnfs_client_export(c), dnfs_client_target(c));

    /* Write NBLOCKS blocks, each filled with its own number. Durable when
     * dnfs_pwrite returns (FILE_SYNC). */
    dnfs_file *f = dnfs_open(c, "example.dat", DNFS_O_CREAT | DNFS_O_TRUNC, 0644);
    if (!f)
        return fail("open", 0);
    static unsigned char block[BLOCK];
    for (int i = 0; i < NBLOCKS; i++) {
        memset(block, 'A' + i, sizeof block);
        ssize_t n = dnfs_pwrite(f, block, sizeof block, (int64_t)i * BLOCK);
        if (n != BLOCK)
            return fail("pwrite", n);
    }

    /* Read them all at once: submit, then reap completions as they come. */
    static unsigned char bufs[NBLOCKS][BLOCK];
    dnfs_batch *b = dnfs_batch_new(c);
    for (int i = 0; i < NBLOCKS; i++) {
        int rc = dnfs_batch_read(b, f, bufs[i], BLOCK, (int64_t)i * BLOCK, (uint64_t)i);
        if (rc < 0)
            return fail("batch_read", rc);
    }
    int done = 0, bad = 0;
    while (done < NBLOCKS) {
        struct dnfs_completion comp[NBLOCKS];
        int n = dnfs_batch_wait(b, 1, 5000, comp, NBLOCKS);
        if (n < 0)
            return fail("batch_wait", n);
        for (int k = 0; k < n; k++) {
            uint64_t i = comp[k].token;
            if (comp[k].result != BLOCK || bufs[i][0] != 'A' + i || bufs[i][BLOCK - 1] != 'A' + i)
                bad++;
        }
        done += n;
    }
    dnfs_batch_free(b);
    printf("read %d blocks in one batch, %d bad\n", done, bad);

    struct dnfs_stat st;
    if (dnfs_fstat(f, &st) == 0)
        printf("example.dat: %llu bytes, mode %o\n", (unsigned long long)st.size, st.mode);
    dnfs_close(f);

    printf("directory:\n");
    dnfs_readdir(c, ".", print_entry, NULL);

    char json[1024];
    if (dnfs_stats_json(c, json, sizeof json) >= 0)
        printf("stats: %s\n", json);

    dnfs_unlink(c, "example.dat");
    dnfs_client_close(c);
    return bad ? 1 : 0;
}

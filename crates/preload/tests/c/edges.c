/*
 * edges: the edge cases of issue 31, run once in a local directory without
 * the interception library and once in an NFS directory under `dnfs run`;
 * each line says what a call returned and its errno, and the tree is
 * listed at the end. The two outputs must be identical (run.sh group
 * `edges`), except for the lines of the documented deviations, which are
 * printed under "deviation:" and compared with the README's list.
 *
 *   edges DIR
 *
 * DIR must exist and be empty. Nothing here depends on the uid, the time
 * or inode numbers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *dir;

static char *at(const char *name)
{
    static char bufs[8][4096];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, 4096, "%s/%s", dir, name);
    return b;
}

/* One line per call: its name, its result, and errno's name if it failed. */
static void said(const char *what, long r)
{
    if (r < 0)
        printf("%-40s -1 %s\n", what, strerrorname_np(errno));
    else
        printf("%-40s %ld\n", what, r);
    fflush(stdout);
}

#define CALL(what, expr) (errno = 0, said((what), (long)(expr)))

static int cmpstr(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The tree below DIR: one line per entry, its type, and a file's size. */
static void tree(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    struct dirent **names;
    int n = scandir(path, &names, NULL, cmpstr);
    if (n < 0) {
        printf("tree %s: %s\n", rel, strerrorname_np(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char sub[4096], full[8200];
            snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name);
            snprintf(full, sizeof full, "%s/%s", dir, sub);
            struct stat st;
            if (lstat(full, &st) != 0) {
                printf("tree %s: lstat %s\n", sub, strerrorname_np(errno));
            } else if (S_ISDIR(st.st_mode)) {
                printf("tree %s/ %o\n", sub, st.st_mode & 07777);
                tree(sub);
            } else {
                printf("tree %s %o %lld\n", sub, st.st_mode & 07777, (long long)st.st_size);
            }
        }
        free(names[i]);
    }
    free(names);
}

/* `.` and `..` as the last component: refused, nothing changes. */
static void dots(void)
{
    CALL("mkdir d", mkdir(at("d"), 0755));
    CALL("mkdir d/sub", mkdir(at("d/sub"), 0755));
    CALL("rmdir d/sub/.", rmdir(at("d/sub/.")));
    CALL("rmdir d/sub/./", rmdir(at("d/sub/./")));
    CALL("rmdir d/sub/..", rmdir(at("d/sub/..")));
    CALL("unlinkat d/sub/. REMOVEDIR", unlinkat(AT_FDCWD, at("d/sub/."), AT_REMOVEDIR));
    CALL("unlink d/sub/.", unlink(at("d/sub/.")));
    CALL("unlink d/sub/..", unlink(at("d/sub/..")));
    CALL("mkdir e", mkdir(at("e"), 0755));
    CALL("rmdir e/missing/..", rmdir(at("e/missing/..")));
    CALL("rmdir e/missing/../../e", rmdir(at("e/missing/../../e")));
    CALL("mkdir e/missing/../f", mkdir(at("e/missing/../f"), 0755));
    CALL("creat file", close(creat(at("file"), 0644)));
    CALL("rmdir file/../e", rmdir(at("file/../e")));
    CALL("mkdir a", mkdir(at("a"), 0755));
    CALL("mkdir a/b", mkdir(at("a/b"), 0755));
    CALL("rename a/b/.. x", rename(at("a/b/.."), at("x")));
    CALL("rename a/b/. x", rename(at("a/b/."), at("x")));
    CALL("rename a/missing/../b x", rename(at("a/missing/../b"), at("x")));
    CALL("rename a/b e/.", rename(at("a/b"), at("e/.")));
    CALL("rename a/b e/..", rename(at("a/b"), at("e/..")));
    CALL("mkdir d/.", mkdir(at("d/."), 0755));
    CALL("mkdir d/sub/..", mkdir(at("d/sub/.."), 0755));
    CALL("mkdir e/missing/.", mkdir(at("e/missing/."), 0755));
    CALL("open e/missing/. O_CREAT", open(at("e/missing/."), O_CREAT | O_WRONLY, 0644));
    CALL("open e/missing/.. O_CREAT", open(at("e/missing/.."), O_CREAT | O_WRONLY, 0644));
    CALL("symlink t d/.", symlink("t", at("d/.")));
    CALL("link file d/.", link(at("file"), at("d/.")));
    CALL("rmdir d/sub", rmdir(at("d/sub")));
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    dir = argv[1];
    dots();
    tree("");
    return 0;
}

/*
 * edges: the edge cases of issue 31, run once in a local directory without
 * the interception library and once in an NFS directory under `dnfs run`;
 * each line says what a call returned and its errno, and the tree is
 * listed at the end. The two outputs must be identical (run.sh group
 * `edges`), except for the lines of the documented deviations, which are
 * printed under "deviation:" and compared with the book's list (docs/book/src/run/deviations.md).
 *
 *   edges DIR
 *   edges --user DIR   (as a user other than root; DIR is the user's and
 *                       holds `rootfile`, root's, mode 0644, 5 bytes)
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
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

/* Symbolic link targets up to Linux's bound (4095 bytes) are stored and
 * read back whole; 4096 is ENAMETOOLONG. */
static void long_links(void)
{
    static const size_t lens[] = {1024, 1025, 2000, 4000, 4095, 4096};
    static char target[4097], back[4200];
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char what[64], name[32];
        memset(target, 't', lens[i]);
        target[lens[i]] = 0;
        snprintf(name, sizeof name, "link%zu", lens[i]);
        snprintf(what, sizeof what, "symlink target of %zu bytes", lens[i]);
        CALL(what, symlink(target, at(name)));
        memset(back, 0, sizeof back);
        snprintf(what, sizeof what, "readlink of it");
        CALL(what, readlink(at(name), back, sizeof back));
        printf("%-40s %d\n", "the same target", strcmp(back, target) == 0);
        unlink(at(name));
    }
}

/* The content of a file, as one line. */
static void content(const char *what, const char *name)
{
    char buf[256] = {0};
    int fd = open(at(name), O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    printf("%-40s %zd [%s]\n", what, n, n > 0 ? buf : "");
}

/* File system calls through syscall(2), on descriptors and paths: served
 * as their libc wrappers, never applied to a shadow file. */
static void raw(void)
{
    char buf[64] = {0};
    struct iovec w = {"hello raw world", 15}, r = {buf, sizeof buf - 1};
    int fd = open(at("raw"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CALL("raw: pwritev2", syscall(SYS_pwritev2, fd, &w, 1, 0L, 0L, 0));
    CALL("raw: preadv2 at 6", syscall(SYS_preadv2, fd, &r, 1, 6L, 0L, 0));
    printf("raw: preadv2 read [%s]\n", buf);
    CALL("raw: pwritev2 at -1 (file offset)", syscall(SYS_pwritev2, fd, &w, 1, -1L, 0L, 0));
    CALL("raw: lseek SEEK_CUR", syscall(SYS_lseek, fd, 0L, SEEK_CUR));
    CALL("raw: fchmod 0600", syscall(SYS_fchmod, fd, 0600));
    struct stat st;
    CALL("raw: fstat", syscall(SYS_fstat, fd, &st));
    printf("raw: fstat size %lld mode %o\n", (long long)st.st_size, st.st_mode & 07777);
    int out = open(at("raw-copy"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    loff_t in_off = 0;
    long total = 0, got;
    for (int i = 0; i < 10 && (got = syscall(SYS_copy_file_range, fd, &in_off, out, NULL, 7L, 0)) > 0; i++)
        total += got;
    printf("raw: copy_file_range copied %ld, offset %lld, last %ld\n", total, (long long)in_off, got);
    CALL("raw: sendfile", syscall(SYS_sendfile, out, fd, &(off_t){0}, 5L));
    CALL("raw: fsync", syscall(SYS_fsync, out));
    CALL("raw: fdatasync", syscall(SYS_fdatasync, out));
    CALL("raw: fadvise", syscall(SYS_fadvise64, out, 0L, 0L, POSIX_FADV_SEQUENTIAL));
    CALL("raw: ftruncate 20", syscall(SYS_ftruncate, out, 20L));
    CALL("raw: lseek SEEK_END", syscall(SYS_lseek, out, 0L, SEEK_END));
    CALL("raw: fallocate 0..40", syscall(SYS_fallocate, out, 0, 0L, 40L));
    CALL("raw: fstat size", (syscall(SYS_fstat, out, &st), (long)st.st_size));
    int d = syscall(SYS_dup, out);
    CALL("raw: write on dup", syscall(SYS_write, d, "!", 1L));
    CALL("raw: close dup", syscall(SYS_close, d));
    CALL("raw: fchown -1 -1", syscall(SYS_fchown, out, -1, -1));
    close(out);
    close(fd);
    content("raw: raw", "raw");
    CALL("raw: truncate raw-copy 16", syscall(SYS_truncate, at("raw-copy"), 16L));
    content("raw: raw-copy", "raw-copy");
    CALL("raw: mkdirat rd", syscall(SYS_mkdirat, AT_FDCWD, at("rd"), 0700));
    CALL("raw: mkdir rd2", syscall(SYS_mkdir, at("rd2"), 0755));
    CALL("raw: rmdir rd2", syscall(SYS_rmdir, at("rd2")));
    CALL("raw: fchmodat rd 0750", syscall(SYS_fchmodat, AT_FDCWD, at("rd"), 0750));
    CALL("raw: chmod raw-copy 0640", syscall(SYS_chmod, at("raw-copy"), 0640));
    CALL("raw: symlinkat", syscall(SYS_symlinkat, "raw", AT_FDCWD, at("rl")));
    memset(buf, 0, sizeof buf);
    CALL("raw: readlinkat", syscall(SYS_readlinkat, AT_FDCWD, at("rl"), buf, 63L));
    printf("raw: readlinkat [%s]\n", buf);
    CALL("raw: renameat2 rl rl2", syscall(SYS_renameat2, AT_FDCWD, at("rl"), AT_FDCWD, at("rl2"), 0));
    CALL("raw: linkat raw raw-link", syscall(SYS_linkat, AT_FDCWD, at("raw"), AT_FDCWD, at("raw-link"), 0));
    CALL("raw: unlinkat raw-link", syscall(SYS_unlinkat, AT_FDCWD, at("raw-link"), 0));
    CALL("raw: faccessat raw W_OK", syscall(SYS_faccessat, AT_FDCWD, at("raw"), W_OK));
    CALL("raw: access missing", syscall(SYS_access, at("missing"), F_OK));
    CALL("raw: utimensat raw", syscall(SYS_utimensat, AT_FDCWD, at("raw"), NULL, 0));
    CALL("raw: newfstatat rd", (syscall(SYS_newfstatat, AT_FDCWD, at("rd"), &st, 0), (long)(st.st_mode & 07777)));
    CALL("raw: stat raw size", (syscall(SYS_stat, at("raw"), &st), (long)st.st_size));
    struct { unsigned long long flags, mode, resolve; } how = {O_RDONLY, 0, 0};
    int o2 = syscall(SYS_openat2, AT_FDCWD, at("raw"), &how, sizeof how);
    memset(buf, 0, sizeof buf);
    CALL("raw: read of openat2", syscall(SYS_read, o2, buf, 5L));
    printf("raw: openat2 read [%s]\n", buf);
    close(o2);
    int here = open(".", O_RDONLY | O_DIRECTORY);
    CALL("raw: chdir", syscall(SYS_chdir, dir));
    char cwd[4096] = {0};
    long n = syscall(SYS_getcwd, cwd, sizeof cwd);
    printf("raw: getcwd is the directory: %d, length right: %d\n", strcmp(cwd, dir) == 0, n == (long)strlen(dir) + 1);
    CALL("raw: fchdir back", syscall(SYS_fchdir, here));
    close(here);
}

/* Open, then unlink or rename over, in the same process: the descriptor
 * keeps working, the name is gone, and nothing is left after close. */
static void open_unlink(void)
{
    char buf[64] = {0};
    struct stat st;
    int fd = open(at("tmpf"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CALL("unlinked: write", write(fd, "abc", 3));
    CALL("unlinked: unlink", unlink(at("tmpf")));
    CALL("unlinked: stat of the name", stat(at("tmpf"), &st));
    CALL("unlinked: write after", write(fd, "def", 3));
    CALL("unlinked: pread after", pread(fd, buf, sizeof buf - 1, 0));
    printf("unlinked: read [%s]\n", buf);
    CALL("unlinked: fstat size", (fstat(fd, &st), (long)st.st_size));
    CALL("unlinked: ftruncate", ftruncate(fd, 2));
    int d = dup(fd);
    CALL("unlinked: close", close(fd));
    CALL("unlinked: read through a dup", pread(d, buf, sizeof buf - 1, 0));
    CALL("unlinked: close the dup", close(d));

    fd = open(at("quiet"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CALL("unlinked before any I/O: unlink", unlink(at("quiet")));
    CALL("unlinked before any I/O: fstat", fstat(fd, &st));
    CALL("unlinked before any I/O: write", write(fd, "x", 1));
    CALL("unlinked before any I/O: close", close(fd));

    fd = open(at("old"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CALL("renamed over: write", write(fd, "old data", 8));
    int n = open(at("new"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CALL("renamed over: write the new one", write(n, "new", 3));
    close(n);
    CALL("renamed over: rename new old", rename(at("new"), at("old")));
    memset(buf, 0, sizeof buf);
    CALL("renamed over: pread the old descriptor", pread(fd, buf, sizeof buf - 1, 0));
    printf("renamed over: old descriptor reads [%s]\n", buf);
    CALL("renamed over: fstat size", (fstat(fd, &st), (long)st.st_size));
    CALL("renamed over: close", close(fd));
    content("renamed over: the name holds", "old");
    int a = open(at("twice"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    int b = open(at("twice"), O_RDONLY);
    CALL("two opens: unlink", unlink(at("twice")));
    CALL("two opens: close one", close(a));
    CALL("two opens: fstat the other", fstat(b, &st));
    CALL("two opens: close the other", close(b));
}

/* As a user other than root, in a directory of the user's that holds
 * `rootfile` (root's, mode 0644): permission checks. */
static void as_user(void)
{
    struct stat st;
    int fd = open(at("ro"), O_CREAT | O_WRONLY | O_TRUNC, 0444);
    CALL("user: write the new 0444 file", write(fd, "abc", 3));
    close(fd);
    CALL("user: truncate own 0444 file", truncate(at("ro"), 1));
    CALL("user: open own 0444 O_RDONLY|O_TRUNC", open(at("ro"), O_RDONLY | O_TRUNC));
    CALL("user: size stays", (stat(at("ro"), &st), (long)st.st_size));
    fd = open(at("rw"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CALL("user: write rw", write(fd, "abc", 3));
    close(fd);
    fd = open(at("rw"), O_RDONLY | O_TRUNC);
    CALL("user: open rw O_RDONLY|O_TRUNC", fd >= 0 ? 0 : -1);
    CALL("user: it was truncated", (stat(at("rw"), &st), (long)st.st_size));
    CALL("user: read of it", read(fd, &st, 1));
    close(fd);
    CALL("user: chown rootfile -1 -1", chown(at("rootfile"), -1, -1));
    CALL("user: lchown rootfile -1 -1", lchown(at("rootfile"), -1, -1));
    CALL("user: chown rootfile to self", chown(at("rootfile"), getuid(), -1));
    CALL("user: truncate rootfile", truncate(at("rootfile"), 0));
    CALL("user: chmod rootfile", chmod(at("rootfile"), 0666));
    CALL("user: open rootfile O_WRONLY", open(at("rootfile"), O_WRONLY));
    CALL("user: open rootfile O_RDONLY|O_TRUNC", open(at("rootfile"), O_RDONLY | O_TRUNC));
    CALL("user: rootfile size", (stat(at("rootfile"), &st), (long)st.st_size));
    fd = open(at("rootfile"), O_RDONLY);
    CALL("user: fchown rootfile -1 -1", fchown(fd, -1, -1));
    close(fd);
}

/* Bad pointers: EFAULT, as the kernel gives, never a crash. */
static void pointers(void)
{
    struct stat st;
    /* volatile: the compiler must not act on libc's nonnull attributes */
    const char *volatile nul = NULL, *volatile low = (const char *)16,
                         *volatile high = (const char *)-8L;
    CALL("creat ptr", close(creat(at("ptr"), 0644)));
    CALL("rename ptr NULL", rename(at("ptr"), nul));
    CALL("rename NULL ptr", rename(nul, at("ptr")));
    CALL("rename ptr low", rename(at("ptr"), low));
    CALL("link ptr NULL", link(at("ptr"), nul));
    CALL("link ptr high", link(at("ptr"), high));
    CALL("renameat ptr NULL", renameat(AT_FDCWD, at("ptr"), AT_FDCWD, nul));
    CALL("symlink NULL ptr2", symlink(nul, at("ptr2")));
    CALL("symlink low ptr2", symlink(low, at("ptr2")));
    CALL("stat low", stat(low, &st));
    CALL("stat high", stat(high, &st));
    CALL("open high", open(high, O_RDONLY));
    CALL("mkdir low", mkdir(low, 0755));
    CALL("unlink high", unlink(high));
    CALL("syscall stat high", syscall(SYS_stat, high, &st));
}

/* A unix socket bound by a relative name while the current directory is
 * the test directory: locally it is made there; on NFS it is refused
 * (docs/book/src/run/not-served.md), so only the failure's absence is compared when it works. */
static void unix_socket(void)
{
    int here = open(".", O_RDONLY | O_DIRECTORY);
    if (chdir(dir) != 0)
        return;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "sock");
    int r = bind(s, (struct sockaddr *)&a, sizeof a);
    struct stat st;
    /* Either it is there as a socket (local), or bind failed and there is
     * nothing (NFS): never a success that leaves nothing behind. */
    int there = lstat("sock", &st) == 0;
    printf("unix socket bound by a relative name: consistent %d\n", (r == 0) == there);
    if (there)
        unlink("sock");
    close(s);
    fchdir(here);
    close(here);
}

/* A directory deeper than PATH_MAX, reached one component at a time
 * from directory descriptors: each call's path is short, so it is served
 * (the absolute path it names is longer than PATH_MAX). */
static void deep(void)
{
    enum { LEVELS = 18 };
    char name[251];
    memset(name, 'd', 250);
    name[250] = 0;
    int fds[LEVELS + 1];
    fds[0] = open(dir, O_RDONLY | O_DIRECTORY);
    int ok = 1;
    for (int i = 0; i < LEVELS && ok; i++) {
        ok = mkdirat(fds[i], name, 0755) == 0;
        fds[i + 1] = ok ? openat(fds[i], name, O_RDONLY | O_DIRECTORY) : -1;
        ok = ok && fds[i + 1] >= 0;
    }
    printf("deep: %d levels of 250-byte names made and opened: %d\n", LEVELS, ok);
    if (!ok) {
        printf("deep: failed: %s\n", strerrorname_np(errno));
        return;
    }
    int d = fds[LEVELS];
    int f = openat(d, "f", O_CREAT | O_RDWR, 0644);
    CALL("deep: openat f O_CREAT", f >= 0 ? 0 : -1);
    CALL("deep: write", write(f, "deep", 4));
    close(f);
    struct stat st;
    CALL("deep: fstatat f size", (fstatat(d, "f", &st, 0), (long)st.st_size));
    CALL("deep: renameat f g", renameat(d, "f", d, "g"));
    CALL("deep: unlinkat g", unlinkat(d, "g", 0));
    for (int i = LEVELS; i > 0; i--) {
        close(fds[i]);
        if (unlinkat(fds[i - 1], name, AT_REMOVEDIR) != 0)
            printf("deep: rmdir level %d: %s\n", i, strerrorname_np(errno));
    }
    close(fds[0]);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--user") == 0) {
        dir = argv[2];
        as_user();
        tree("");
        return 0;
    }
    if (argc != 2)
        return 2;
    dir = argv[1];
    dots();
    long_links();
    raw();
    open_unlink();
    pointers();
    unix_socket();
    deep();
    tree("");
    return 0;
}

/*
 * nfscalls: every libc call the interception library serves, on an NFS
 * directory, each checked against what POSIX (and Linux) says it returns
 * and against the server's own view of the export.
 *
 *   nfscalls NFS_DIR LOCAL_VIEW_OF_NFS_DIR
 *
 * Run under `dnfs run`. Prints "ok NAME" or "FAIL NAME: why" per check and
 * exits 1 if any check failed. NFS_DIR must exist and be empty.
 *
 *   nfscalls --mapped NFS_DIR LOCAL_VIEW
 *
 * only the mmap checks (with DIRECTNFS_PRELOAD_MMAP=copy: the copies).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int failures;
static const char *nfs;   /* the NFS directory */
static const char *view;  /* the same directory, as the server sees it */

static void check(int ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        printf("ok   %s\n", name);
    } else {
        va_list ap;
        failures++;
        printf("FAIL %s: ", name);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf(" (errno %d %s)\n", errno, strerror(errno));
    }
    fflush(stdout);
}

#define CHECK(cond, name) check((cond), (name), "%s", #cond)

static char *at(const char *dir, const char *name)
{
    static char bufs[8][PATH_MAX];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, PATH_MAX, "%s/%s", dir, name);
    return b;
}

/* The content of a file of the server's local view. */
static ssize_t server_read(const char *name, char *buf, size_t len)
{
    /* The local view is not under a mount prefix: plain local reads. */
    int fd = open(at(view, name), O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len);
    close(fd);
    return n;
}

static void test_open_flags(void)
{
    char buf[64];
    int fd = open(at(nfs, "a"), O_CREAT | O_EXCL | O_RDWR, 0640);
    CHECK(fd >= 0, "open O_CREAT|O_EXCL creates");
    CHECK(write(fd, "hello world", 11) == 11, "write 11 bytes");
    struct stat st;
    CHECK(stat(at(view, "a"), &st) == 0 && st.st_size == 11, "server sees the 11 bytes");
    CHECK((st.st_mode & 0777) == (0640 & ~022), "mode less umask reached the server");
    CHECK(open(at(nfs, "a"), O_CREAT | O_EXCL | O_RDWR, 0640) < 0 && errno == EEXIST,
          "O_CREAT|O_EXCL on an existing file is EEXIST");
    CHECK(open(at(nfs, "a"), O_RDONLY | O_DIRECTORY) < 0 && errno == ENOTDIR,
          "O_DIRECTORY on a file is ENOTDIR");
    CHECK(open(at(nfs, "missing"), O_RDONLY) < 0 && errno == ENOENT, "missing file is ENOENT");
    CHECK(open(nfs, O_WRONLY) < 0 && errno == EISDIR, "a directory opened for writing is EISDIR");
    CHECK(lseek(fd, 0, SEEK_CUR) == 11, "offset after write");
    CHECK(pread(fd, buf, sizeof buf, 6) == 5 && memcmp(buf, "world", 5) == 0, "pread");
    CHECK(lseek(fd, 0, SEEK_END) == 11, "SEEK_END from the server's size");
    CHECK(lseek(fd, 3, SEEK_DATA) == 3 && lseek(fd, 3, SEEK_HOLE) == 11, "SEEK_DATA/SEEK_HOLE");
    CHECK(lseek(fd, 20, SEEK_DATA) < 0 && errno == ENXIO, "SEEK_DATA past the end is ENXIO");
    CHECK(lseek(fd, -1, SEEK_SET) < 0 && errno == EINVAL, "negative offset is EINVAL");
    close(fd);

    fd = open(at(nfs, "a"), O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "!", 1) == 1, "O_APPEND write");
    CHECK(fcntl(fd, F_GETFL) == (O_WRONLY | O_APPEND | O_LARGEFILE) ||
              (fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND)) == (O_WRONLY | O_APPEND),
          "F_GETFL shows O_WRONLY|O_APPEND");
    CHECK(read(fd, buf, 1) < 0 && errno == EBADF, "read on O_WRONLY is EBADF");
    close(fd);
    CHECK(server_read("a", buf, sizeof buf) == 12 && memcmp(buf, "hello world!", 12) == 0,
          "server has the appended byte");

    fd = open(at(nfs, "a"), O_RDWR | O_TRUNC);
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "O_TRUNC empties");
    close(fd);
    fd = creat(at(nfs, "c"), 0600);
    CHECK(fd >= 0 && write(fd, "xyz", 3) == 3, "creat");
    close(fd);
    fd = open(at(nfs, "c"), O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "O_CLOEXEC sets FD_CLOEXEC");
    CHECK(fcntl(fd, F_SETFD, 0) == 0 && fcntl(fd, F_GETFD) == 0, "F_SETFD clears it");
    close(fd);
    fd = open(at(nfs, "c"), O_RDWR | O_SYNC | O_DIRECT);
    CHECK(fd >= 0 && pwrite(fd, "Q", 1, 0) == 1, "O_SYNC|O_DIRECT accepted");
    CHECK(fd >= 0 && (fcntl(fd, F_GETFL) & O_DIRECT), "F_GETFL keeps O_DIRECT");
    close(fd);
    CHECK(server_read("c", buf, sizeof buf) == 3 && memcmp(buf, "Qyz", 3) == 0,
          "O_SYNC write is on the server");
}

static void test_dup_and_offsets(void)
{
    char buf[16];
    int fd = open(at(nfs, "d"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    lseek(fd, 2, SEEK_SET);
    int d1 = dup(fd);
    CHECK(d1 >= 0 && read(d1, buf, 3) == 3 && memcmp(buf, "234", 3) == 0, "dup reads at the shared offset");
    CHECK(lseek(fd, 0, SEEK_CUR) == 5, "dup moved the original's offset");
    int d2 = dup2(fd, 100);
    CHECK(d2 == 100 && read(100, buf, 1) == 1 && buf[0] == '5', "dup2 shares the offset");
    int d3 = fcntl(fd, F_DUPFD_CLOEXEC, 200);
    CHECK(d3 >= 200 && (fcntl(d3, F_GETFD) & FD_CLOEXEC), "F_DUPFD_CLOEXEC");
    int d4 = dup3(fd, 101, O_CLOEXEC);
    CHECK(d4 == 101 && (fcntl(101, F_GETFD) & FD_CLOEXEC), "dup3 O_CLOEXEC");
    CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0 && (fcntl(d1, F_GETFL) & O_APPEND), "status flags shared by dups");
    CHECK(write(d1, "X", 1) == 1 && lseek(fd, 0, SEEK_CUR) == 11, "O_APPEND set by F_SETFL on a dup appends");
    /* O_APPEND set by another process sharing the description */
    fcntl(fd, F_SETFL, 0);
    lseek(fd, 0, SEEK_SET);
    pid_t pid = fork();
    if (pid == 0)
        _exit(fcntl(fd, F_SETFL, O_APPEND) == 0 ? 0 : 1);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && write(fd, "Y", 1) == 1 && lseek(fd, 0, SEEK_CUR) == 12,
          "O_APPEND set by a child through F_SETFL makes the parent append");
    close(fd);
    CHECK(pread(d1, buf, 1, 10) == 1 && buf[0] == 'X', "dup still open after the original closed");
    /* dup2 onto a local descriptor's number and back */
    int p[2];
    pipe(p);
    CHECK(dup2(p[0], 100) == 100, "dup2 a pipe over an NFS descriptor");
    write(p[1], "z", 1);
    CHECK(read(100, buf, 1) == 1 && buf[0] == 'z', "the number is a pipe now");
    close(p[0]);
    close(p[1]);
    close(100);
    close(d1);
    close(d3);
    close(d4);
    CHECK(fcntl(d1, F_GETFD) < 0 && errno == EBADF, "closed NFS descriptor is EBADF");
}

static void test_vectors_and_sizes(void)
{
    char a[4], b[6];
    int fd = open(at(nfs, "v"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    struct iovec w[2] = {{"abcd", 4}, {"efghij", 6}};
    CHECK(writev(fd, w, 2) == 10, "writev");
    struct iovec r[2] = {{a, 4}, {b, 6}};
    CHECK(preadv(fd, r, 2, 0) == 10 && memcmp(a, "abcd", 4) == 0 && memcmp(b, "efghij", 6) == 0, "preadv");
    CHECK(pwritev(fd, w, 1, 20) == 4, "pwritev past the end");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 24, "file grew to 24");
    lseek(fd, 0, SEEK_SET);
    CHECK(readv(fd, r, 2) == 10 && lseek(fd, 0, SEEK_CUR) == 10, "readv moves the offset");
    CHECK(preadv2(fd, r, 1, -1, 0) == 4 && lseek(fd, 0, SEEK_CUR) == 14, "preadv2 offset -1 uses the file offset");
    CHECK(ftruncate(fd, 5) == 0 && fstat(fd, &st) == 0 && st.st_size == 5, "ftruncate");
    CHECK(truncate(at(nfs, "v"), 3) == 0 && stat(at(view, "v"), &st) == 0 && st.st_size == 3, "truncate");
    CHECK(fallocate(fd, 0, 0, 4096) == 0 && fstat(fd, &st) == 0 && st.st_size == 4096, "fallocate extends");
    CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8192) == 0 && fstat(fd, &st) == 0 && st.st_size == 4096,
          "fallocate KEEP_SIZE keeps the size");
    CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10) < 0 && errno == EOPNOTSUPP,
          "punching holes is EOPNOTSUPP");
    CHECK(posix_fallocate(fd, 0, 5000) == 0 && fstat(fd, &st) == 0 && st.st_size == 5000, "posix_fallocate");
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "posix_fadvise accepted");
    CHECK(fsync(fd) == 0 && fdatasync(fd) == 0 && sync_file_range(fd, 0, 0, 0) == 0, "fsync, fdatasync, sync_file_range");
    close(fd);

    /* copy_file_range and sendfile, NFS to NFS and NFS to local */
    int in = open(at(nfs, "a"), O_RDWR);
    write(in, "copy me please", 14);
    int out = open(at(nfs, "cfr"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    loff_t oi = 0;
    CHECK(copy_file_range(in, &oi, out, NULL, 100, 0) == 14 && oi == 14, "copy_file_range NFS to NFS");
    char buf[32];
    CHECK(server_read("cfr", buf, sizeof buf) == 14 && memcmp(buf, "copy me please", 14) == 0, "copied data on the server");
    char tmpl[] = "/tmp/nfscalls-local-XXXXXX";
    int local = mkstemp(tmpl);
    off_t off = 5;
    CHECK(sendfile(local, in, &off, 100) == 9 && off == 14, "sendfile NFS to local");
    CHECK(pread(local, buf, 9, 0) == 9 && memcmp(buf, "me please", 9) == 0, "sent data in the local file");
    unlink(tmpl);
    close(local);
    close(in);
    close(out);
}

static void test_metadata(void)
{
    struct stat st, lst, vst;
    CHECK(mkdir(at(nfs, "dir"), 0750) == 0, "mkdir");
    CHECK(mkdir(at(nfs, "dir"), 0750) < 0 && errno == EEXIST, "mkdir again is EEXIST");
    CHECK(stat(at(nfs, "dir"), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == (0750 & ~022), "stat a directory");
    CHECK(stat(at(view, "dir"), &vst) == 0 && vst.st_ino == st.st_ino, "st_ino is the server's inode");
    CHECK(symlink("a", at(nfs, "lnk")) == 0, "symlink");
    char buf[64] = {0};
    CHECK(readlink(at(nfs, "lnk"), buf, sizeof buf) == 1 && buf[0] == 'a', "readlink");
    CHECK(readlink(at(view, "lnk"), buf, sizeof buf) == 1 && buf[0] == 'a', "server has the link");
    CHECK(lstat(at(nfs, "lnk"), &lst) == 0 && S_ISLNK(lst.st_mode), "lstat sees a link");
    CHECK(stat(at(nfs, "lnk"), &st) == 0 && S_ISREG(st.st_mode) && st.st_ino != lst.st_ino, "stat follows it");
    CHECK(readlink(at(nfs, "a"), buf, sizeof buf) < 0 && errno == EINVAL, "readlink of a file is EINVAL");
    int fd = open(at(nfs, "lnk"), O_RDONLY | O_NOFOLLOW);
    CHECK(fd < 0 && errno == ELOOP, "O_NOFOLLOW on a link is ELOOP");
    fd = open(at(nfs, "lnk"), O_RDONLY);
    CHECK(fd >= 0 && read(fd, buf, 4) == 4 && memcmp(buf, "copy", 4) == 0, "open follows the link");
    close(fd);
    /* Closed: a file this process holds open is only renamed aside by
     * unlink (silly.rs), and its directory could not be removed below. */
    int lfd = -1;
    CHECK(symlink("dir", at(nfs, "dirlink")) == 0 && (lfd = open(at(nfs, "dirlink/in"), O_CREAT | O_WRONLY, 0644)) >= 0,
          "create through a link to a directory");
    close(lfd);
    CHECK(stat(at(view, "dir/in"), &st) == 0, "the file is in the directory");
    CHECK(link(at(nfs, "c"), at(nfs, "c2")) == 0 && stat(at(nfs, "c"), &st) == 0 && st.st_nlink == 2, "link");
    CHECK(fstatat(AT_FDCWD, at(nfs, "lnk"), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode), "fstatat NOFOLLOW");
    struct statx sx;
    CHECK(statx(AT_FDCWD, at(nfs, "c"), 0, STATX_BASIC_STATS, &sx) == 0 && sx.stx_size == 3 && sx.stx_nlink == 2, "statx");
    CHECK(chmod(at(nfs, "c"), 0604) == 0 && stat(at(view, "c"), &vst) == 0 && (vst.st_mode & 07777) == 0604, "chmod");
    fd = open(at(nfs, "c"), O_RDONLY);
    CHECK(fchmod(fd, 0644) == 0 && stat(at(view, "c"), &vst) == 0 && (vst.st_mode & 07777) == 0644, "fchmod");
    CHECK(fchown(fd, 1234, 4321) == 0 && stat(at(view, "c"), &vst) == 0 && vst.st_uid == 1234 && vst.st_gid == 4321,
          "fchown (as root)");
    CHECK(chown(at(nfs, "c"), -1, 0) == 0 && stat(at(view, "c"), &vst) == 0 && vst.st_uid == 1234 && vst.st_gid == 0,
          "chown with -1 keeps the owner");
    struct timespec ts[2] = {{1000000000, 5}, {1100000000, 7}};
    CHECK(futimens(fd, ts) == 0 && stat(at(view, "c"), &vst) == 0 && vst.st_mtime == 1100000000 && vst.st_atime == 1000000000,
          "futimens");
    struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    CHECK(utimensat(AT_FDCWD, at(nfs, "c"), omit, 0) == 0 && stat(at(view, "c"), &vst) == 0 &&
              vst.st_atime == 1000000000 && vst.st_mtime > 1100000000,
          "utimensat UTIME_OMIT/UTIME_NOW");
    close(fd);
    CHECK(access(at(nfs, "c"), R_OK | W_OK) == 0, "access R_OK|W_OK (root)");
    CHECK(access(at(nfs, "nope"), F_OK) < 0 && errno == ENOENT, "access of a missing file is ENOENT");
    CHECK(faccessat(AT_FDCWD, at(nfs, "c"), X_OK, AT_EACCESS) < 0 && errno == EACCES, "no execute bit: EACCES");
    struct statfs sf;
    struct statvfs sv;
    CHECK(statfs(nfs, &sf) == 0 && sf.f_type == 0x6969 && sf.f_blocks > 0, "statfs says NFS");
    CHECK(statvfs(nfs, &sv) == 0 && sv.f_blocks > 0 && sv.f_namemax == 255, "statvfs");
    CHECK(rename(at(nfs, "c2"), at(nfs, "c3")) == 0 && stat(at(view, "c3"), &vst) == 0 && stat(at(view, "c2"), &vst) < 0, "rename");
    CHECK(renameat2(AT_FDCWD, at(nfs, "c3"), AT_FDCWD, at(nfs, "c4"), RENAME_NOREPLACE) < 0 && errno == EINVAL,
          "renameat2 with flags is EINVAL");
    CHECK(rename(at(nfs, "c3"), "/tmp/nfscalls-elsewhere") < 0 && errno == EXDEV, "rename to a local path is EXDEV");
    CHECK(unlink(at(nfs, "dir")) < 0 && errno == EISDIR, "unlink of a directory is EISDIR");
    CHECK(rmdir(at(nfs, "dir")) < 0 && errno == ENOTEMPTY, "rmdir of a non-empty directory is ENOTEMPTY");
    CHECK(unlink(at(nfs, "dir/in")) == 0 && rmdir(at(nfs, "dir")) == 0 && stat(at(view, "dir"), &vst) < 0, "unlink, rmdir");
    CHECK(mknod(at(nfs, "fifo"), S_IFIFO | 0644, 0) < 0 && errno == EOPNOTSUPP, "mknod is EOPNOTSUPP");
    CHECK(getxattr(at(nfs, "c"), "user.x", buf, sizeof buf) < 0 && errno == ENOTSUP, "xattrs are ENOTSUP");
}

static int cmpstr(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void test_dirs_and_cwd(void)
{
    mkdir(at(nfs, "ls"), 0755);
    for (int i = 0; i < 30; i++) {
        char name[32];
        snprintf(name, sizeof name, "ls/f%02d", i);
        close(open(at(nfs, name), O_CREAT | O_WRONLY, 0644));
    }
    mkdir(at(nfs, "ls/sub"), 0755);
    DIR *d = opendir(at(nfs, "ls"));
    int n = 0, dots = 0, typed = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        n++;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            dots++;
        if (!strcmp(e->d_name, "sub") && e->d_type == DT_DIR)
            typed++;
        if (!strcmp(e->d_name, "f00") && e->d_type == DT_REG)
            typed++;
    }
    CHECK(d && n == 33 && dots == 2 && typed == 2, "readdir: 31 entries, . and .., with d_type");
    long pos = d ? telldir(d) : -1;
    rewinddir(d);
    CHECK(readdir(d) != NULL && pos == 33, "rewinddir, telldir");
    int fd = dirfd(d);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && S_ISDIR(st.st_mode), "dirfd is the directory");
    CHECK(closedir(d) == 0, "closedir");
    struct dirent **list;
    n = scandir(at(nfs, "ls"), &list, NULL, cmpstr);
    CHECK(n == 33 && !strcmp(list[2]->d_name, "f00") && !strcmp(list[32]->d_name, "sub"), "scandir sorted");
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    fd = open(at(nfs, "ls"), O_RDONLY | O_DIRECTORY);
    d = fdopendir(fd);
    CHECK(d != NULL && readdir(d) != NULL, "fdopendir");
    /* *at calls relative to the directory descriptor */
    int f = openat(fd, "f01", O_RDWR);
    CHECK(f >= 0 && write(f, "at", 2) == 2, "openat relative to an NFS directory descriptor");
    close(f);
    CHECK(fstatat(fd, "f01", &st, 0) == 0 && st.st_size == 2, "fstatat relative");
    CHECK(mkdirat(fd, "sub2", 0755) == 0 && unlinkat(fd, "sub2", AT_REMOVEDIR) == 0, "mkdirat, unlinkat AT_REMOVEDIR");
    CHECK(renameat(fd, "f02", fd, "f02b") == 0 && unlinkat(fd, "f02b", 0) == 0, "renameat, unlinkat");
    CHECK(fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISDIR(st.st_mode), "fstatat AT_EMPTY_PATH");
    char cwd[PATH_MAX];
    CHECK(fchdir(fd) == 0 && getcwd(cwd, sizeof cwd) && !strcmp(cwd, at(nfs, "ls")), "fchdir into NFS, getcwd");
    closedir(d);
    f = open("f03", O_RDWR);
    CHECK(f >= 0 && write(f, "rel", 3) == 3, "relative open in an NFS current directory");
    close(f);
    CHECK(server_read("ls/f03", cwd, 3) == 3 && !memcmp(cwd, "rel", 3), "the relative file is on the server");
    CHECK(chdir("sub") == 0 && getcwd(cwd, sizeof cwd) && !strcmp(cwd, at(nfs, "ls/sub")), "chdir relative");
    CHECK(chdir("..") == 0 && getcwd(cwd, sizeof cwd) && !strcmp(cwd, at(nfs, "ls")), "chdir ..");
    char *rp = realpath("sub/../f03", NULL);
    CHECK(rp && !strcmp(rp, at(nfs, "ls/f03")), "realpath");
    free(rp);
    CHECK(chdir("/tmp") == 0 && getcwd(cwd, sizeof cwd) && !strcmp(cwd, "/tmp"), "back to a local directory");
    CHECK(chdir(at(nfs, "a")) < 0 && errno == ENOTDIR, "chdir to a file is ENOTDIR");
}

/* rsync's walk: from a local "/", one component at a time (O_PATH,
 * O_NOFOLLOW), down into NFS; and `..` from a local directory descriptor. */
static void test_walk_from_local_directory(void)
{
    struct stat want, st;
    CHECK(stat(at(nfs, "ls"), &want) == 0, "stat of the directory to walk to");
    int fd = open("/", O_PATH | O_DIRECTORY);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", nfs);
    for (char *c = strtok(path, "/"); c && fd >= 0; c = strtok(NULL, "/")) {
        int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
    }
    CHECK(fd >= 0 && fstatat(fd, "ls", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == want.st_ino,
          "openat from a local / down into NFS, component by component, then fstatat");
    if (fd >= 0)
        close(fd);
    int root = open("/", O_RDONLY | O_DIRECTORY);
    CHECK(root >= 0 && fstatat(root, at(nfs, "ls") + 1, &st, 0) == 0 && st.st_ino == want.st_ino,
          "fstatat of a relative path from a local / into NFS");
    close(root);
    int tmp = open("/tmp", O_RDONLY | O_DIRECTORY);
    snprintf(path, sizeof path, "..%s/ls", nfs);
    CHECK(tmp >= 0 && fstatat(tmp, path, &st, 0) == 0 && st.st_ino == want.st_ino,
          "fstatat climbing with .. from a local directory descriptor into NFS");
    CHECK(fstatat(tmp, "..", &st, 0) == 0 && S_ISDIR(st.st_mode), "fstatat .. of a local descriptor stays local");
    close(tmp);
}

static void test_stdio(void)
{
    FILE *f = fopen(at(nfs, "stdio.txt"), "w");
    CHECK(f != NULL, "fopen w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %d\n", i);
    CHECK(fileno(f) >= 0, "fileno of an NFS stream");
    struct stat st;
    CHECK(fflush(f) == 0 && fstat(fileno(f), &st) == 0 && st.st_size > 5000, "fstat(fileno(fp)) after fflush");
    CHECK(fclose(f) == 0, "fclose");
    f = fopen(at(nfs, "stdio.txt"), "r");
    char line[64];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n++;
    CHECK(n == 1000, "fgets reads every line back");
    CHECK(f && fseek(f, 5, SEEK_SET) == 0 && ftell(f) == 5 && fgets(line, sizeof line, f) && !strcmp(line, "0\n"),
          "fseek, ftell");
    fclose(f);
    f = fopen(at(nfs, "stdio.txt"), "a+");
    CHECK(f && fputs("tail\n", f) >= 0 && fclose(f) == 0, "fopen a+");
    int fd = open(at(nfs, "stdio.txt"), O_RDONLY);
    f = fdopen(fd, "r");
    CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "line 0\n"), "fdopen");
    fclose(f);
    CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF, "fclose closed the descriptor");
    f = fopen(at(nfs, "missing/x"), "r");
    CHECK(f == NULL && errno == ENOENT, "fopen of a missing file");
    CHECK(remove(at(nfs, "stdio.txt")) == 0, "remove");
    /* stdout redirected onto an NFS file */
    fflush(stdout);
    int saved = dup(1);
    FILE *o = freopen(at(nfs, "out.txt"), "w", stdout);
    printf("to nfs %d\n", 42);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK(o != NULL && server_read("out.txt", line, sizeof line) == 10 && !memcmp(line, "to nfs 42\n", 10),
          "freopen stdout onto an NFS file, printf");
}

static void test_locks_fork_exec(const char *self)
{
    int fd = open(at(nfs, "lock"), O_CREAT | O_RDWR, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    CHECK(fcntl(fd, F_SETLK, &fl) == 0, "F_SETLK write lock");
    write(fd, "parent", 6);
    pid_t pid = fork();
    if (pid == 0) {
        /* child: a new client, the same descriptor and offset */
        int code = 0;
        struct flock probe = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        if (fcntl(fd, F_GETLK, &probe) != 0 || probe.l_type != F_WRLCK || probe.l_pid != getppid())
            code |= 1;
        struct flock mine = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        if (fcntl(fd, F_SETLK, &mine) == 0 || (errno != EAGAIN && errno != EACCES))
            code |= 2;
        if (write(fd, "child", 5) != 5) /* at the shared offset: 6 */
            code |= 4;
        int fd2 = open(at(nfs, "lock"), O_RDWR);
        /* flock and fcntl locks are independent locally; on an NFSv4.1
         * mount flock is a whole-file lock on the server too, which
         * conflicts there with the parent's record lock (docs/book/src/run/served.md). */
        const char *v41_env = getenv("NFSCALLS_V41");
        int v41 = v41_env && *v41_env;
        int r = flock(fd2, LOCK_EX | LOCK_NB);
        if (v41 ? !(r != 0 && errno == EWOULDBLOCK) : r != 0)
            code |= 8;
        _exit(code);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child of fork: sees the parent's lock, new client, shared offset");
    CHECK(lseek(fd, 0, SEEK_CUR) == 11, "the child's write moved the shared offset");
    char buf[16];
    CHECK(pread(fd, buf, 11, 0) == 11 && !memcmp(buf, "parentchild", 11), "parent reads what the child wrote");
    fl.l_type = F_UNLCK;
    CHECK(fcntl(fd, F_SETLK, &fl) == 0, "unlock");
    CHECK(flock(fd, LOCK_EX | LOCK_NB) == 0 && flock(fd, LOCK_UN) == 0, "flock");
    /* exec: a preloaded program takes the descriptor over, offset kept */
    lseek(fd, 6, SEEK_SET);
    pid = fork();
    if (pid == 0) {
        char arg[16];
        snprintf(arg, sizeof arg, "%d", fd);
        execl(self, self, "--exec-child", arg, (char *)NULL);
        _exit(99);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exec'd program reads the inherited NFS descriptor at its offset");
    close(fd);
    /* exec into a shell in an NFS current directory */
    mkdir(at(nfs, "cwdexec"), 0755);
    pid = fork();
    if (pid == 0) {
        if (chdir(at(nfs, "cwdexec")) != 0)
            _exit(98);
        execl("/bin/sh", "sh", "-c", "pwd > here.txt", (char *)NULL);
        _exit(99);
    }
    waitpid(pid, &status, 0);
    char got[PATH_MAX];
    int n = server_read("cwdexec/here.txt", got, sizeof got);
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s\n", at(nfs, "cwdexec"));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == (int)strlen(want) && !memcmp(got, want, n),
          "a shell exec'd in an NFS current directory starts there");
}

/* pathconf: glibc's own asks statfs with its internal call. */
static void test_pathconf(void)
{
    CHECK(pathconf(nfs, _PC_NAME_MAX) == 255, "pathconf(_PC_NAME_MAX) of an NFS directory");
    errno = 0;
    CHECK(pathconf(at(nfs, "no-such"), _PC_NAME_MAX) == -1 && errno == ENOENT,
          "pathconf of a missing NFS path is ENOENT");
    errno = 0;
    CHECK(pathconf(nfs, 9999) == -1 && errno == EINVAL, "pathconf of an unknown name is EINVAL");
    int fd = open(at(nfs, "pc"), O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0 && fpathconf(fd, _PC_FILESIZEBITS) == 64 && fpathconf(fd, _PC_PATH_MAX) == 4096,
          "fpathconf of an NFS descriptor");
    errno = 0;
    CHECK(fpathconf(fd, _PC_SYMLINK_MAX) == -1 && errno == 0, "fpathconf of a limit there is none of: -1, errno kept");
    close(fd);
    unlink(at(nfs, "pc"));
}

static void test_refused(void)
{
    int fd = open(at(nfs, "a"), O_RDWR);
    void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p == MAP_FAILED && errno == ENODEV, "mmap MAP_SHARED of an NFS file is ENODEV");
    char buf[8];
    CHECK(syscall(SYS_pread64, fd, buf, 4, 0) == 4 && !memcmp(buf, "copy", 4), "syscall(SYS_pread64) is served");
    int fd2 = open(at(nfs, "tmp"), O_TMPFILE | O_RDWR, 0600);
    CHECK(fd2 < 0 && errno == EOPNOTSUPP, "O_TMPFILE is EOPNOTSUPP");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s", at(nfs, "tmpXXXXXX"));
    fd2 = mkstemp(tmpl);
    struct stat st;
    CHECK(fd2 >= 0 && strncmp(tmpl, nfs, strlen(nfs)) == 0 && stat(at(view, tmpl + strlen(nfs) + 1), &st) == 0,
          "mkstemp on NFS");
    close(fd2);
    unlink(tmpl);
    close(fd);
}

/*
 * MAP_PRIVATE mappings of NFS files: refused (ENODEV) by default; with
 * DIRECTNFS_PRELOAD_MMAP=copy, a private copy read at mmap.
 */
static void test_mapped(void)
{
    const char *mode = getenv("DIRECTNFS_PRELOAD_MMAP");
    int copies = mode && !strcmp(mode, "copy");
    long page = sysconf(_SC_PAGESIZE);
    size_t size = 2 * (size_t)page + 100; /* two pages and a part */
    char *want = malloc(size);
    for (size_t i = 0; i < size; i++)
        want[i] = (char)('a' + i * 7 % 26);
    int fd = open(at(nfs, "mapped"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, want, size) == (ssize_t)size, "write a file to map");

    char *m;
    if (!copies) {
        errno = 0;
        m = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
        CHECK(m == MAP_FAILED && errno == ENODEV, "mmap MAP_PRIVATE of an NFS file is ENODEV by default");
        close(fd);
        free(want);
        goto temp_files;
    }
    errno = 0;
    m = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m == MAP_FAILED && errno == ENODEV, "with copies: mmap MAP_SHARED is still ENODEV");
    m = mmap(NULL, 3 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(m != MAP_FAILED && !memcmp(m, want, size), "mmap MAP_PRIVATE of an NFS file has its bytes");
    int zero = m != MAP_FAILED;
    for (size_t i = size; zero && i < 3 * (size_t)page; i++)
        zero = m[i] == 0;
    CHECK(zero, "past the end of the file the mapping is zeros");
    CHECK(m != MAP_FAILED && munmap(m, 3 * page) == 0, "munmap of it");

    m = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, page);
    CHECK(m != MAP_FAILED && !memcmp(m, want + page, page), "mmap MAP_PRIVATE from a page offset");
    if (m != MAP_FAILED)
        munmap(m, page);

    m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
        memcpy(m, "PRIVATE", 7);
        munmap(m, page);
    }
    char got[16];
    CHECK(m != MAP_FAILED && server_read("mapped", got, 7) == 7 && !memcmp(got, want, 7),
          "writes to a MAP_PRIVATE mapping never reach the file");

    /* Where the mapping goes, as asked: over a mapping of ours. */
    char *fixed = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m = mmap(fixed, page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    CHECK(m == fixed && !memcmp(m, want, page), "mmap MAP_PRIVATE | MAP_FIXED at the address asked");
    munmap(fixed, page);

    errno = 0;
    CHECK(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 1) == MAP_FAILED && errno == EINVAL,
          "mmap of an NFS file at an offset not page-aligned is EINVAL");
    errno = 0;
    CHECK(mmap(NULL, 0, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED && errno == EINVAL,
          "mmap of length 0 is EINVAL");
    close(fd);
    fd = open(at(nfs, "mapped"), O_WRONLY);
    errno = 0;
    CHECK(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED && errno == EACCES,
          "mmap of an NFS file opened write-only is EACCES");
    close(fd);
    free(want);

temp_files:
    /* mkstemp64: what programs built with _FILE_OFFSET_BITS=64 call (git). */
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s", at(nfs, "t64XXXXXX"));
    fd = mkstemp64(tmpl);
    struct stat st;
    CHECK(fd >= 0 && stat(at(view, tmpl + strlen(nfs) + 1), &st) == 0, "mkstemp64 on NFS");
    close(fd);
    unlink(tmpl);
    snprintf(tmpl, sizeof tmpl, "%s", at(nfs, "t64XXXXXX.s"));
    fd = mkostemps64(tmpl, 2, O_CLOEXEC);
    CHECK(fd >= 0 && stat(at(view, tmpl + strlen(nfs) + 1), &st) == 0 &&
              (fcntl(fd, F_GETFD) & FD_CLOEXEC),
          "mkostemps64 on NFS, O_CLOEXEC kept");
    close(fd);
    unlink(tmpl);
}

static int exec_child(int fd)
{
    char buf[8];
    if (read(fd, buf, 5) != 5 || memcmp(buf, "child", 5) != 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size != 11)
        return 2;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--exec-child"))
        return exec_child(atoi(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "--mapped")) {
        /* Only the mappings (run with DIRECTNFS_PRELOAD_MMAP=copy). */
        nfs = argv[2];
        view = argv[3];
        test_mapped();
        printf("%d failed\n", failures);
        return failures ? 1 : 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: nfscalls NFS_DIR LOCAL_VIEW | --mapped NFS_DIR LOCAL_VIEW\n");
        return 2;
    }
    nfs = argv[1];
    view = argv[2];
    umask(022);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    test_open_flags();
    test_dup_and_offsets();
    test_vectors_and_sizes();
    test_metadata();
    test_dirs_and_cwd();
    test_walk_from_local_directory();
    test_stdio();
    test_locks_fork_exec(self);
    test_pathconf();
    test_refused();
    test_mapped();
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

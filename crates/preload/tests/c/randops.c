/*
 * randops: random sequences of file system calls for the differential
 * harness (run.sh group `random`). It runs once in a local directory
 * without the interception library and once in an NFS directory under
 * `dnfs run`; each line says what a call returned and its errno, and the
 * tree is listed at the end. The two outputs must be identical, except
 * lines tagged `[dev:ID]`: those calls meet a documented deviation
 * (docs/run-deviations.md, read by tests/differ.py), and the harness undoes
 * what they did, so the two trees meet again.
 *
 *   randops DIR SEED COUNT
 *
 * DIR must exist; as root it must be empty, as another user it is the
 * user's and holds `rootfile`, root's, mode 0644. The calls, their order
 * and their arguments come from SEED alone, never from a call's result, so
 * both runs make the same calls. Nothing printed depends on the uid, the
 * time or inode numbers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir;
static uint64_t rng_state;

/* xorshift64*: the same sequence for a seed on every machine. */
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

/* The names the calls use, relative to DIR: a small tree so that calls
 * meet each other's results, dot components, and the longest name. */
static const char *names[] = {
    "a", "b", "c", "d", "d/e", "d/f", "d/e/g", "d/e/h", "x",
    "a", "b", "d/e", "d/f", "d/e/g", "d/e/h", "d/e/i", "c/j",
    "rootfile", "d/./e", "d/e/../f", "missing/../a", "d/.", "d/e/..",
    "a/z", "LONG", "TOOLONG", "d/LONG",
};
#define NNAMES (sizeof names / sizeof names[0])

/* A name of the pool as a path below DIR (LONG: 255 bytes, the longest
 * name; TOOLONG: 256). */
static char *path_of(const char *name)
{
    static char bufs[4][4096];
    static int i;
    char *b = bufs[i++ % 4];
    size_t len = strlen(name);
    size_t n = len >= 7 && strcmp(name + len - 7, "TOOLONG") == 0 ? 256
               : len >= 4 && strcmp(name + len - 4, "LONG") == 0  ? 255
                                                                   : 0;
    if (n) {
        char longname[257];
        memset(longname, 'L', n);
        longname[n] = 0;
        snprintf(b, 4096, "%s/%.*s%s", dir, (int)(len - (n == 256 ? 7 : 4)), name, longname);
    } else {
        snprintf(b, 4096, "%s/%s", dir, name);
    }
    return b;
}

static const char *rname(void) { return names[pick(NNAMES)]; }

/* Open descriptors: a few slots of regular files, so that I/O, unlink and
 * rename meet open files. */
#define SLOTS 4
static int slot_fd[SLOTS] = {-1, -1, -1, -1};

static int step;

static void said(const char *what, long r, int err, const char *tag)
{
    if (r < 0)
        printf("%5d %-60s -1 %s%s\n", step, what, strerrorname_np(err), tag);
    else
        printf("%5d %-60s %ld%s\n", step, what, r, tag);
    fflush(stdout);
}

#define CALL(what, expr)                                                                           \
    do {                                                                                           \
        errno = 0;                                                                                 \
        long r_ = (long)(expr);                                                                    \
        said((what), r_, errno, "");                                                               \
    } while (0)

/* True for a directory the caller may read but not search (as another
 * user than root). Deviation readdir-no-search: on NFSv4.1 its listing
 * is empty. Both sides decide alike: stat's answers are compared too. */
static int read_only_dir(const char *p)
{
    struct stat st;
    return getuid() != 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode) && access(p, R_OK) == 0 &&
           access(p, X_OK) != 0;
}

/* FNV-1a of a buffer: a read's bytes in one number. */
static unsigned hash(const unsigned char *p, long n)
{
    unsigned h = 2166136261u;
    for (long i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static void fill(unsigned char *p, size_t n)
{
    uint64_t k = rnd();
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)('a' + (k + i * 7) % 26);
}

/* The inode of the regular file a path names (0 if none), to see when an
 * unlink or rename removes a name of an open file. */
static ino_t sole_file(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return st.st_ino;
}

/* After a call removed a name of the file `ino` (an unlink, or a rename
 * over it): the descriptors still open on it keep working (silly rename on
 * NFS, for this process's descriptors); they are used once and closed, so
 * that the trees and link counts match again (on NFS the hidden name
 * lasts until the close, and counts as a link). */
static void removed(ino_t ino, const char *what)
{
    char buf[128];
    if (!ino)
        return;
    for (int s = 0; s < SLOTS; s++) {
        struct stat st;
        if (slot_fd[s] < 0 || fstat(slot_fd[s], &st) != 0 || st.st_ino != ino)
            continue;
        snprintf(buf, sizeof buf, "  %s: slot %d fstat size", what, s);
        said(buf, (long)st.st_size, 0, "");
        snprintf(buf, sizeof buf, "  %s: slot %d pwrite", what, s);
        CALL(buf, pwrite(slot_fd[s], "zz", 2, 1));
        unsigned char data[64];
        errno = 0;
        long n = pread(slot_fd[s], data, sizeof data, 0);
        snprintf(buf, sizeof buf, "  %s: slot %d pread hash %08x", what, s, n > 0 ? hash(data, n) : 0);
        said(buf, n, errno, "");
        snprintf(buf, sizeof buf, "  %s: slot %d close", what, s);
        CALL(buf, close(slot_fd[s]));
        slot_fd[s] = -1;
    }
}

static int cmpname(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Deviation errno-order: a call naming two paths that failed (r < 0),
 * one of them with a name over 255 bytes or a `.` or `..` component,
 * or made by a user other than
 * root (permissions: Linux's EACCES comes first), may fail with another
 * errno on NFS. A call that fails on one side only gets the tag on that
 * side only, so that difference still fails the comparison. */
static int dotted(const char *n)
{
    size_t len = strlen(n);
    return strstr(n, "/../") || strstr(n, "/./") || (len >= 2 && strcmp(n + len - 2, "/.") == 0) ||
           (len >= 3 && strcmp(n + len - 3, "/..") == 0);
}

static const char *two_faults(const char *a, const char *b, long r)
{
    int odd = strstr(a, "TOOLONG") || strstr(b, "TOOLONG") || dotted(a) || dotted(b);
    return r < 0 && ((odd && strcmp(a, b) != 0) || getuid() != 0) ? " [dev:errno-order]" : "";
}

/* Deviation permissions: for a user other than root, a path below a
 * directory it may not search (access X_OK, asked of each directory on
 * the way from the top, stopping at the first refused: both sides agree
 * on that one) may be served on NFS from the client's handles of the
 * directories it looked up before the search permission went. */
static const char *unsearchable(const char *name)
{
    if (getuid() == 0)
        return "";
    char prefix[4096];
    for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
        snprintf(prefix, sizeof prefix, "%s/%.*s", dir, (int)(slash - name), name);
        if (access(prefix, X_OK) != 0)
            return " [dev:permissions]";
    }
    return "";
}

static const int modes[] = {0755, 0644, 0600, 0444, 0000, 0700, 0555, 0640};

static void one_step(void)
{
    char what[5000];
    const char *n1 = rname(), *n2 = rname();
    char *p1 = path_of(n1), *p2 = path_of(n2);
    int s = pick(SLOTS);
    int fd = slot_fd[s];
    unsigned char data[9000];
    struct stat st;
    long r;
    const char *tag;
    ino_t gone;

    switch (pick(36)) {
    case 34: {
        /* Deviation non-utf8-names: NFS names are UTF-8 here. The name is
         * removed again where it was made, so the trees stay the same. */
        static const char bad[] = "\xff\xfe-name";
        snprintf(what, sizeof what, "open a non-UTF-8 name O_CREAT");
        errno = 0;
        int f = open(path_of(bad), O_CREAT | O_WRONLY, 0644);
        said(what, f < 0 ? -1 : 0, errno, " [dev:non-utf8-names]");
        if (f >= 0) {
            close(f);
            unlink(path_of(bad));
        }
        break;
    }
    case 35:
        /* Deviation special-files: NFS holds no FIFOs made here. */
        snprintf(what, sizeof what, "mkfifo %s", n1);
        errno = 0;
        r = mkfifo(p1, 0644);
        said(what, r, errno, " [dev:special-files]");
        if (r == 0)
            unlink(p1);
        break;
    case 30: /* the directories the pool's names are in, made again */
        snprintf(what, sizeof what, "mkdir d, d/e, c");
        {
            long a = mkdir(path_of("d"), 0755), b = mkdir(path_of("d/e"), 0755), c = mkdir(path_of("c"), 0755);
            said(what, a * 4 + b * 2 + c, 0, "");
        }
        break;
    case 31:
    case 32:
    case 33:
    case 0:
    case 1:
    case 2: {
        static const struct { int flags; const char *name; } opens[] = {
            {O_RDONLY, "RDONLY"},
            {O_WRONLY | O_CREAT, "WRONLY|CREAT"},
            {O_RDWR | O_CREAT, "RDWR|CREAT"},
            {O_RDWR | O_CREAT | O_EXCL, "RDWR|CREAT|EXCL"},
            {O_WRONLY | O_TRUNC, "WRONLY|TRUNC"},
            {O_RDWR | O_APPEND | O_CREAT, "RDWR|APPEND|CREAT"},
            {O_RDWR, "RDWR"},
            {O_RDONLY | O_DIRECTORY, "RDONLY|DIRECTORY"},
        };
        int o = pick(8), m = modes[pick(8)];
        if (fd >= 0)
            close(fd);
        errno = 0;
        fd = open(p1, opens[o].flags, m);
        snprintf(what, sizeof what, "open %s %s %o -> slot %d", n1, opens[o].name, m, s);
        said(what, fd < 0 ? -1 : 0, errno, "");
        /* Slots hold regular files: a directory is closed at once. */
        if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
            close(fd);
            fd = -1;
        }
        slot_fd[s] = fd;
        break;
    }
    case 3:
        snprintf(what, sizeof what, "close slot %d", s);
        CALL(what, close(fd));
        slot_fd[s] = -1;
        break;
    case 4: {
        size_t n = 1 + pick(9000);
        errno = 0;
        r = read(fd, data, n);
        snprintf(what, sizeof what, "read slot %d %zu hash %08x", s, n, r > 0 ? hash(data, r) : 0);
        said(what, r, errno, "");
        break;
    }
    case 5:
    case 6: {
        size_t n = 1 + pick(9000);
        fill(data, n);
        snprintf(what, sizeof what, "write slot %d %zu", s, n);
        CALL(what, write(fd, data, n));
        break;
    }
    case 7: {
        size_t n = 1 + pick(5000);
        off_t off = pick(12000);
        fill(data, n);
        snprintf(what, sizeof what, "pwrite slot %d %zu at %lld", s, n, (long long)off);
        CALL(what, pwrite(fd, data, n, off));
        break;
    }
    case 8: {
        size_t n = 1 + pick(9000);
        off_t off = pick(12000);
        errno = 0;
        r = pread(fd, data, n, off);
        snprintf(what, sizeof what, "pread slot %d %zu at %lld hash %08x", s, n, (long long)off, r > 0 ? hash(data, r) : 0);
        said(what, r, errno, "");
        break;
    }
    case 9: {
        int whence = pick(3);
        off_t off = whence == SEEK_END ? -(off_t)pick(100) : (off_t)pick(10000);
        snprintf(what, sizeof what, "lseek slot %d %lld %d", s, (long long)off, whence);
        CALL(what, lseek(fd, off, whence));
        break;
    }
    case 10: {
        off_t len = pick(3) ? pick(10000) : 0;
        snprintf(what, sizeof what, "truncate %s %lld", n1, (long long)len);
        CALL(what, truncate(p1, len));
        break;
    }
    case 11: {
        off_t len = pick(10000);
        snprintf(what, sizeof what, "ftruncate slot %d %lld", s, (long long)len);
        CALL(what, ftruncate(fd, len));
        break;
    }
    case 12:
    case 13:
        gone = sole_file(p2);
        snprintf(what, sizeof what, "rename %s %s", n1, n2);
        errno = 0;
        r = rename(p1, p2);
        said(what, r, errno, two_faults(n1, n2, r));
        if (r == 0 && strcmp(p1, p2) != 0 && gone != sole_file(p2))
            removed(gone, "renamed over");
        break;
    case 14:
        snprintf(what, sizeof what, "link %s %s", n1, n2);
        errno = 0;
        r = link(p1, p2);
        said(what, r, errno, two_faults(n1, n2, r));
        break;
    case 15: {
        /* Link targets: a name of the pool, and now and then a long one
         * (Linux takes up to 4095 bytes). */
        static char target[5000];
        size_t tlen;
        switch (pick(6)) {
        case 0:
            tlen = 1000 + pick(3096);
            memset(target, 't', tlen);
            target[tlen] = 0;
            break;
        case 1:
            tlen = 4096;
            memset(target, 't', tlen);
            target[tlen] = 0;
            break;
        default:
            snprintf(target, sizeof target, "%s", rname());
            tlen = strlen(target);
        }
        snprintf(what, sizeof what, "symlink (%zu bytes) %s", tlen, n1);
        errno = 0;
        r = symlink(target, p1);
        /* Deviation errno-order: the target's length is checked after
         * the link's path. Both fail, so nothing needs undoing. */
        said(what, r, errno, tlen > 4095 ? " [dev:errno-order]" : "");
        break;
    }
    case 16: {
        char buf[5000];
        errno = 0;
        r = readlink(p1, buf, sizeof buf);
        snprintf(what, sizeof what, "readlink %s hash %08x", n1, r > 0 ? hash((unsigned char *)buf, r) : 0);
        said(what, r, errno, "");
        break;
    }
    case 17:
    case 18:
        gone = sole_file(p1);
        snprintf(what, sizeof what, "unlink %s", n1);
        errno = 0;
        r = unlink(p1);
        said(what, r, errno, "");
        if (r == 0)
            removed(gone, "unlinked");
        break;
    case 19:
        snprintf(what, sizeof what, "mkdir %s", n1);
        CALL(what, mkdir(p1, modes[pick(3)]));
        break;
    case 20:
        snprintf(what, sizeof what, "rmdir %s", n1);
        tag = unsearchable(n1);
        errno = 0;
        r = rmdir(p1);
        said(what, r, errno, tag);
        break;
    case 21: {
        /* readdir: the names, sorted, in one line. */
        DIR *d = opendir(p1);
        int err = errno;
        char list[4096] = "";
        size_t used = 0;
        if (d) {
            struct dirent *e;
            char *all[256];
            int k = 0;
            while ((e = readdir(d)) && k < 256)
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    all[k++] = strndup(e->d_name, 20);
            closedir(d);
            qsort(all, k, sizeof *all, cmpname);
            for (int i = 0; i < k; i++) {
                used += snprintf(list + used, sizeof list - used > 0 ? sizeof list - used : 0, " %s", all[i]);
                free(all[i]);
            }
        }
        if (read_only_dir(p1)) {
            snprintf(what, sizeof what, "readdir %s: (readable, not searchable)", n1);
            said(what, d ? 0 : -1, err, " [dev:readdir-no-search]");
            break;
        }
        snprintf(what, sizeof what, "readdir %s:%s", n1, list);
        said(what, d ? 0 : -1, err, "");
        break;
    }
    case 22:
    case 23: {
        int follow = pick(2);
        tag = unsearchable(n1);
        errno = 0;
        r = follow ? stat(p1, &st) : lstat(p1, &st);
        if (r == 0 && S_ISDIR(st.st_mode))
            snprintf(what, sizeof what, "%s %s: dir %o", follow ? "stat" : "lstat", n1, st.st_mode & 07777);
        else if (r == 0)
            snprintf(what, sizeof what, "%s %s: %s %o size %lld links %ld", follow ? "stat" : "lstat", n1,
                     S_ISREG(st.st_mode) ? "file" : S_ISLNK(st.st_mode) ? "link" : "other",
                     st.st_mode & 07777, (long long)st.st_size, (long)st.st_nlink);
        else
            snprintf(what, sizeof what, "%s %s", follow ? "stat" : "lstat", n1);
        said(what, r, errno, tag);
        break;
    }
    case 24:
        errno = 0;
        r = fstat(fd, &st);
        snprintf(what, sizeof what, "fstat slot %d: size %lld mode %o links %ld", s,
                 r == 0 ? (long long)st.st_size : 0LL, r == 0 ? st.st_mode & 07777 : 0,
                 r == 0 ? (long)st.st_nlink : 0L);
        said(what, r, errno, "");
        break;
    case 25: {
        int m = modes[pick(8)];
        snprintf(what, sizeof what, "chmod %s %o", n1, m);
        CALL(what, chmod(p1, m));
        break;
    }
    case 26: {
        struct timespec t[2] = {{1000000000 + pick(100000), 0}, {1000000000 + pick(100000), 0}};
        errno = 0;
        r = utimensat(AT_FDCWD, p1, t, 0);
        int err = errno;
        long mtime = r == 0 && stat(p1, &st) == 0 ? (long)st.st_mtim.tv_sec : 0;
        snprintf(what, sizeof what, "utimensat %s: mtime %ld", n1, mtime);
        said(what, r, err, "");
        break;
    }
    case 27:
        snprintf(what, sizeof what, "fsync slot %d", s);
        CALL(what, fsync(fd));
        break;
    case 28: {
        static const int am[] = {F_OK, R_OK, W_OK, X_OK, R_OK | W_OK};
        int m = am[pick(5)];
        snprintf(what, sizeof what, "access %s %d", n1, m);
        CALL(what, access(p1, m));
        break;
    }
    case 29:
        snprintf(what, sizeof what, "chdir %s then stat ../%s", n1, n2);
        {
            int here = open(".", O_RDONLY | O_DIRECTORY);
            errno = 0;
            r = chdir(p1);
            int err = errno;
            if (r == 0) {
                char rel[4096];
                snprintf(rel, sizeof rel, "../%s", n2);
                errno = 0;
                r = stat(rel, &st) == 0 ? (long)(st.st_mode & 0170000) : -1;
                err = errno;
            }
            said(what, r, err, "");
            if (fchdir(here) != 0)
                printf("fchdir back: %s\n", strerrorname_np(errno));
            close(here);
        }
        break;
    }
}

static int cmpstr(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The tree below DIR: one line per entry, its type and mode, a file's size
 * and content hash, a link's target length. */
static void tree(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    struct dirent **list;
    if (read_only_dir(path)) {
        printf("tree %.40s: readable, not searchable [dev:readdir-no-search]\n", rel);
        return;
    }
    int n = scandir(path, &list, NULL, cmpstr);
    if (n < 0) {
        printf("tree %.20s: %s\n", rel, strerrorname_np(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char sub[4096], full[8200];
            snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name);
            snprintf(full, sizeof full, "%s/%s", dir, sub);
            struct stat st;
            if (lstat(full, &st) != 0) {
                printf("tree %.40s: lstat %s\n", sub, strerrorname_np(errno));
            } else if (S_ISDIR(st.st_mode)) {
                printf("tree %.40s/ %o\n", sub, st.st_mode & 07777);
                tree(sub);
            } else {
                unsigned h = 0;
                int fd = S_ISREG(st.st_mode) ? open(full, O_RDONLY) : -1;
                if (fd >= 0) {
                    static unsigned char buf[65536];
                    long r = read(fd, buf, sizeof buf);
                    h = r > 0 ? hash(buf, r) : 0;
                    close(fd);
                }
                printf("tree %.40s %s %o %lld %ld %08x\n", sub, S_ISLNK(st.st_mode) ? "link" : "file",
                       st.st_mode & 07777, (long long)st.st_size, (long)st.st_nlink, h);
            }
        }
        free(list[i]);
    }
    free(list);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: randops DIR SEED COUNT\n");
        return 2;
    }
    dir = argv[1];
    rng_state = strtoull(argv[2], NULL, 0) * 2654435761u + 1;
    int count = atoi(argv[3]);
    umask(022);
    if (mkdir(path_of("d"), 0755) || mkdir(path_of("d/e"), 0755) || mkdir(path_of("c"), 0755))
        printf("set-up: mkdir: %s\n", strerrorname_np(errno));
    for (step = 0; step < count; step++)
        one_step();
    for (int s = 0; s < SLOTS; s++)
        if (slot_fd[s] >= 0)
            close(slot_fd[s]);
    printf("tree:\n");
    tree("");
    return 0;
}

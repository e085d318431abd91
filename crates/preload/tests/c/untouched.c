/*
 * untouched: local files, directories, pipes, socket pairs and a TCP
 * connection on loopback, each exercised and described on stdout in a form
 * that does not change from run to run (no pids, inode numbers or times).
 * Run with and without the interception library: the outputs must be
 * identical, and nothing may appear on stderr.
 *
 *   untouched LOCAL_SCRATCH_DIR
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char *at(const char *dir, const char *name)
{
    static char bufs[4][4096];
    static int i;
    char *b = bufs[i++ % 4];
    snprintf(b, 4096, "%s/%s", dir, name);
    return b;
}

#define SAY(...) (printf(__VA_ARGS__), fflush(stdout))

static int cmpstr(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    char buf[256];

    /* files */
    int fd = open(at(dir, "f"), O_CREAT | O_RDWR | O_TRUNC, 0640);
    ssize_t r = write(fd, "local data", 10);
    SAY("open %d write %zd\n", fd >= 0, r);
    long off = (long)lseek(fd, 2, SEEK_SET);
    r = pread(fd, buf, 4, 6);
    SAY("lseek %ld pread %zd\n", off, r);
    struct iovec v[2] = {{"ab", 2}, {"cd", 2}};
    SAY("writev %zd size ", writev(fd, v, 2));
    struct stat st;
    fstat(fd, &st);
    SAY("%ld mode %o\n", (long)st.st_size, st.st_mode & 0777);
    int flags = fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND);
    SAY("F_GETFL %x dup %d\n", flags, dup2(fd, 50) == 50);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 0};
    int lk = fcntl(fd, F_SETLK, &fl);
    SAY("lock %d flock %d\n", lk, flock(50, LOCK_SH | LOCK_NB));
    void *m = mmap(NULL, 10, PROT_READ, MAP_SHARED, fd, 0);
    SAY("mmap %d first %.4s\n", m != MAP_FAILED, m != MAP_FAILED ? (char *)m : "");
    ftruncate(fd, 3);
    fsync(fd);
    close(50);
    close(fd);
    int rc = stat(at(dir, "f"), &st);
    SAY("stat %d size %ld\n", rc, (long)st.st_size);
    rc = rename(at(dir, "f"), at(dir, "g"));
    SAY("rename %d access %d\n", rc, access(at(dir, "g"), R_OK));
    rc = symlink("g", at(dir, "l"));
    SAY("symlink %d readlink %zd\n", rc, readlink(at(dir, "l"), buf, sizeof buf));
    rc = mkdir(at(dir, "d"), 0755);
    SAY("mkdir %d chdir %d\n", rc, chdir(dir));
    FILE *f = fopen("d/s.txt", "w");
    fprintf(f, "stdio %d\n", 7);
    fclose(f);
    f = fopen("d/s.txt", "r");
    SAY("fgets %s", fgets(buf, sizeof buf, f));
    fclose(f);
    struct dirent **list;
    int n = scandir(".", &list, NULL, cmpstr);
    SAY("scandir %d:", n);
    for (int i = 0; i < n; i++) {
        SAY(" %s", list[i]->d_name);
        free(list[i]);
    }
    free(list);
    SAY("\n");
    char cwd[4096];
    SAY("getcwd matches %d\n", getcwd(cwd, sizeof cwd) && strcmp(cwd, dir) == 0);
    int u1 = unlink("g"), u2 = unlink("l"), u3 = unlink("d/s.txt");
    SAY("unlink %d %d %d rmdir %d\n", u1, u2, u3, rmdir("d"));
    rc = open("nope", O_RDONLY);
    SAY("missing %d errno %d\n", rc, errno);

    /* a pipe */
    int p[2];
    pipe(p);
    r = write(p[1], "through a pipe", 14);
    SAY("pipe write %zd ", r);
    SAY("read %zd\n", read(p[0], buf, sizeof buf));
    close(p[0]);
    close(p[1]);

    /* a socket pair, across fork */
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid_t pid = fork();
    if (pid == 0) {
        char c[32];
        ssize_t k = read(sv[1], c, sizeof c);
        write(sv[1], c, k);
        _exit(0);
    }
    write(sv[0], "ping", 4);
    SAY("socketpair echo %zd ", read(sv[0], buf, sizeof buf));
    int status;
    waitpid(pid, &status, 0);
    SAY("child %d\n", WEXITSTATUS(status));

    /* TCP on loopback */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(ls, (struct sockaddr *)&a, sizeof a);
    listen(ls, 1);
    getsockname(ls, (struct sockaddr *)&a, &al);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    SAY("connect %d ", connect(c, (struct sockaddr *)&a, sizeof a));
    int s = accept(ls, NULL, NULL);
    r = send(c, "tcp", 3, 0);
    SAY("send %zd recv %zd\n", r, recv(s, buf, sizeof buf, 0));
    close(s);
    close(c);
    close(ls);
    return 0;
}

/*
 * textshare.c — does a child of fork start with the interception
 * library's code mapped (crates/preload/src/text.rs)? The parent makes one
 * call on PATH (its client exists), forks, and the child, before any call
 * of its own, reads /proc/self/smaps: it prints the size and the resident
 * size, in KiB, of the library's executable mapping. Without text.rs a
 * child starts with none of it resident and faults it in page by page.
 *
 *   textshare PATH     prints "SIZE RSS"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: textshare PATH\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        return 1;
    }
    if (c == 0) {
        FILE *f = fopen("/proc/self/smaps", "r");
        if (!f)
            _exit(1);
        char line[512];
        int in_text = 0;
        long size = -1, rss = -1;
        while (fgets(line, sizeof line, f)) {
            if (strchr(line, '-') && strstr(line, " r-xp ")) {
                in_text = strstr(line, "libdirectnfs_preload") != NULL;
            } else if (in_text && sscanf(line, "Size: %ld kB", &size) == 1) {
            } else if (in_text && sscanf(line, "Rss: %ld kB", &rss) == 1) {
                in_text = 0;
            }
        }
        fclose(f);
        printf("%ld %ld\n", size, rss);
        fflush(stdout);
        _exit(size > 0 && rss >= 0 ? 0 : 1);
    }
    int status;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "textshare: the child found no mapping of the library\n");
        return 1;
    }
    return 0;
}

/*
 * zero-at-fork.c — preloaded into a program run under valgrind
 * --tool=callgrind, it zeroes the counters just before every fork, so each
 * child's profile (--callgrind-out-file=...%p) counts its own life only:
 * fork handlers, its work, its exit. Outside valgrind it does nothing.
 * Built by scripts/bench/pgcalls.sh (DNFS_PGCALLS_CALLGRIND=1).
 */
#include <pthread.h>
#include <valgrind/callgrind.h>

static void zero(void)
{
    CALLGRIND_ZERO_STATS;
}

__attribute__((constructor)) static void init(void)
{
    pthread_atfork(zero, NULL, NULL);
}

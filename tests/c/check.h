/* The C tests' checks: each fails the test function it is in (return 1),
 * naming the file, the line, the expression and the library's last error. */
#ifndef DNFS_TEST_CHECK_H
#define DNFS_TEST_CHECK_H

#include <stdio.h>

#include <directnfs.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "    %s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, \
                    __LINE__, #cond, dnfs_last_error());                             \
            return 1;                                                                \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                      \
    do {                                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                                 \
        if (a_ != b_) {                                                                     \
            fprintf(stderr, "    %s:%d: %s == %lld, expected %s == %lld; last error: %s\n", \
                    __FILE__, __LINE__, #a, a_, #b, b_, dnfs_last_error());                 \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

#endif

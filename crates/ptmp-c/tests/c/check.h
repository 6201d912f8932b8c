/* The checks of the C test programs: EXPECT(cond) counts a failure in
 * `failures` and says on stderr which line failed and the library's last
 * error; each program prints "N failures" at its end. */
#ifndef PTMP_TEST_CHECK_H
#define PTMP_TEST_CHECK_H

#include <stdio.h>
#include "ptmp.h"

static int failures = 0;

#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "line %d: check failed: %s (last error: %s)\n", \
                    __LINE__, #cond, ptmp_last_error());                    \
            failures++;                                                     \
        }                                                                   \
    } while (0)

#endif

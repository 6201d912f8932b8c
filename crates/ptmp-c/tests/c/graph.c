/* Runs a graph from C, as `ptmp graph run` does: argv[1] the graph
 * configuration, argv[2] a run directory, argv[3] the ptmp program that
 * runs each part. Then the failures: a part program that does not exist,
 * a configuration that is not a graph, a check that describes the graph.
 * Prints "0 failures" and exits 0 only if every check held. */
#include <stdio.h>
#include <string.h>
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

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: graph CONFIG RUN_DIR PTMP_PROGRAM\n");
        return 2;
    }
    char* text = NULL;
    EXPECT(ptmp_graph_check(argv[1], &text) == PTMP_OK && text != NULL);
    if (text) printf("%s\n", text);
    ptmp_string_free(text);

    /* The sources end by themselves; the ttl bounds the rest. */
    int rc = ptmp_graph_run(argv[1], NULL, argv[2], argv[3], 10000);
    printf("run: %d\n", rc);
    EXPECT(rc == PTMP_OK);

    rc = ptmp_graph_run(argv[1], NULL, argv[2], "/nonexistent/ptmp", 10000);
    printf("no part program: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_RUN && strstr(ptmp_last_error(), "start a part") != NULL);

    rc = ptmp_graph_run("{\"nodes\": 3}", NULL, argv[2], argv[3], 1000);
    printf("not a graph: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && strstr(ptmp_last_error(), "nodes") != NULL);

    EXPECT(ptmp_graph_run(NULL, NULL, NULL, NULL, 0) == PTMP_ERR_NULL);
    EXPECT(ptmp_graph_check("/nonexistent/graph.jsonnet", NULL) == PTMP_ERR_IO);
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

/* Runs a graph from C, as `ptmp graph run` does: argv[1] the graph
 * configuration, argv[2] a run directory, argv[3] the ptmp program that
 * runs each part. Then the same graph started in the background with no
 * time limit and stopped from a signal handler, and the failures: a part
 * program that does not exist, a configuration that is not a graph, a
 * host the graph does not have, a ttl too long, a check that describes
 * the graph.
 * Prints "0 failures" and exits 0 only if every check held. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ptmp.h"
#include "check.h"


/* A graph that does not end by itself for a day: a source of a hundred
 * million sets at a thousand a second into a sink. */
static const char* endless =
    "{\"name\": \"c-endless\", \"nodes\": ["
    "{\"name\": \"src\", \"type\": \"source\", "
    "\"data\": {\"count\": 100000000, \"rate\": 1000, \"tps\": 1}},"
    "{\"name\": \"sink\", \"type\": \"sink\", \"data\": {}}],"
    "\"edges\": [{\"from\": \"src.out\", \"to\": \"sink.in\", \"pattern\": \"pushpull\"}]}";

/* The graph a signal stops: ptmp_run_stop is async-signal-safe. */
static ptmp_run* volatile running = NULL;

static void on_alarm(int sig) {
    (void)sig;
    if (running) ptmp_run_stop(running);
}

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

    /* No time limit: the graph would run on; a signal handler stops it,
     * and it ends well (every part stopped cleanly). */
    ptmp_run* run = NULL;
    EXPECT(ptmp_graph_check(endless, NULL) == PTMP_OK);
    rc = ptmp_graph_start(endless, NULL, argv[2], argv[3], -1, &run);
    EXPECT(rc == PTMP_OK && run != NULL);
    if (run) {
        EXPECT(ptmp_run_wait(run, 300) == PTMP_TIMEOUT); /* still running */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        running = run;
        alarm(1);
        rc = ptmp_run_wait(run, 60000);
        printf("started, stopped by a signal: %d\n", rc);
        EXPECT(rc == PTMP_OK);
        running = NULL;
        EXPECT(ptmp_run_wait(run, 0) == PTMP_OK); /* and so it stays */
        ptmp_run_free(run);
    }

    /* Stopped from this thread right away, then freed. It ends; a part
     * stopped while it is still starting may not have set up its own
     * stopping yet and die of the signal, which the run then reports. */
    run = NULL;
    EXPECT(ptmp_graph_start(endless, NULL, argv[2], argv[3], -1, &run) == PTMP_OK);
    EXPECT(ptmp_run_stop(run) == PTMP_OK);
    rc = ptmp_run_wait(run, 60000);
    printf("started, stopped at once: %d %s\n", rc, rc ? ptmp_last_error() : "");
    EXPECT(rc == PTMP_OK ||
           (rc == PTMP_ERR_RUN && strstr(ptmp_last_error(), "interrupted") != NULL));
    ptmp_run_free(run);

    /* A bad configuration is refused before anything starts. */
    run = (ptmp_run*)&rc; /* overwritten with NULL on failure */
    rc = ptmp_graph_start("{\"nodes\": 3}", NULL, argv[2], argv[3], -1, &run);
    printf("start, not a graph: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && run == NULL);
    EXPECT(ptmp_graph_start(argv[1], NULL, argv[2], argv[3], -1, NULL) == PTMP_ERR_NULL);

    /* A part that cannot start is the wait's error. */
    run = NULL;
    EXPECT(ptmp_graph_start(argv[1], NULL, argv[2], "/nonexistent/ptmp", 10000, &run) ==
           PTMP_OK);
    rc = ptmp_run_wait(run, 60000);
    printf("start, no part program: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_RUN && strstr(ptmp_last_error(), "start a part") != NULL);
    ptmp_run_free(run);

    rc = ptmp_graph_run(argv[1], NULL, argv[2], "/nonexistent/ptmp", 10000);
    printf("no part program: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_RUN && strstr(ptmp_last_error(), "start a part") != NULL);

    rc = ptmp_graph_run("{\"nodes\": 3}", NULL, argv[2], argv[3], 1000);
    printf("not a graph: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && strstr(ptmp_last_error(), "nodes") != NULL);

    /* A host the graph does not have, and a ttl past any configuration's,
     * are mistakes in the arguments: configuration errors naming them. */
    rc = ptmp_graph_run(endless, "nohost", argv[2], argv[3], 1000);
    printf("no such host: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && strstr(ptmp_last_error(), "nohost") != NULL);
    rc = ptmp_graph_run(endless, NULL, argv[2], argv[3], INT64_MAX);
    printf("huge ttl: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && strstr(ptmp_last_error(), "ttl_ms") != NULL);
    run = NULL;
    rc = ptmp_run_start("{\"proxies\": []}", INT64_MAX, &run);
    printf("run, huge ttl: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && run == NULL &&
           strstr(ptmp_last_error(), "ttl_ms 9223372036854775807: at most") != NULL);

    EXPECT(ptmp_graph_run(NULL, NULL, NULL, NULL, 0) == PTMP_ERR_NULL);
    EXPECT(ptmp_graph_check("/nonexistent/graph.jsonnet", NULL) == PTMP_ERR_IO);
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

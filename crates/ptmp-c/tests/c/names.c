/* Presence from C: sockets whose configs use names (name://NODE/PORT).
 *
 *   names errors DIR             the refused arguments, a second call, a
 *                                name that never appears (DIR: scratch)
 *   names recv GROUP KEY N DETID NTPS
 *                                connects to name://src/out, receives N
 *                                sets and checks them
 *   names send GROUP KEY N       binds name://src/out and sends N sets
 *   names follow GROUP KEY N1 N2 connects to name://src/out and receives
 *                                N1 sets, then N2 more from a sender of
 *                                the same name that came up elsewhere
 *   names keysend GROUP N        binds name://ksrc/out with presence
 *                                turned on by the sender config's own
 *                                "discovery" key, sends N sets
 *   names keyrecv GROUP N        connects to name://ksrc/out, presence
 *                                turned on by the receiver config's
 *                                "discovery" key (after the key refused
 *                                when wrong), receives N sets
 *   names run GROUP N            runs agents (ptmp_run_start) whose config
 *                                turns presence on with its "discovery"
 *                                key: a source binding name://runsrc/out,
 *                                a sink connecting to it, N sets
 *
 * KEY is a secret file, or "-" for none. Each mode prints what it checked
 * and "0 failures" when all held. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptmp.h"
#include "check.h"


static int has(const char* needle) { return strstr(ptmp_last_error(), needle) != NULL; }

static int errors(const char* dir) {
    char path[4096];
    int rc;

    /* Before presence is on, a name is refused naming it. */
    ptmp_receiver* rx = NULL;
    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"connect\":[\"name://ghost/out\"]}}", &rx);
    printf("name without presence: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc < 0);
    EXPECT(rx == NULL);
    EXPECT(has("name://ghost/out"));
    EXPECT(ptmp_announced_names() == 0);
    EXPECT(ptmp_withdraw_names() == PTMP_OK); /* nothing to withdraw */

    /* A wrong "discovery" key in a run's config is refused naming it. */
    ptmp_run* run = NULL;
    rc = ptmp_run_start("{\"discovery\": {\"grup\": \"x\"}, \"proxies\": []}", 1000, &run);
    printf("run, bad discovery key: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && run == NULL && has("discovery.grup"));

    /* Refused arguments; none of them turns presence on. */
    rc = ptmp_use_discovery(NULL, NULL, 1000);
    printf("NULL group: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_NULL && has("group"));
    rc = ptmp_use_discovery("", NULL, 1000);
    printf("empty group: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("group is empty"));
    rc = ptmp_use_discovery("ab\xff", NULL, 1000);
    printf("group not UTF-8: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("UTF-8"));
    rc = ptmp_use_discovery("no spaces", NULL, 1000);
    printf("bad group: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("group"));
    rc = ptmp_use_discovery("cnames", NULL, 0);
    printf("zero timeout: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("timeout_ms 0"));
    rc = ptmp_use_discovery("cnames", NULL, 86400001u);
    printf("timeout over a day: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("timeout_ms 86400001"));
    snprintf(path, sizeof path, "%s/no-such-key", dir);
    rc = ptmp_use_discovery("cnames", path, 1000);
    printf("missing secret file: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && has("no-such-key"));
    snprintf(path, sizeof path, "%s/blank-key", dir);
    FILE* f = fopen(path, "w");
    EXPECT(f != NULL);
    if (f) {
        fputs(" \n", f);
        fclose(f);
    }
    /* A secret file must be private to its user: as made with the
     * default umask (0644) it is refused, naming the mode and the fix. */
    EXPECT(chmod(path, 0644) == 0);
    rc = ptmp_use_discovery("cnames", path, 1000);
    printf("secret file others may read: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && has("blank-key") && has("mode 0644") && has("chmod 600"));
    EXPECT(chmod(path, 0600) == 0);
    rc = ptmp_use_discovery("cnames", path, 1000);
    printf("blank secret file: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("blank-key") && has("empty"));
    /* Read with a bound: a device is refused unread, a file over 64 KiB
     * refused after 64 KiB. */
    rc = ptmp_use_discovery("cnames", "/dev/zero", 1000);
    printf("secret file /dev/zero: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && has("/dev/zero") && has("character device"));
    snprintf(path, sizeof path, "%s/huge-key", dir);
    f = fopen(path, "w");
    EXPECT(f != NULL);
    if (f) {
        for (int i = 0; i < 70 * 1024; i++) fputc('k', f);
        fclose(f);
    }
    EXPECT(chmod(path, 0600) == 0);
    rc = ptmp_use_discovery("cnames", path, 1000);
    printf("secret file of 70 KiB: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && has("huge-key") && has("larger than 64 KiB"));
    rc = ptmp_use_discovery("cnames", "", 1000);
    printf("empty secret path: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && has("secret_file"));

    /* On, once. */
    rc = ptmp_use_discovery("cnames", NULL, 1000);
    printf("on: %d %s\n", rc, rc ? ptmp_last_error() : "");
    EXPECT(rc == PTMP_OK);
    rc = ptmp_use_discovery("cnames", NULL, 1000);
    printf("second call: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_STATE && has("already on"));
    /* A run asking for another group than the one on is refused. */
    rc = ptmp_run_start("{\"discovery\": {\"group\": \"other\"}, \"proxies\": []}", 1000, &run);
    printf("run, other group: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && run == NULL && has("already on") && has("\"other\""));

    /* A name nobody announces fails after the timeout, naming it. */
    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"connect\":[\"name://ghost/out\"]}}", &rx);
    printf("ghost: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_TRANSPORT);
    EXPECT(rx == NULL);
    EXPECT(has("name://ghost/out") && has("within 1s"));
    /* A bad name is still a configuration error. */
    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"connect\":[\"name://a b/out\"]}}", &rx);
    printf("bad name: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc < 0 && rx == NULL);
    EXPECT(ptmp_withdraw_names() == PTMP_OK);
    EXPECT(ptmp_announced_names() == 0);
    return 0;
}

static const char* key_arg(const char* k) { return strcmp(k, "-") == 0 ? NULL : k; }

/* Receives n1 sets counted from 0, then n2 more counted from 0 again (a
 * second sender of the same name, come up elsewhere: the receiver follows
 * it), each with `detid` and `ntps` primitives. */
static int recv_named(const char* group, const char* key, unsigned n1, unsigned n2, unsigned detid,
                      unsigned ntps) {
    int rc = ptmp_use_discovery(group, key_arg(key), 30000);
    if (rc) {
        fprintf(stderr, "ptmp_use_discovery: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_receiver* rx = NULL;
    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"connect\":[\"name://src/out\"]}}", &rx);
    if (rc) {
        fprintf(stderr, "ptmp_receiver_new: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    unsigned got = 0;
    for (unsigned i = 0; i < n1 + n2; i++) {
        rc = ptmp_receiver_recv(rx, &ts, 30000);
        if (rc != PTMP_OK) {
            fprintf(stderr, "set %u: %d %s\n", i, rc, ptmp_last_error());
            failures++;
            break;
        }
        EXPECT(ts.count == (i < n1 ? i : i - n1));
        EXPECT(ts.detid == detid);
        EXPECT(ts.ntps == ntps);
        got++;
    }
    printf("received %u\n", got);
    ptmp_tpset_clear(&ts);
    ptmp_receiver_free(rx);
    EXPECT(ptmp_withdraw_names() == PTMP_OK);
    return 0;
}

static int send_named(const char* group, const char* key, unsigned n) {
    int rc = ptmp_use_discovery(group, key_arg(key), 30000);
    if (rc) {
        fprintf(stderr, "ptmp_use_discovery: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_sender* tx = NULL;
    rc = ptmp_sender_new("{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"name://src/out\"]}}", &tx);
    if (rc) {
        fprintf(stderr, "ptmp_sender_new: %s\n", ptmp_last_error());
        return 1;
    }
    const char* ep = ptmp_sender_endpoint(tx, 0);
    printf("bound %s, %zu name(s) announced\n", ep ? ep : "(none)", ptmp_announced_names());
    EXPECT(ptmp_announced_names() == 1);
    ptmp_trigprim tps[2];
    memset(tps, 0, sizeof tps);
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    ts.tps = tps;
    ts.ntps = 2;
    ts.detid = 5;
    for (unsigned i = 0; i < n; i++) {
        ts.count = i;
        ts.tstart = 1000u * i;
        tps[0].channel = i;
        tps[1].channel = i + 1;
        rc = ptmp_sender_send(tx, &ts);
        if (rc) {
            fprintf(stderr, "send %u: %s\n", i, ptmp_last_error());
            failures++;
            break;
        }
    }
    /* Everything out before the name goes. */
    ptmp_delivery d;
    memset(&d, 0, sizeof d);
    rc = ptmp_sender_finish(tx, &d);
    EXPECT(rc == PTMP_OK);
    EXPECT(d.sent == n);
    EXPECT(d.undelivered == 0);
    EXPECT(ptmp_withdraw_names() == PTMP_OK);
    EXPECT(ptmp_announced_names() == 0);
    printf("sent %u\n", n);
    return 0;
}

/* A sender whose config turns presence on with its "discovery" key, no
 * ptmp_use_discovery: binds name://ksrc/out and sends n sets. */
static int keyed_send(const char* group, unsigned n) {
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"discovery\": {\"group\": \"%s\", \"timeout\": 30},"
             " \"socket\": {\"type\": \"PUSH\", \"bind\": [\"name://ksrc/out\"]}}",
             group);
    ptmp_sender* tx = NULL;
    int rc = ptmp_sender_new(cfg, &tx);
    if (rc) {
        fprintf(stderr, "ptmp_sender_new: %d %s\n", rc, ptmp_last_error());
        return 1;
    }
    printf("keyed sender: %zu name(s) announced\n", ptmp_announced_names());
    EXPECT(ptmp_announced_names() == 1);
    ptmp_trigprim tp;
    memset(&tp, 0, sizeof tp);
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    ts.tps = &tp;
    ts.ntps = 1;
    ts.detid = 11;
    for (unsigned i = 0; i < n && rc == PTMP_OK; i++) {
        ts.count = i;
        tp.channel = i;
        rc = ptmp_sender_send(tx, &ts);
        EXPECT(rc == PTMP_OK);
    }
    ptmp_delivery d;
    memset(&d, 0, sizeof d);
    EXPECT(ptmp_sender_finish(tx, &d) == PTMP_OK);
    EXPECT(d.sent == n && d.undelivered == 0);
    EXPECT(ptmp_withdraw_names() == PTMP_OK);
    printf("keyed sender sent %u\n", (unsigned)d.sent);
    return 0;
}

/* A receiver whose config turns presence on with its "discovery" key:
 * first the key refused when wrong (presence stays off), then
 * name://ksrc/out received from, then another group refused. */
static int keyed_recv(const char* group, unsigned n) {
    char cfg[512];
    ptmp_receiver* rx = NULL;
    int rc = ptmp_receiver_new("{\"discovery\": {\"grup\": \"x\"}, \"socket\": {\"type\": \"PULL\","
                               " \"connect\": [\"name://ksrc/out\"]}}",
                               &rx);
    printf("keyed, bad key: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && rx == NULL && has("json_config: discovery.grup: unknown key"));
    rc = ptmp_receiver_new("{\"discovery\": {\"announce\": true}, \"socket\": {\"type\": \"PULL\","
                           " \"connect\": [\"name://ksrc/out\"]}}",
                           &rx);
    printf("keyed, announce: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && rx == NULL && has("discovery.announce"));
    snprintf(cfg, sizeof cfg,
             "{\"discovery\": {\"group\": \"%s\", \"timeout\": 30},"
             " \"socket\": {\"type\": \"PULL\", \"connect\": [\"name://ksrc/out\"]}}",
             group);
    rc = ptmp_receiver_new(cfg, &rx);
    if (rc) {
        fprintf(stderr, "ptmp_receiver_new: %d %s\n", rc, ptmp_last_error());
        return 1;
    }
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    unsigned got = 0;
    for (unsigned i = 0; i < n; i++) {
        rc = ptmp_receiver_recv(rx, &ts, 30000);
        if (rc != PTMP_OK) {
            fprintf(stderr, "set %u: %d %s\n", i, rc, ptmp_last_error());
            failures++;
            break;
        }
        EXPECT(ts.count == i && ts.detid == 11 && ts.ntps == 1);
        got++;
    }
    printf("keyed receiver received %u\n", got);
    ptmp_tpset_clear(&ts);
    ptmp_receiver_free(rx);
    /* Presence is on now, in this group: a socket asking for another is
     * refused naming both. */
    ptmp_sender* tx = NULL;
    rc = ptmp_sender_new("{\"discovery\": {\"group\": \"other\"},"
                         " \"socket\": {\"type\": \"PUSH\", \"bind\": [\"name://k2/out\"]}}",
                         &tx);
    printf("keyed, other group: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && tx == NULL && has("already on") && has("\"other\""));
    return 0;
}

static int run_named(const char* group, unsigned n) {
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"discovery\": {\"group\": \"%s\", \"timeout\": 20}, \"proxies\": ["
             "{\"name\": \"runsrc\", \"type\": \"source\", \"data\": {\"count\": %u, \"rate\": 2000,"
             " \"output\": {\"socket\": {\"type\": \"PUSH\", \"bind\": [\"name://runsrc/out\"]}}}},"
             "{\"name\": \"runsnk\", \"type\": \"sink\", \"data\": {\"count\": %u,"
             " \"input\": {\"socket\": {\"type\": \"PULL\", \"connect\": [\"name://runsrc/out\"]}}}}]}",
             group, n, n);
    ptmp_run* run = NULL;
    int rc = ptmp_run_start(cfg, 60000, &run);
    if (rc) {
        fprintf(stderr, "ptmp_run_start: %d %s\n", rc, ptmp_last_error());
        return 1;
    }
    rc = ptmp_run_wait(run, 60000);
    printf("run by name: %d %s\n", rc, rc ? ptmp_last_error() : "ok");
    EXPECT(rc == PTMP_OK);
    ptmp_run_free(run);
    /* The agents ended: the name they announced went with them. */
    printf("names after the run: %zu\n", ptmp_announced_names());
    EXPECT(ptmp_announced_names() == 0);
    return 0;
}

int main(int argc, char** argv) {
    int rc = 2;
    if (argc == 3 && strcmp(argv[1], "errors") == 0)
        rc = errors(argv[2]);
    else if (argc == 7 && strcmp(argv[1], "recv") == 0)
        rc = recv_named(argv[2], argv[3], (unsigned)atoi(argv[4]), 0, (unsigned)atoi(argv[5]),
                        (unsigned)atoi(argv[6]));
    else if (argc == 6 && strcmp(argv[1], "follow") == 0)
        rc = recv_named(argv[2], argv[3], (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]), 5, 2);
    else if (argc == 5 && strcmp(argv[1], "send") == 0)
        rc = send_named(argv[2], argv[3], (unsigned)atoi(argv[4]));
    else if (argc == 4 && strcmp(argv[1], "keysend") == 0)
        rc = keyed_send(argv[2], (unsigned)atoi(argv[3]));
    else if (argc == 4 && strcmp(argv[1], "keyrecv") == 0)
        rc = keyed_recv(argv[2], (unsigned)atoi(argv[3]));
    else if (argc == 4 && strcmp(argv[1], "run") == 0)
        rc = run_named(argv[2], (unsigned)atoi(argv[3]));
    else
        fprintf(stderr, "usage: names errors DIR | recv GROUP KEY N DETID NTPS | send GROUP KEY N | keysend GROUP N | keyrecv GROUP N | run GROUP N\n");
    if (rc) return rc;
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}

/* The sender's options beyond a plain send: a send that gives up after a
 * timeout (ZeroMQ with no peer, a full shared-memory ring), the delivery
 * report of ptmp_sender_finish (all delivered, none delivered, freed
 * either way), the count sent, the wait for PUB subscribers, a shm
 * receiver's lost count, and the argument errors of each. argv[1] is a
 * free tcp port nobody listens on.
 * Prints "0 failures" and exits 0 only if every check held. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ptmp.h"
#include "check.h"


static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ptmp_trigprim tps[3] = {
    {.channel = 1, .tstart = 10, .tspan = 2, .adcsum = 30, .adcpeak = 9, .flags = 0},
    {.channel = 2, .tstart = 11, .tspan = 2, .adcsum = 31, .adcpeak = 9, .flags = 0},
    {.channel = 3, .tstart = 12, .tspan = 2, .adcsum = 32, .adcpeak = 9, .flags = 0},
};

static ptmp_tpset make(uint32_t count) {
    ptmp_tpset t;
    memset(&t, 0, sizeof t);
    t.count = count;
    t.detid = 4;
    t.tstart = 10;
    t.tspan = 5;
    t.chanbeg = 1;
    t.chanend = 3;
    t.totaladc = 93;
    t.tps = tps;
    t.ntps = 3;
    return t;
}

/* A PUSH bound with no peer has nowhere to put a message: the bounded
 * send gives up, sends nothing, and finishing reports nothing lost. */
static void no_peer(void) {
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                           &tx) == PTMP_OK);
    if (!tx) return;
    ptmp_tpset t = make(0);
    double t0 = now_s();
    int rc = ptmp_sender_send_within(tx, &t, 100);
    double waited = now_s() - t0;
    printf("no peer: send_within %d after %.3f s\n", rc, waited);
    EXPECT(rc == PTMP_TIMEOUT);
    EXPECT(waited >= 0.05); /* it did wait, roughly as asked */
    EXPECT(ptmp_sender_send_within(tx, &t, 0) == PTMP_TIMEOUT);
    EXPECT(ptmp_sender_sent(tx) == 0);
    EXPECT(ptmp_sender_send_within(tx, &t, -1) == PTMP_ERR_ARG);
    EXPECT(strstr(ptmp_last_error(), "timeout_ms = -1") != NULL);
    ptmp_delivery d = {.sent = 99, .undelivered_kind = 99, .undelivered = 99};
    EXPECT(ptmp_sender_finish(tx, &d) == PTMP_OK);
    EXPECT(d.sent == 0 && d.undelivered_kind == PTMP_UNDELIVERED_NONE && d.undelivered == 0);
}

/* A PUSH connecting to a port nobody listens on queues what it is given;
 * at the end none of it has left, and the report says exactly how many. */
static void never_connected(const char* port) {
    char cfg[256];
    snprintf(cfg, sizeof cfg,
             "{\"socket\":{\"type\":\"PUSH\",\"connect\":[\"tcp://127.0.0.1:%s\"],\"linger_ms\":200}}",
             port);
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new(cfg, &tx) == PTMP_OK);
    if (!tx) return;
    for (uint32_t i = 0; i < 3; i++) {
        ptmp_tpset t = make(i);
        EXPECT(ptmp_sender_send(tx, &t) == PTMP_OK);
    }
    EXPECT(ptmp_sender_sent(tx) == 3);
    ptmp_delivery d = {0};
    EXPECT(ptmp_sender_finish(tx, &d) == PTMP_OK);
    printf("never connected: sent %llu undelivered kind %d count %llu\n",
           (unsigned long long)d.sent, d.undelivered_kind, (unsigned long long)d.undelivered);
    EXPECT(d.sent == 3 && d.undelivered_kind == PTMP_UNDELIVERED_EXACTLY && d.undelivered == 3);
}

/* A receiver takes everything: nothing undelivered, and a NULL report is
 * allowed. */
static void delivered(void) {
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                             &rx) == PTMP_OK);
    if (!rx) return;
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PUSH\",\"connect\":[\"%s\"]}}",
             ptmp_receiver_endpoint(rx, 0));
    for (int round = 0; round < 2; round++) {
        ptmp_sender* tx = NULL;
        EXPECT(ptmp_sender_new(cfg, &tx) == PTMP_OK);
        if (!tx) break;
        for (uint32_t i = 0; i < 5; i++) {
            ptmp_tpset t = make(i);
            EXPECT(ptmp_sender_send_within(tx, &t, 5000) == PTMP_OK);
        }
        ptmp_delivery d = {0};
        EXPECT(ptmp_sender_finish(tx, round == 0 ? &d : NULL) == PTMP_OK);
        if (round == 0)
            EXPECT(d.sent == 5 && d.undelivered_kind == PTMP_UNDELIVERED_NONE);
        ptmp_tpset got = {0};
        int n = 0;
        while (ptmp_receiver_recv(rx, &got, 500) == PTMP_OK) {
            EXPECT(got.count == (uint32_t)n && got.ntps == 3 && got.tps[2].adcsum == 32);
            n++;
        }
        ptmp_tpset_clear(&got);
        printf("delivered: round %d received %d\n", round, n);
        EXPECT(n == 5);
    }
    ptmp_receiver_free(rx);
}

/* A lossless shared-memory channel of two slots with a reader that does
 * not read: the third message finds the ring full and the bounded send
 * gives up; asked to wait past the channel's block timeout, it fails as a
 * blocking send would; once the reader takes one, it goes. */
static void full_ring(void) {
    char name[64], rcfg[256], scfg[256];
    snprintf(name, sizeof name, "c-options-%d", (int)getpid());
    snprintf(scfg, sizeof scfg,
             "{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"shm://%s\"],\"shm_slots\":2,"
             "\"shm_block_timeout_ms\":200}}",
             name);
    snprintf(rcfg, sizeof rcfg,
             "{\"socket\":{\"type\":\"PULL\",\"connect\":[\"shm://%s\"],\"shm_slots\":2}}", name);
    ptmp_sender* tx = NULL;
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_sender_new(scfg, &tx) == PTMP_OK);
    EXPECT(ptmp_receiver_new(rcfg, &rx) == PTMP_OK);
    if (tx && rx) {
        for (uint32_t i = 0; i < 2; i++) {
            ptmp_tpset t = make(i);
            EXPECT(ptmp_sender_send_within(tx, &t, 1000) == PTMP_OK);
        }
        ptmp_tpset t = make(2);
        int rc = ptmp_sender_send_within(tx, &t, 50);
        printf("full ring: send_within %d\n", rc);
        EXPECT(rc == PTMP_TIMEOUT);
        rc = ptmp_sender_send_within(tx, &t, 60000);
        printf("full ring past the block timeout: %d %s\n", rc, ptmp_last_error());
        EXPECT(rc == PTMP_ERR_TRANSPORT);
        EXPECT(ptmp_sender_sent(tx) == 2);
        ptmp_tpset got = {0};
        EXPECT(ptmp_receiver_recv(rx, &got, 1000) == PTMP_OK && got.count == 0);
        EXPECT(ptmp_receiver_recv(rx, &got, 1000) == PTMP_OK && got.count == 1);
        EXPECT(ptmp_sender_send_within(tx, &t, 1000) == PTMP_OK);
        EXPECT(ptmp_receiver_recv(rx, &got, 1000) == PTMP_OK && got.count == 2);
        EXPECT(ptmp_sender_sent(tx) == 3);
        /* Lossless: a PULL reader loses nothing. */
        EXPECT(ptmp_receiver_lost(rx) == 0);
        ptmp_tpset_clear(&got);
        ptmp_delivery d = {0};
        EXPECT(ptmp_sender_finish(tx, &d) == PTMP_OK);
        EXPECT(d.sent == 3 && d.undelivered_kind == PTMP_UNDELIVERED_NONE);
        tx = NULL;
    }
    ptmp_sender_free(tx);
    ptmp_receiver_free(rx);
    ptmp_shm_remove(name);
}

/* A PUB over shared memory overwrites what a slow reader has not read;
 * the reader counts what it lost. */
static void lost_count(void) {
    char name[64], rcfg[256], scfg[256];
    snprintf(name, sizeof name, "c-lost-%d", (int)getpid());
    snprintf(scfg, sizeof scfg,
             "{\"socket\":{\"type\":\"PUB\",\"bind\":[\"shm://%s\"],\"shm_slots\":4}}", name);
    snprintf(rcfg, sizeof rcfg,
             "{\"socket\":{\"type\":\"SUB\",\"connect\":[\"shm://%s\"],\"shm_slots\":4}}", name);
    ptmp_sender* tx = NULL;
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_sender_new(scfg, &tx) == PTMP_OK);
    EXPECT(ptmp_receiver_new(rcfg, &rx) == PTMP_OK);
    if (tx && rx) {
        for (uint32_t i = 0; i < 20; i++) {
            ptmp_tpset t = make(i);
            EXPECT(ptmp_sender_send(tx, &t) == PTMP_OK);
        }
        ptmp_tpset got = {0};
        int n = 0;
        while (ptmp_receiver_recv(rx, &got, 100) == PTMP_OK) n++;
        ptmp_tpset_clear(&got);
        printf("lost: received %d lost %llu\n", n, (unsigned long long)ptmp_receiver_lost(rx));
        EXPECT(n > 0 && n < 20);
        EXPECT(ptmp_receiver_lost(rx) == (uint64_t)(20 - n));
    }
    ptmp_sender_free(tx);
    ptmp_receiver_free(rx);
    ptmp_shm_remove(name);
}

/* Waiting for subscribers: one comes; none comes in time; not a PUB. */
static void subscribers(void) {
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PUB\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                           &tx) == PTMP_OK);
    if (!tx) return;
    size_t seen = 77;
    EXPECT(ptmp_sender_wait_subscribers(tx, 1, 50, &seen) == PTMP_TIMEOUT);
    EXPECT(seen == 77);
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"SUB\",\"connect\":[\"%s\"]}}",
             ptmp_sender_endpoint(tx, 0));
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_receiver_new(cfg, &rx) == PTMP_OK);
    EXPECT(ptmp_sender_wait_subscribers(tx, 1, 10000, &seen) == PTMP_OK);
    printf("subscribers: %zu\n", seen);
    EXPECT(seen == 1);
    /* Once subscribed, the first message reaches the subscriber. */
    ptmp_tpset t = make(7);
    EXPECT(ptmp_sender_send(tx, &t) == PTMP_OK);
    ptmp_tpset got = {0};
    EXPECT(ptmp_receiver_recv(rx, &got, 5000) == PTMP_OK && got.count == 7);
    EXPECT(ptmp_receiver_lost(rx) == 0);
    ptmp_tpset_clear(&got);
    ptmp_receiver_free(rx);
    ptmp_sender_free(tx);

    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                           &tx) == PTMP_OK);
    EXPECT(ptmp_sender_wait_subscribers(tx, 1, 10, NULL) == PTMP_ERR_CONFIG);
    EXPECT(strstr(ptmp_last_error(), "subscribers") != NULL);
    ptmp_sender_free(tx);
}

static void null_arguments(void) {
    ptmp_tpset t = make(0);
    ptmp_delivery d;
    EXPECT(ptmp_sender_send_within(NULL, &t, 10) == PTMP_ERR_NULL);
    EXPECT(ptmp_sender_finish(NULL, &d) == PTMP_ERR_NULL);
    EXPECT(ptmp_sender_wait_subscribers(NULL, 1, 10, NULL) == PTMP_ERR_NULL);
    EXPECT(ptmp_sender_sent(NULL) == 0);
    EXPECT(ptmp_receiver_lost(NULL) == 0);
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                           &tx) == PTMP_OK);
    EXPECT(ptmp_sender_send_within(tx, NULL, 10) == PTMP_ERR_NULL);
    t.tps = NULL;
    EXPECT(ptmp_sender_send_within(tx, &t, 10) == PTMP_ERR_ARG);
    ptmp_sender_free(tx);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: options FREE_TCP_PORT\n");
        return 2;
    }
    no_peer();
    never_connected(argv[1]);
    delivered();
    full_ring();
    lost_count();
    subscribers();
    null_arguments();
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

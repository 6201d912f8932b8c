/* Throughput of the C API, two processes, the same cases as `ptmp bench
 * throughput` so the two can be compared in one run (crates/ptmp-c/tests/
 * bench.rs drives both and prints the table; docs/benchmarks.md).
 *
 *   bench recv CONFIG N   receive up to N TPSets (stop after 3 s idle),
 *                         print "ready" (and the bound endpoint) first,
 *                         then one line: received, gaps, seconds, msg/s
 *   bench send CONFIG N NTPS   send N TPSets of NTPS primitives flat out
 *
 * The sets are those of the Rust benchmark: detid 1, tspan 25, primitive c
 * on channel c with tstart c % 25, tspan 1, adcsum 100 + c, adcpeak 10.
 * The rate is from the first message received to the last, as there. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ptmp.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int receive(const char* cfg, unsigned long n) {
    ptmp_receiver* rx = NULL;
    if (ptmp_receiver_new(cfg, &rx) != PTMP_OK) {
        fprintf(stderr, "receiver: %s\n", ptmp_last_error());
        return 1;
    }
    const char* ep = ptmp_receiver_endpoint(rx, 0);
    printf("ready %s\n", ep ? ep : "-");
    fflush(stdout);
    ptmp_tpset t;
    memset(&t, 0, sizeof t);
    unsigned long got = 0, gaps = 0;
    uint32_t next = 0;
    double first = 0, last = 0;
    while (got < n) {
        /* Long for the first message (the sender is starting), then the
         * Rust receiver's 3 s idle limit. */
        int rc = ptmp_receiver_recv(rx, &t, got == 0 ? 30000 : 3000);
        if (rc == PTMP_TIMEOUT) break;
        if (rc != PTMP_OK) {
            fprintf(stderr, "recv: %s\n", ptmp_last_error());
            return 1;
        }
        last = now_s();
        if (got == 0) first = last;
        if (t.count != next) gaps++;
        next = t.count + 1;
        got++;
    }
    double secs = last - first;
    printf("received %lu gaps %lu seconds %.6f rate %.0f\n", got, gaps, secs,
           got > 1 && secs > 0 ? (double)(got - 1) / secs : 0.0);
    ptmp_tpset_clear(&t);
    ptmp_receiver_free(rx);
    return got == 0;
}

static int send(const char* cfg, unsigned long n, unsigned ntps) {
    ptmp_sender* tx = NULL;
    if (ptmp_sender_new(cfg, &tx) != PTMP_OK) {
        fprintf(stderr, "sender: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_trigprim* tps = calloc(ntps ? ntps : 1, sizeof *tps);
    uint32_t total = 0;
    for (unsigned c = 0; c < ntps; c++) {
        tps[c].channel = c;
        tps[c].tstart = c % 25;
        tps[c].tspan = 1;
        tps[c].adcsum = 100 + c;
        tps[c].adcpeak = 10;
        total += 100 + c;
    }
    ptmp_tpset t;
    memset(&t, 0, sizeof t);
    t.detid = 1;
    t.tspan = 25;
    t.chanend = ntps ? ntps - 1 : 0;
    t.totaladc = total;
    t.tps = tps;
    t.ntps = ntps;
    for (unsigned long i = 0; i < n; i++) {
        t.count = (uint32_t)i;
        t.created = now_us();
        if (ptmp_sender_send(tx, &t) != PTMP_OK) {
            fprintf(stderr, "send %lu: %s\n", i, ptmp_last_error());
            return 1;
        }
    }
    ptmp_sender_free(tx); /* waits (bounded by linger) for delivery */
    free(tps);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "recv") == 0)
        return receive(argv[2], strtoul(argv[3], NULL, 10));
    if (argc == 5 && strcmp(argv[1], "send") == 0)
        return send(argv[2], strtoul(argv[3], NULL, 10), (unsigned)strtoul(argv[4], NULL, 10));
    fprintf(stderr, "usage: bench recv CONFIG N | bench send CONFIG N NTPS\n");
    return 2;
}

/* Receives N TPSets from the PUSH socket at argv[1], reusing one struct,
 * checks every field against what the Rust sender made, then expects a
 * timeout. Exits 0 only if all of it held. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptmp.h"

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "set %d: check failed: %s\n", i, #cond);  \
            return 1;                                                 \
        }                                                             \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: receiver ENDPOINT N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PULL\",\"connect\":[\"%s\"]}}", argv[1]);
    ptmp_receiver* rx = NULL;
    if (ptmp_receiver_new(cfg, &rx) != PTMP_OK) {
        fprintf(stderr, "receiver_new: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    for (int i = 0; i < n; i++) {
        int rc = ptmp_receiver_recv(rx, &ts, 10000);
        if (rc != PTMP_OK) {
            fprintf(stderr, "recv %d: rc %d: %s\n", i, rc, ptmp_last_error());
            return 1;
        }
        size_t ntps = (size_t)(i % 5) * 3;
        CHECK(ts.count == (uint32_t)i);
        CHECK(ts.detid == 3);
        CHECK(ts.created == 1700000000000000LL + i);
        CHECK(ts.tstart == 9000000000ULL + 50ULL * i);
        CHECK(ts.tspan == 50);
        CHECK(ts.chanbeg == 10);
        CHECK(ts.chanend == 10 + (uint32_t)ntps);
        CHECK(ts.totaladc == 12345U + i);
        CHECK(ts.ntps == ntps);
        CHECK(ts.tps_capacity >= ntps);
        CHECK(ntps == 0 || ts.tps != NULL);
        for (size_t k = 0; k < ntps; k++) {
            const ptmp_trigprim* p = &ts.tps[k];
            CHECK(p->channel == 10 + k);
            CHECK(p->tstart == 9000000000ULL + 50ULL * i + k);
            CHECK(p->tspan == 4);
            CHECK(p->adcsum == 100 * k);
            CHECK(p->adcpeak == 0xffffffffU - k);
            CHECK(p->flags == (uint32_t)i);
        }
        printf("got %" PRIu32 " with %zu\n", ts.count, ts.ntps);
    }
    int i = n;
    int rc = ptmp_receiver_recv(rx, &ts, 200);
    CHECK(rc == PTMP_TIMEOUT);
    CHECK(ts.count == (uint32_t)(n - 1)); /* untouched by the timeout */
    printf("timeout %d\n", rc);
    ptmp_tpset_clear(&ts);
    CHECK(ts.tps == NULL && ts.ntps == 0 && ts.tps_capacity == 0);
    ptmp_receiver_free(rx);
    return 0;
}

/* Sends N TPSets to the PULL socket at argv[1]; the Rust side checks each
 * field. Set i has i+1 primitives and every field derives from i. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptmp.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sender ENDPOINT N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PUSH\",\"connect\":[\"%s\"]}}", argv[1]);
    ptmp_sender* tx = NULL;
    if (ptmp_sender_new(cfg, &tx) != PTMP_OK) {
        fprintf(stderr, "sender_new: %s\n", ptmp_last_error());
        return 1;
    }
    for (int i = 0; i < n; i++) {
        ptmp_trigprim tps[16];
        int ntps = i % 16 + 1;
        for (int k = 0; k < ntps; k++) {
            tps[k].channel = 100 * i + k;
            tps[k].tstart = 5000000000ULL + 1000ULL * i + k;
            tps[k].tspan = 10 + k;
            tps[k].adcsum = 1000 + k;
            tps[k].adcpeak = 200 + k;
            tps[k].flags = k % 3;
        }
        ptmp_tpset ts;
        memset(&ts, 0, sizeof ts);
        ts.count = i;
        ts.detid = 7 + i;
        ts.created = -1 - (int64_t)i;
        ts.tstart = 5000000000ULL + 1000ULL * i;
        ts.tspan = 50;
        ts.chanbeg = 100 * i;
        ts.chanend = 100 * i + ntps - 1;
        ts.totaladc = 4000000000U - i;
        ts.tps = tps;
        ts.ntps = ntps;
        if (ptmp_sender_send(tx, &ts) != PTMP_OK) {
            fprintf(stderr, "send %d: %s\n", i, ptmp_last_error());
            return 1;
        }
    }
    ptmp_sender_free(tx);
    return 0;
}

/* A minimal ptmp C program: one PAIR sends a TPSet to another in-process
 * and the receiver prints it. docs/c-api.md shows this file. */
#include <stdio.h>
#include "ptmp.h"

int main(void) {
    ptmp_receiver* rx = NULL;
    ptmp_sender* tx = NULL;
    if (ptmp_receiver_new("{\"socket\":{\"type\":\"PAIR\",\"bind\":[\"inproc://demo\"]}}", &rx) != PTMP_OK ||
        ptmp_sender_new("{\"socket\":{\"type\":\"PAIR\",\"connect\":[\"inproc://demo\"]}}", &tx) != PTMP_OK) {
        fprintf(stderr, "open: %s\n", ptmp_last_error());
        return 1;
    }
    ptmp_trigprim tps[2] = {
        {.channel = 42, .tstart = 1000, .tspan = 5, .adcsum = 300, .adcpeak = 90, .flags = 0},
        {.channel = 43, .tstart = 1002, .tspan = 3, .adcsum = 120, .adcpeak = 60, .flags = 0},
    };
    ptmp_tpset out = {0};
    ptmp_tpset set = {.count = 1, .detid = 2, .tstart = 1000, .tspan = 25,
                      .chanbeg = 42, .chanend = 43, .totaladc = 420, .tps = tps, .ntps = 2};
    if (ptmp_sender_send(tx, &set) != PTMP_OK) {
        fprintf(stderr, "send: %s\n", ptmp_last_error());
        return 1;
    }
    int rc = ptmp_receiver_recv(rx, &out, 1000); /* PTMP_TIMEOUT if nothing came */
    if (rc != PTMP_OK) {
        fprintf(stderr, "recv: %d %s\n", rc, ptmp_last_error());
        return 1;
    }
    printf("received count=%u ntps=%zu first channel=%u\n",
           (unsigned)out.count, out.ntps, (unsigned)out.tps[0].channel);
    ptmp_tpset_clear(&out); /* frees out.tps, which the library allocated */
    ptmp_sender_free(tx);
    ptmp_receiver_free(rx);
    return 0;
}

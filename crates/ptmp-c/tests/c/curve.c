/* CURVE from C: the `curve` object in the socket JSON secures a tcp edge.
 * A listed client's sets arrive; a client whose key is not listed is told
 * so (PTMP_ERR_REFUSED, naming why) when it sends, when it finishes
 * (ptmp_delivery.refused) and when it receives, even from a wait with no
 * end. argv[1] is a directory holding server.key, server.key_secret,
 * alice.key, alice.key_secret and mallory.key_secret; the server admits
 * alice only.
 * Prints "0 failures" and exits 0 only if every check held. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptmp.h"
#include "check.h"


static const char* dir;
static char json[4096];

/* A socket's JSON: TYPE attached to ADDR, as the server (admitting alice)
 * or as WHO's client of the server. */
static const char* server(const char* type, const char* attach, const char* addr) {
    snprintf(json, sizeof json,
             "{\"socket\":{\"type\":\"%s\",\"%s\":[\"%s\"],\"linger_ms\":1000,"
             "\"curve\":{\"secret_key_file\":\"%s/server.key_secret\","
             "\"allow\":[\"%s/alice.key\"]}}}",
             type, attach, addr, dir, dir);
    return json;
}

static const char* client(const char* type, const char* addr, const char* who) {
    snprintf(json, sizeof json,
             "{\"socket\":{\"type\":\"%s\",\"connect\":[\"%s\"],\"linger_ms\":1000,"
             "\"curve\":{\"secret_key_file\":\"%s/%s.key_secret\","
             "\"server_key\":\"%s/server.key\"}}}",
             type, addr, dir, who, dir);
    return json;
}

static ptmp_tpset make(uint32_t count) {
    ptmp_tpset t;
    memset(&t, 0, sizeof t);
    t.count = count;
    t.detid = 7;
    return t;
}

/* alice's sets arrive at the server; mallory's sends are refused. */
static void senders(void) {
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_receiver_new(server("PULL", "bind", "tcp://127.0.0.1:*"), &rx) == PTMP_OK);
    if (!rx) return;
    char addr[256];
    const char* bound = ptmp_receiver_endpoint(rx, 0);
    EXPECT(bound != NULL);
    snprintf(addr, sizeof addr, "%s", bound ? bound : "");

    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new(client("PUSH", addr, "alice"), &tx) == PTMP_OK);
    for (uint32_t i = 0; tx && i < 10; i++) {
        ptmp_tpset t = make(i);
        EXPECT(ptmp_sender_send(tx, &t) == PTMP_OK);
    }
    ptmp_tpset got;
    memset(&got, 0, sizeof got);
    for (uint32_t i = 0; i < 10; i++) {
        EXPECT(ptmp_receiver_recv(rx, &got, 10000) == PTMP_OK);
        EXPECT(got.count == i && got.detid == 7);
    }
    ptmp_delivery d;
    memset(&d, 0xff, sizeof d);
    EXPECT(ptmp_sender_finish(tx, &d) == PTMP_OK);
    EXPECT(d.sent == 10 && d.refused == 0);

    /* mallory: the bounded send says refused once the handshake failed,
     * however many sends the queue took before. */
    tx = NULL;
    EXPECT(ptmp_sender_new(client("PUSH", addr, "mallory"), &tx) == PTMP_OK);
    int rc = PTMP_OK;
    for (uint32_t i = 0; tx && i < 100000 && (rc == PTMP_OK || rc == PTMP_TIMEOUT); i++) {
        ptmp_tpset t = make(i);
        rc = ptmp_sender_send_within(tx, &t, 100);
    }
    EXPECT(rc == PTMP_ERR_REFUSED);
    EXPECT(strstr(ptmp_last_error(), "refused this client's key") != NULL);
    memset(&d, 0, sizeof d);
    EXPECT(ptmp_sender_finish(tx, &d) == PTMP_ERR_REFUSED);
    EXPECT(d.refused == 1 && d.sent > 0);
    EXPECT(strstr(ptmp_last_error(), addr) != NULL);
    /* Nothing of mallory's arrived. */
    EXPECT(ptmp_receiver_recv(rx, &got, 300) == PTMP_TIMEOUT);
    ptmp_tpset_clear(&got);
    ptmp_receiver_free(rx);
}

/* A receiving client that is not listed: even a wait with no end stops. */
static void receivers(void) {
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_sender_new(server("PUSH", "bind", "tcp://127.0.0.1:*"), &tx) == PTMP_OK);
    if (!tx) return;
    char addr[256];
    const char* bound = ptmp_sender_endpoint(tx, 0);
    EXPECT(bound != NULL);
    snprintf(addr, sizeof addr, "%s", bound ? bound : "");
    ptmp_receiver* rx = NULL;
    EXPECT(ptmp_receiver_new(client("PULL", addr, "mallory"), &rx) == PTMP_OK);
    ptmp_tpset got;
    memset(&got, 0, sizeof got);
    if (rx) {
        EXPECT(ptmp_receiver_recv(rx, &got, -1) == PTMP_ERR_REFUSED);
        EXPECT(strstr(ptmp_last_error(), "refused this client's key") != NULL);
        size_t n = 0;
        EXPECT(ptmp_receiver_recv_frames(rx, -1, &n) == PTMP_ERR_REFUSED);
    }
    ptmp_tpset_clear(&got);
    ptmp_receiver_free(rx);
    ptmp_sender_free(tx);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: curve KEYDIR\n");
        return 2;
    }
    dir = argv[1];
    senders();
    receivers();
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}

/* The error paths that are defined behaviour: each prints what it checked
 * and the message, and the program exits 0 only if all held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptmp.h"
#include "check.h"


int main(void) {
    EXPECT(strcmp(ptmp_last_error(), "") == 0);

    /* A bad configuration names the key and the value. */
    ptmp_sender* tx = (ptmp_sender*)&failures; /* must be reset to NULL */
    int rc = ptmp_sender_new("{\"socket\":{\"type\":\"PUSHY\",\"bind\":[\"tcp://127.0.0.1:*\"]}}", &tx);
    printf("bad type: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG);
    EXPECT(tx == NULL);
    EXPECT(strstr(ptmp_last_error(), "socket.type") != NULL);
    EXPECT(strstr(ptmp_last_error(), "PUSHY") != NULL);

    ptmp_receiver* rx = NULL;
    rc = ptmp_receiver_new("{\"socket\": [", &rx);
    printf("not json: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG);
    EXPECT(rx == NULL);

    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"bind\":[\"tcp://127.0.0.1:*\"],\"hwm\":\"lots\"}}", &rx);
    printf("bad hwm: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG);
    EXPECT(strstr(ptmp_last_error(), "hwm") != NULL);

    /* Not UTF-8. */
    rc = ptmp_sender_new("{\"socket\":\xff}", &tx);
    printf("not utf-8: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG);

    /* NULL arguments and handles. */
    EXPECT(ptmp_sender_new(NULL, &tx) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "json_config") != NULL);
    EXPECT(ptmp_sender_new("{}", NULL) == PTMP_ERR_NULL);
    EXPECT(ptmp_receiver_new(NULL, &rx) == PTMP_ERR_NULL);
    EXPECT(ptmp_receiver_new("{}", NULL) == PTMP_ERR_NULL);
    ptmp_tpset ts;
    memset(&ts, 0, sizeof ts);
    EXPECT(ptmp_sender_send(NULL, &ts) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "sender") != NULL);
    EXPECT(ptmp_sender_send_bytes(NULL, (const uint8_t*)"", 0) == PTMP_ERR_NULL);
    EXPECT(ptmp_receiver_recv(NULL, &ts, 0) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "receiver") != NULL);
    ptmp_sender_free(NULL);
    ptmp_receiver_free(NULL);
    ptmp_tpset_clear(NULL);

    /* A real pair for the argument checks on live handles. */
    rc = ptmp_receiver_new("{\"socket\":{\"type\":\"PULL\",\"bind\":[\"tcp://127.0.0.1:*\"]}}", &rx);
    EXPECT(rc == PTMP_OK && rx != NULL);
    rc = ptmp_sender_new("{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"tcp://127.0.0.1:*\"]}}", &tx);
    EXPECT(rc == PTMP_OK && tx != NULL);

    EXPECT(ptmp_sender_send(tx, NULL) == PTMP_ERR_NULL);
    ts.ntps = 3; /* tps is NULL */
    rc = ptmp_sender_send(tx, &ts);
    printf("tps NULL: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG);
    ts.ntps = 0;
    rc = ptmp_sender_send_bytes(tx, (const uint8_t*)"\xff\xff\xff", 3);
    printf("garbage bytes: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG);
    EXPECT(ptmp_sender_send_bytes(tx, NULL, 4) == PTMP_ERR_NULL);

    EXPECT(ptmp_receiver_recv(rx, NULL, 0) == PTMP_ERR_NULL);
    ts.tps_capacity = 8; /* tps is NULL */
    EXPECT(ptmp_receiver_recv(rx, &ts, 0) == PTMP_ERR_ARG);
    ts.tps_capacity = 0;
    /* Nothing was sent to it: polling times out, and a timeout is no error. */
    ptmp_receiver_recv(NULL, &ts, 0);
    EXPECT(ptmp_receiver_recv(rx, &ts, 0) == PTMP_TIMEOUT);
    EXPECT(ptmp_receiver_recv(rx, &ts, 50) == PTMP_TIMEOUT);
    EXPECT(strstr(ptmp_last_error(), "receiver") != NULL);

    ptmp_sender_free(tx);
    ptmp_receiver_free(rx);
    ptmp_tpset_clear(&ts);
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

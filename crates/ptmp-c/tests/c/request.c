/* Request and response from C: a server on its own thread (pthreads)
 * answering a client on the main thread. What the server does depends on
 * the request's words:
 *   "refuse"   refused, with words the client must see;
 *   "drop"     given back unanswered (a refusal in general words);
 *   "ignore"   held unanswered until "stop", so the client times out;
 *   "thread:N" handed, four at a time, to a worker thread that answers
 *              them last first ("worker:N"), while the server receives on;
 *   "stop"     answered "bye", and the server ends;
 *   anything else is echoed.
 * Then a timeout to nobody (a port nobody listens on) within its time, a
 * server gone while a request was out, a request over the limit, too
 * many out, and the argument errors.
 * Prints "0 failures" and exits 0 only if every check held. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ptmp.h"
#include "check.h"

#define BATCH 4

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Requests a worker thread answers, last first. */
struct batch {
    ptmp_request* reqs[BATCH];
    pthread_t thread;
};

static void* worker(void* arg) {
    struct batch* b = arg;
    for (int i = BATCH - 1; i >= 0; i--) {
        size_t len = 0;
        const char* data = ptmp_request_data(b->reqs[i], &len);
        char answer[64];
        /* "thread:N" -> "worker:N"; the data is NUL-terminated. */
        int n = snprintf(answer, sizeof answer, "worker:%s", data + strlen("thread:"));
        if (len < strlen("thread:") || ptmp_request_answer(b->reqs[i], answer, (size_t)n) != PTMP_OK)
            failures++;
    }
    return NULL;
}

struct served {
    int received, echoed, batches;
};

/* Does what the request's words say; returns 1 at "stop". */
static int serve_one(ptmp_request* req, struct batch* pending, int* npending,
                     struct batch** done, int* ndone, ptmp_request** ignored,
                     struct served* st) {
    size_t len = 0;
    const char* data = ptmp_request_data(req, &len);
    EXPECT(data != NULL && data[len] == '\0');
    if (len == 6 && memcmp(data, "refuse", 6) == 0) {
        EXPECT(ptmp_request_refuse(req, "not today: the shop is closed") == PTMP_OK);
    } else if (len == 4 && memcmp(data, "drop", 4) == 0) {
        ptmp_request_free(req);
    } else if (len == 6 && memcmp(data, "ignore", 6) == 0) {
        *ignored = req;
    } else if (len > 7 && memcmp(data, "thread:", 7) == 0) {
        pending->reqs[(*npending)++] = req;
        if (*npending == BATCH) {
            struct batch* b = malloc(sizeof *b);
            *b = *pending;
            EXPECT(pthread_create(&b->thread, NULL, worker, b) == 0);
            done[(*ndone)++] = b;
            *npending = 0;
            st->batches++;
        }
    } else if (len == 4 && memcmp(data, "stop", 4) == 0) {
        EXPECT(ptmp_request_answer(req, "bye", 3) == PTMP_OK);
        return 1;
    } else {
        EXPECT(ptmp_request_answer(req, data, len) == PTMP_OK);
        st->echoed++;
    }
    return 0;
}

static void* server_main(void* arg) {
    ptmp_server* srv = arg;
    struct batch pending;
    struct batch* done[16];
    int npending = 0, ndone = 0;
    ptmp_request* ignored = NULL;
    struct served st = {0, 0, 0};
    double t0 = now_s();
    for (;;) {
        if (now_s() - t0 > 60) {
            fprintf(stderr, "server: no stop within 60 s\n");
            failures++;
            break;
        }
        ptmp_request* req = (ptmp_request*)&st; /* must be reset to NULL */
        int rc = ptmp_server_recv(srv, 200, &req);
        if (rc == PTMP_TIMEOUT) {
            EXPECT(req == NULL);
            continue;
        }
        EXPECT(rc == PTMP_OK && req != NULL);
        if (rc != PTMP_OK) break;
        st.received++;
        if (serve_one(req, &pending, &npending, done, &ndone, &ignored, &st)) break;
    }
    for (int i = 0; i < ndone; i++) {
        pthread_join(done[i]->thread, NULL);
        free(done[i]);
    }
    for (int i = 0; i < npending; i++) ptmp_request_free(pending.reqs[i]);
    ptmp_request_free(ignored);
    printf("server: received %d, echoed %d, batches %d\n", st.received, st.echoed, st.batches);
    EXPECT(st.batches == 2);
    /* Sends "bye" (given just now) before it closes. */
    ptmp_server_free(srv);
    return NULL;
}

/* Echo: text, binary with zeros, empty; the answer buffer reused. */
static void echo(ptmp_client* c, ptmp_bytes* ans) {
    int rc = ptmp_client_request(c, "ping", 4, 5000, ans);
    EXPECT(rc == PTMP_OK);
    EXPECT(ans->len == 4 && ans->data != NULL && strcmp((const char*)ans->data, "ping") == 0);
    const unsigned char bin[5] = {0, 1, 0, 255, 0};
    EXPECT(ptmp_client_request(c, bin, sizeof bin, 5000, ans) == PTMP_OK);
    EXPECT(ans->len == 5 && memcmp(ans->data, bin, 5) == 0 && ans->capacity >= 6);
    EXPECT(ptmp_client_request(c, NULL, 0, 5000, ans) == PTMP_OK);
    EXPECT(ans->len == 0 && ans->data != NULL && ans->data[0] == 0);
    printf("echo: %d\n", rc);
}

/* A refusal seen with its words; a request let go unanswered. */
static void refusals(ptmp_client* c, ptmp_bytes* ans) {
    int rc = ptmp_client_request(c, "refuse", 6, 5000, ans);
    printf("refuse: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_REFUSED);
    EXPECT(strstr(ptmp_last_error(), "not today: the shop is closed") != NULL);
    EXPECT(strstr(ptmp_last_error(), "ptmp_client_request") != NULL);
    EXPECT(ans->len == 0);
    rc = ptmp_client_request(c, "drop", 4, 5000, ans);
    printf("drop: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_REFUSED);
    EXPECT(strstr(ptmp_last_error(), "without answering") != NULL);
}

/* A request the server holds: no answer within its time, and promptly. */
static void timed_out(ptmp_client* c, ptmp_bytes* ans) {
    double t0 = now_s();
    int rc = ptmp_client_request(c, "ignore", 6, 300, ans);
    double waited = now_s() - t0;
    printf("ignored: %d after %.3f s: %s\n", rc, waited, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_TIMEOUT);
    EXPECT(waited >= 0.25 && waited < 3.0);
    EXPECT(strstr(ptmp_last_error(), "no answer within 300 ms") != NULL);
}

/* Eight requests out at once, answered on worker threads last first:
 * each answer reaches its request. At most eight may be out. */
static void on_threads(ptmp_client* c, ptmp_bytes* ans) {
    uint64_t ids[2 * BATCH];
    EXPECT(ptmp_client_set_max_in_flight(c, 2 * BATCH) == PTMP_OK);
    for (int i = 0; i < 2 * BATCH; i++) {
        char body[32];
        int n = snprintf(body, sizeof body, "thread:%d", i);
        EXPECT(ptmp_client_send(c, body, (size_t)n, 10000, &ids[i]) == PTMP_OK);
        EXPECT(ids[i] != 0);
    }
    EXPECT(ptmp_client_in_flight(c) == 2 * BATCH);
    uint64_t id = 99;
    int rc = ptmp_client_send(c, "one more", 8, 1000, &id);
    printf("too many: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_TOO_MANY && id == 0);
    int got = 0;
    while (got < 2 * BATCH) {
        rc = ptmp_client_recv(c, 10000, &id, ans);
        EXPECT(rc == PTMP_OK);
        if (rc != PTMP_OK) break;
        int k = -1;
        for (int i = 0; i < 2 * BATCH; i++)
            if (ids[i] == id) k = i;
        char want[32];
        snprintf(want, sizeof want, "worker:%d", k);
        EXPECT(k >= 0 && strcmp((const char*)ans->data, want) == 0);
        got++;
    }
    printf("on threads: %d answers\n", got);
    EXPECT(ptmp_client_in_flight(c) == 0);
    /* Nothing out: at once. */
    EXPECT(ptmp_client_recv(c, -1, &id, ans) == PTMP_TIMEOUT && id == 0);
}

/* A port nobody listens on: no server took it, said within the time. */
static void nobody(ptmp_bytes* ans) {
    ptmp_server* s = NULL;
    EXPECT(ptmp_server_new("tcp://127.0.0.1:*", &s) == PTMP_OK);
    if (!s) return;
    char at[128];
    snprintf(at, sizeof at, "%s", ptmp_server_endpoint(s, 0));
    EXPECT(ptmp_server_endpoint(s, 1) == NULL);
    ptmp_server_free(s);
    ptmp_client* c = NULL;
    EXPECT(ptmp_client_new(at, &c) == PTMP_OK);
    if (!c) return;
    double t0 = now_s();
    int rc = ptmp_client_request(c, "anyone?", 7, 300, ans);
    double waited = now_s() - t0;
    printf("nobody: %d after %.3f s: %s\n", rc, waited, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_NO_SERVER);
    EXPECT(waited >= 0.25 && waited < 3.0);
    EXPECT(strstr(ptmp_last_error(), at) != NULL);
    ptmp_client_free(c);
}

/* A server closed while it holds a request: its client hears it gone. */
static void gone(ptmp_bytes* ans) {
    ptmp_server* s = NULL;
    EXPECT(ptmp_server_new_config("{\"socket\":{\"type\":\"ROUTER\",\"bind\":[\"tcp://127.0.0.1:*\"]}}",
                                  &s) == PTMP_OK);
    if (!s) return;
    ptmp_client* c = NULL;
    EXPECT(ptmp_client_new(ptmp_server_endpoint(s, 0), &c) == PTMP_OK);
    uint64_t id = 0;
    EXPECT(ptmp_client_send(c, "hold", 4, 10000, &id) == PTMP_OK);
    ptmp_request* held = NULL;
    EXPECT(ptmp_server_recv(s, 5000, &held) == PTMP_OK && held != NULL);
    ptmp_server_free(s);
    /* Given back after its server closed: nothing is sent. */
    EXPECT(ptmp_request_answer(held, "late", 4) == PTMP_OK);
    uint64_t which = 0;
    double t0 = now_s();
    int rc = ptmp_client_recv(c, 10000, &which, ans);
    printf("gone: %d after %.3f s: %s\n", rc, now_s() - t0, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_SERVER_GONE && which == id);
    EXPECT(now_s() - t0 < 5.0);
    ptmp_client_free(c);
}

/* A request over the client's max_message; the wrong socket types. */
static void limits(const char* at, ptmp_bytes* ans) {
    char cfg[256];
    snprintf(cfg, sizeof cfg,
             "{\"socket\":{\"type\":\"DEALER\",\"connect\":[\"%s\"],\"max_message\":256}}", at);
    ptmp_client* c = NULL;
    EXPECT(ptmp_client_new_config(cfg, &c) == PTMP_OK);
    /* (A limit much below 100 bytes would refuse ZeroMQ's own handshake.) */
    char big[1000];
    memset(big, 'x', sizeof big);
    int rc = ptmp_client_request(c, big, sizeof big, 1000, ans);
    printf("too big: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_REQ_TOO_BIG);
    EXPECT(strstr(ptmp_last_error(), "1000 bytes") != NULL);
    EXPECT(ptmp_client_request(c, "small", 5, 5000, ans) == PTMP_OK);
    EXPECT(ans->len == 5);
    ptmp_client_free(c);

    c = (ptmp_client*)&failures; /* must be reset to NULL */
    rc = ptmp_client_new_config("{\"socket\":{\"type\":\"PUSH\",\"connect\":[\"tcp://127.0.0.1:1\"]}}", &c);
    printf("client of type PUSH: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_CONFIG && c == NULL);
    EXPECT(strstr(ptmp_last_error(), "DEALER") != NULL);
    ptmp_server* s = (ptmp_server*)&failures;
    rc = ptmp_server_new_config("{\"socket\":{\"type\":\"DEALER\",\"bind\":[\"tcp://127.0.0.1:*\"]}}", &s);
    EXPECT(rc == PTMP_ERR_CONFIG && s == NULL);
    EXPECT(ptmp_server_new("shm://no-requests-here", &s) == PTMP_ERR_CONFIG && s == NULL);
    EXPECT(ptmp_client_new("nowhere", &c) == PTMP_ERR_CONFIG && c == NULL);
}

/* NULL handles and arguments, a negative time, a bad answer struct. */
static void arguments(ptmp_client* c) {
    ptmp_bytes ans = {0};
    EXPECT(ptmp_client_new(NULL, NULL) == PTMP_ERR_NULL);
    ptmp_client* none = NULL;
    EXPECT(ptmp_client_new(NULL, &none) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "address") != NULL);
    EXPECT(ptmp_client_request(NULL, "x", 1, 100, &ans) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_request(c, "x", 1, 100, NULL) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_request(c, NULL, 3, 100, &ans) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_request(c, "x", 1, -1, &ans) == PTMP_ERR_ARG);
    EXPECT(strstr(ptmp_last_error(), "timeout_ms = -1") != NULL);
    ptmp_bytes bad = {NULL, 0, 10};
    EXPECT(ptmp_client_request(c, "x", 1, 100, &bad) == PTMP_ERR_ARG);
    uint64_t id = 7;
    EXPECT(ptmp_client_send(c, "x", 1, 100, NULL) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_send(c, "x", 1, -5, &id) == PTMP_ERR_ARG && id == 0);
    EXPECT(ptmp_client_recv(NULL, 0, &id, &ans) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_set_max_in_flight(NULL, 3) == PTMP_ERR_NULL);
    EXPECT(ptmp_client_in_flight(NULL) == 0);
    ptmp_request* r = NULL;
    EXPECT(ptmp_server_recv(NULL, 0, &r) == PTMP_ERR_NULL);
    EXPECT(ptmp_server_new("tcp://127.0.0.1:*", NULL) == PTMP_ERR_NULL);
    EXPECT(ptmp_server_endpoint(NULL, 0) == NULL);
    size_t len = 9;
    EXPECT(ptmp_request_data(NULL, &len) == NULL && len == 0);
    EXPECT(ptmp_request_answer(NULL, "x", 1) == PTMP_ERR_NULL);
    EXPECT(ptmp_request_refuse(NULL, "no") == PTMP_ERR_NULL);
    ptmp_request_free(NULL);
    ptmp_client_free(NULL);
    ptmp_server_free(NULL);
    ptmp_bytes_clear(NULL);
    ptmp_bytes_clear(&ans);
}

/* The server's own argument errors, on a request it received. */
static void answer_errors(void) {
    ptmp_server* s = NULL;
    char at[128];
    snprintf(at, sizeof at, "ipc:///tmp/ptmp-c-request-%d.ipc", (int)getpid());
    EXPECT(ptmp_server_new(at, &s) == PTMP_OK);
    ptmp_client* c = NULL;
    EXPECT(ptmp_client_new(at, &c) == PTMP_OK);
    if (!s || !c) return;
    ptmp_bytes ans = {0};
    uint64_t id1 = 0, id2 = 0, which = 0;
    EXPECT(ptmp_client_send(c, "a", 1, 5000, &id1) == PTMP_OK);
    EXPECT(ptmp_client_send(c, "b", 1, 5000, &id2) == PTMP_OK);
    ptmp_request *r1 = NULL, *r2 = NULL;
    EXPECT(ptmp_server_recv(s, 5000, &r1) == PTMP_OK);
    EXPECT(ptmp_server_recv(s, 5000, &r2) == PTMP_OK);
    /* Consumed either way: each becomes a refusal. */
    EXPECT(ptmp_request_answer(r1, NULL, 5) == PTMP_ERR_NULL);
    EXPECT(ptmp_request_refuse(r2, NULL) == PTMP_ERR_NULL);
    ptmp_request* none = NULL;
    EXPECT(ptmp_server_recv(s, 50, &none) == PTMP_TIMEOUT && none == NULL);
    for (int i = 0; i < 2; i++) {
        int rc = ptmp_client_recv(c, 5000, &which, &ans);
        printf("answer error %d: %d %s\n", i, rc, ptmp_last_error());
        EXPECT(rc == PTMP_ERR_REQ_REFUSED && (which == id1 || which == id2));
    }
    ptmp_client_free(c);
    ptmp_server_free(s);
    ptmp_bytes_clear(&ans);
}

int main(void) {
    ptmp_server* srv = NULL;
    EXPECT(ptmp_server_new("tcp://127.0.0.1:*", &srv) == PTMP_OK);
    if (!srv) return 1;
    char at[128];
    snprintf(at, sizeof at, "%s", ptmp_server_endpoint(srv, 0));
    printf("server at %s\n", at);
    pthread_t th;
    if (pthread_create(&th, NULL, server_main, srv) != 0) return 1;

    ptmp_client* c = NULL;
    EXPECT(ptmp_client_new(at, &c) == PTMP_OK);
    ptmp_bytes ans = {0};
    if (c) {
        echo(c, &ans);
        refusals(c, &ans);
        timed_out(c, &ans);
        on_threads(c, &ans);
        limits(at, &ans);
        arguments(c);
        EXPECT(ptmp_client_request(c, "stop", 4, 10000, &ans) == PTMP_OK);
        EXPECT(ans.len == 3 && strcmp((const char*)ans.data, "bye") == 0);
    }
    pthread_join(th, NULL);
    ptmp_client_free(c);
    nobody(&ans);
    gone(&ans);
    answer_errors();
    ptmp_bytes_clear(&ans);
    EXPECT(ans.data == NULL && ans.len == 0 && ans.capacity == 0);
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

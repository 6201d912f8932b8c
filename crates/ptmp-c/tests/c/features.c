/* The C API's shared-memory channels and dump files in one process: a
 * writer's loan filled in place and committed, a reader's view checked with
 * the seqlock, an overrun detected, the state errors; a dump file written
 * and read back; raw frames sent and received. argv[1] is a scratch
 * directory; messages forwarded from channel to channel. Prints "0 failures" and
 * exits 0 only if every check held. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ptmp.h"
#include "check.h"


static void shared_memory(void) {
    char name[64];
    snprintf(name, sizeof name, "c-features-%d", (int)getpid());
    ptmp_shm_writer* w = NULL;
    ptmp_shm_reader* r = NULL;
    EXPECT(ptmp_shm_writer_new(name, 4, 4096, PTMP_SHM_OVERWRITE, &w) == PTMP_OK);
    EXPECT(ptmp_shm_writer_max_message(w) == 4096);
    EXPECT(ptmp_shm_reader_new(name, PTMP_SHM_START_NEXT, 1000, &r) == PTMP_OK);

    /* Zero-copy: the message is written straight into its slot. */
    uint8_t* slot = NULL;
    uint64_t seq = 99;
    EXPECT(ptmp_shm_writer_loan(w, 100, &slot) == PTMP_OK && slot != NULL);
    for (int i = 0; i < 100; i++) slot[i] = (uint8_t)i;
    EXPECT(ptmp_shm_writer_loan(w, 100, &slot) == PTMP_ERR_STATE);
    EXPECT(strstr(ptmp_last_error(), "a loan is open") != NULL);
    EXPECT(ptmp_shm_writer_commit(w, &seq) == PTMP_OK && seq == 0);
    EXPECT(ptmp_shm_writer_commit(w, &seq) == PTMP_ERR_STATE);
    EXPECT(strstr(ptmp_last_error(), "no loan is open") != NULL);
    /* An aborted loan publishes nothing. */
    EXPECT(ptmp_shm_writer_loan(w, 8, &slot) == PTMP_OK);
    EXPECT(ptmp_shm_writer_abort(w) == PTMP_OK);
    EXPECT(ptmp_shm_writer_abort(w) == PTMP_ERR_STATE);
    EXPECT(ptmp_shm_writer_loan(w, 5000, &slot) == PTMP_ERR_ARG);
    printf("too large: %s\n", ptmp_last_error());
    EXPECT(ptmp_shm_writer_publish(w, (const uint8_t*)"copy", 4, &seq) == PTMP_OK && seq == 1);

    ptmp_shm_view v;
    EXPECT(ptmp_shm_reader_valid(r) == PTMP_ERR_STATE);
    EXPECT(ptmp_shm_reader_view(r, &v, 1000) == PTMP_OK);
    EXPECT(v.seq == 0 && v.len == 100 && v.lost == 0);
    int sum = 0;
    for (size_t i = 0; i < v.len; i++) sum += v.data[i];
    EXPECT(sum == 4950);
    EXPECT(ptmp_shm_reader_valid(r) == 1); /* so the sum is of the whole message */
    EXPECT(ptmp_shm_reader_view(r, &v, 1000) == PTMP_OK);
    EXPECT(v.seq == 1 && v.len == 4 && memcmp(v.data, "copy", 4) == 0);
    EXPECT(ptmp_shm_reader_valid(r) == 1);
    EXPECT(ptmp_shm_reader_view(r, &v, 10) == PTMP_TIMEOUT);
    EXPECT(v.data == NULL && v.len == 0);

    /* The writer laps a view that is held: the check says so. */
    EXPECT(ptmp_shm_writer_publish(w, (const uint8_t*)"x", 1, NULL) == PTMP_OK);
    EXPECT(ptmp_shm_reader_view(r, &v, 1000) == PTMP_OK);
    for (int i = 0; i < 6; i++)
        EXPECT(ptmp_shm_writer_publish(w, (const uint8_t*)"yy", 2, NULL) == PTMP_OK);
    EXPECT(ptmp_shm_reader_valid(r) == 0);
    EXPECT(ptmp_shm_reader_release(r) == PTMP_OK);
    EXPECT(ptmp_shm_reader_valid(r) == PTMP_ERR_STATE);
    /* Reading on skips what was overwritten, and counts it. */
    EXPECT(ptmp_shm_reader_view(r, &v, 1000) == PTMP_OK);
    EXPECT(v.lost > 0 && ptmp_shm_reader_lost(r) == v.lost);

    /* Bad arguments. */
    ptmp_shm_writer* w2 = w;
    ptmp_shm_reader* r2 = r;
    EXPECT(ptmp_shm_writer_new(name, 4, 4096, 7, &w2) == PTMP_ERR_ARG);
    EXPECT(w2 == NULL);
    EXPECT(ptmp_shm_writer_new(name, 4, 4096, PTMP_SHM_OVERWRITE, &w2) == PTMP_ERR_TRANSPORT);
    printf("second writer: %s\n", ptmp_last_error());
    EXPECT(ptmp_shm_writer_new("no/slash", 4, 64, PTMP_SHM_OVERWRITE, &w2) == PTMP_ERR_CONFIG);
    EXPECT(ptmp_shm_writer_new("c-odd", 3, 64, PTMP_SHM_OVERWRITE, &w2) == PTMP_ERR_CONFIG);
    printf("3 slots: %s\n", ptmp_last_error());
    EXPECT(ptmp_shm_reader_new("c-features-none", PTMP_SHM_START_NEXT, 0, &r2) == PTMP_TIMEOUT);
    EXPECT(r2 == NULL);
    EXPECT(ptmp_shm_writer_loan(NULL, 1, &slot) == PTMP_ERR_NULL);
    EXPECT(ptmp_shm_reader_view(NULL, &v, 0) == PTMP_ERR_NULL);
    EXPECT(ptmp_shm_remove(NULL) == PTMP_ERR_NULL);
    ptmp_shm_writer_free(NULL);
    ptmp_shm_reader_free(NULL);
    ptmp_shm_reader_free(r);
    ptmp_shm_writer_free(w);
    EXPECT(ptmp_shm_remove(name) == PTMP_OK);
}

static void dump_files(const char* dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/c.dump", dir);
    ptmp_dump_writer* dw = NULL;
    EXPECT(ptmp_dump_writer_new(path, &dw) == PTMP_OK);
    for (uint32_t i = 0; i < 5; i++) {
        ptmp_trigprim tps[3] = {{.channel = i, .tstart = 10 * i}, {.channel = i + 1}, {.flags = 7}};
        ptmp_tpset t = {.count = i, .detid = 9, .tstart = 10 * i, .tps = tps, .ntps = i % 4};
        EXPECT(ptmp_dump_writer_write(dw, &t) == PTMP_OK);
    }
    EXPECT(ptmp_dump_writer_flush(dw) == PTMP_OK);
    ptmp_dump_writer_free(dw);

    ptmp_dump_reader* dr = NULL;
    EXPECT(ptmp_dump_reader_new(path, &dr) == PTMP_OK);
    ptmp_tpset got;
    memset(&got, 0, sizeof got);
    uint32_t n = 0;
    int rc;
    while ((rc = ptmp_dump_reader_next(dr, &got)) == PTMP_OK) {
        EXPECT(got.count == n && got.detid == 9 && got.tstart == 10 * n);
        EXPECT(got.ntps == n % 4);
        if (got.ntps > 0) EXPECT(got.tps[0].channel == n && got.tps[0].tstart == 10 * n);
        if (got.ntps > 2) EXPECT(got.tps[2].flags == 7);
        n++;
    }
    EXPECT(rc == PTMP_END && n == 5);
    EXPECT(ptmp_dump_reader_next(dr, &got) == PTMP_END);
    ptmp_tpset_clear(&got);
    ptmp_dump_reader_free(dr);

    /* A file that is not a dump: the record is named. */
    snprintf(path, sizeof path, "%s/bad.dump", dir);
    FILE* f = fopen(path, "wb");
    fwrite("\x03\x00\x00\x00\x00\x00\x00\x00" "abc", 1, 11, f);
    fclose(f);
    EXPECT(ptmp_dump_reader_new(path, &dr) == PTMP_OK);
    rc = ptmp_dump_reader_next(dr, &got);
    printf("not a dump: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc < 0 && strstr(ptmp_last_error(), "bad.dump") != NULL);
    ptmp_dump_reader_free(dr);
    ptmp_tpset_clear(&got);
    EXPECT(ptmp_dump_reader_new("/nonexistent/x.dump", &dr) == PTMP_ERR_IO);
    EXPECT(strstr(ptmp_last_error(), "/nonexistent/x.dump") != NULL);
    EXPECT(dr == NULL);
    /* A directory is no dump file: refused, named, never a reader. */
    rc = ptmp_dump_reader_new(dir, &dr);
    printf("a directory as dump: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && dr == NULL);
    EXPECT(strstr(ptmp_last_error(), "a directory, not a regular file") != NULL);
    ptmp_dump_reader_free(dr);
    /* Nor is a FIFO, which an open would wait on for a writer: refused at
     * once (the alarm ends a program that waits). */
    snprintf(path, sizeof path, "%s/pipe.dump", dir);
    unlink(path); /* left by an earlier run in this directory */
    EXPECT(mkfifo(path, 0600) == 0);
    alarm(60);
    rc = ptmp_dump_reader_new(path, &dr);
    alarm(0);
    printf("a FIFO as dump: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_IO && dr == NULL);
    EXPECT(strstr(ptmp_last_error(), "pipe.dump") != NULL);
    EXPECT(strstr(ptmp_last_error(), "a FIFO, not a regular file") != NULL);
    ptmp_dump_reader_free(dr);
    /* A format ptmp knows of but does not read or write: refused by name
     * as a bad argument, and no file is made. */
    snprintf(path, sizeof path, "%s/run.h5", dir);
    rc = ptmp_dump_reader_new(path, &dr);
    printf("an HDF5 file: %d %s\n", rc, ptmp_last_error());
    EXPECT(rc == PTMP_ERR_ARG && dr == NULL);
    EXPECT(strstr(ptmp_last_error(), "HDF5 files yet") != NULL);
    ptmp_dump_writer* mw = NULL;
    EXPECT(ptmp_dump_writer_new(path, &mw) == PTMP_ERR_ARG && mw == NULL);
    EXPECT(strstr(ptmp_last_error(), "run.h5") != NULL);
    EXPECT(access(path, F_OK) != 0);
    EXPECT(ptmp_dump_writer_write(NULL, &got) == PTMP_ERR_NULL);
}

static void raw_frames(void) {
    ptmp_receiver* rx = NULL;
    ptmp_sender* tx = NULL;
    EXPECT(ptmp_receiver_new("{\"socket\":{\"type\":\"PAIR\",\"bind\":[\"inproc://frames\"]}}", &rx) == PTMP_OK);
    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PAIR\",\"connect\":[\"inproc://frames\"]}}", &tx) == PTMP_OK);
    const uint8_t* datas[3] = {(const uint8_t*)"one", NULL, (const uint8_t*)"three"};
    size_t lens[3] = {3, 0, 5};
    EXPECT(ptmp_sender_send_frames(tx, datas, lens, 3) == PTMP_OK);
    size_t n = 99;
    EXPECT(ptmp_receiver_recv_frames(rx, 1000, &n) == PTMP_OK && n == 3);
    const uint8_t* d = NULL;
    size_t len = 0;
    EXPECT(ptmp_receiver_frame(rx, 0, &d, &len) == PTMP_OK && len == 3 && memcmp(d, "one", 3) == 0);
    EXPECT(ptmp_receiver_frame(rx, 1, &d, &len) == PTMP_OK && len == 0);
    EXPECT(ptmp_receiver_frame(rx, 2, &d, &len) == PTMP_OK && len == 5 && memcmp(d, "three", 5) == 0);
    EXPECT(ptmp_receiver_frame(rx, 3, &d, &len) == PTMP_ERR_ARG);
    EXPECT(strstr(ptmp_last_error(), "has 3 frame(s)") != NULL);

    /* A TPSet received raw: the version frame, then its encoding, which
     * goes out again as bytes and comes back as the same set. */
    ptmp_trigprim tps[1] = {{.channel = 77, .tstart = 5, .adcsum = 9}};
    ptmp_tpset t = {.count = 12, .detid = 3, .tps = tps, .ntps = 1};
    EXPECT(ptmp_sender_send(tx, &t) == PTMP_OK);
    EXPECT(ptmp_receiver_recv_frames(rx, 1000, &n) == PTMP_OK && n == 2);
    EXPECT(ptmp_receiver_frame(rx, 1, &d, &len) == PTMP_OK && len > 0);
    uint8_t copy[256];
    EXPECT(len <= sizeof copy);
    memcpy(copy, d, len);
    EXPECT(ptmp_sender_send_bytes(tx, copy, len) == PTMP_OK);
    ptmp_tpset got;
    memset(&got, 0, sizeof got);
    EXPECT(ptmp_receiver_recv(rx, &got, 1000) == PTMP_OK);
    EXPECT(got.count == 12 && got.detid == 3 && got.ntps == 1 && got.tps[0].channel == 77);
    ptmp_tpset_clear(&got);

    EXPECT(ptmp_receiver_recv_frames(rx, 10, &n) == PTMP_TIMEOUT && n == 0);
    EXPECT(ptmp_sender_send_frames(tx, datas, lens, 0) == PTMP_ERR_ARG);
    lens[1] = 4; /* datas[1] is NULL */
    EXPECT(ptmp_sender_send_frames(tx, datas, lens, 3) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "datas[1] is NULL but lens[1] = 4") != NULL);
    EXPECT(ptmp_receiver_recv_frames(NULL, 0, &n) == PTMP_ERR_NULL);
    ptmp_sender_free(tx);
    ptmp_receiver_free(rx);
}

/* A message passed on from one shm:// channel to another without a
 * buffer in between, then on to zmq; nothing more within the timeout. */
static void forwarding(void) {
    char a[64], b[64], cfg[256];
    snprintf(a, sizeof a, "c-fwd-a-%d", (int)getpid());
    snprintf(b, sizeof b, "c-fwd-b-%d", (int)getpid());
    ptmp_sender *tx = NULL, *on = NULL, *last = NULL;
    ptmp_receiver *mid = NULL, *end = NULL, *zend = NULL;
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"shm://%s\"]}}", a);
    EXPECT(ptmp_sender_new(cfg, &tx) == PTMP_OK);
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PULL\",\"connect\":[\"shm://%s\"]}}", a);
    EXPECT(ptmp_receiver_new(cfg, &mid) == PTMP_OK);
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PUSH\",\"bind\":[\"shm://%s\"]}}", b);
    EXPECT(ptmp_sender_new(cfg, &on) == PTMP_OK);
    snprintf(cfg, sizeof cfg, "{\"socket\":{\"type\":\"PULL\",\"connect\":[\"shm://%s\"]}}", b);
    EXPECT(ptmp_receiver_new(cfg, &end) == PTMP_OK);
    EXPECT(ptmp_receiver_new("{\"socket\":{\"type\":\"PAIR\",\"bind\":[\"inproc://fwd\"]}}", &zend) == PTMP_OK);
    EXPECT(ptmp_sender_new("{\"socket\":{\"type\":\"PAIR\",\"connect\":[\"inproc://fwd\"]}}", &last) == PTMP_OK);

    const uint8_t* datas[2] = {(const uint8_t*)"head", (const uint8_t*)"body"};
    size_t lens[2] = {4, 4};
    EXPECT(ptmp_sender_send_frames(tx, datas, lens, 2) == PTMP_OK);
    EXPECT(ptmp_sender_send_frames(tx, datas, lens, 1) == PTMP_OK);
    EXPECT(ptmp_receiver_forward(mid, on, 1000) == PTMP_OK);
    EXPECT(ptmp_receiver_forward(mid, on, 1000) == PTMP_OK);
    EXPECT(ptmp_receiver_forward(mid, on, 10) == PTMP_TIMEOUT);
    size_t n = 0;
    const uint8_t* d = NULL;
    size_t len = 0;
    EXPECT(ptmp_receiver_recv_frames(end, 1000, &n) == PTMP_OK && n == 2);
    EXPECT(ptmp_receiver_frame(end, 1, &d, &len) == PTMP_OK && len == 4 && memcmp(d, "body", 4) == 0);
    /* From shm to zmq: through the receiver's buffer. */
    EXPECT(ptmp_receiver_forward(end, last, 1000) == PTMP_OK);
    EXPECT(ptmp_receiver_recv_frames(zend, 1000, &n) == PTMP_OK && n == 1);
    EXPECT(ptmp_receiver_frame(zend, 0, &d, &len) == PTMP_OK && len == 4 && memcmp(d, "head", 4) == 0);
    EXPECT(ptmp_receiver_forward(NULL, on, 0) == PTMP_ERR_NULL);
    EXPECT(ptmp_receiver_forward(mid, NULL, 0) == PTMP_ERR_NULL);
    EXPECT(strstr(ptmp_last_error(), "sender") != NULL);
    ptmp_sender_free(tx);
    ptmp_sender_free(on);
    ptmp_sender_free(last);
    ptmp_receiver_free(mid);
    ptmp_receiver_free(end);
    ptmp_receiver_free(zend);
    EXPECT(ptmp_shm_remove(a) == PTMP_OK);
    EXPECT(ptmp_shm_remove(b) == PTMP_OK);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: features SCRATCH_DIR\n");
        return 2;
    }
    shared_memory();
    dump_files(argv[1]);
    raw_frames();
    forwarding();
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

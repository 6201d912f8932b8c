/*
 * thread_check.c: a test plugin that checks the threading promise of
 * ptmp_filter.h. Each engine state remembers the thread that created it;
 * process() returns an error (counted by the filter agent) and destroy()
 * counts a fault when called from any other thread.
 */
#include "ptmp_filter.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    pthread_t owner;
} state_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int created, destroyed, processed, wrong_thread;

static void bump(int* n) {
    pthread_mutex_lock(&lock);
    (*n)++;
    pthread_mutex_unlock(&lock);
}

static void* create(const char* config_json, char* err, size_t errlen) {
    (void)config_json;
    (void)err;
    (void)errlen;
    state_t* s = malloc(sizeof *s);
    if (!s) return NULL;
    s->owner = pthread_self();
    bump(&created);
    return s;
}

static int process(void* state, const ptmp_tpset* in, ptmp_emit_fn emit, void* sink) {
    state_t* s = state;
    bump(&processed);
    if (!pthread_equal(s->owner, pthread_self())) {
        bump(&wrong_thread);
        return 1;
    }
    return emit(sink, in);
}

static void destroy(void* state) {
    state_t* s = state;
    if (!pthread_equal(s->owner, pthread_self())) bump(&wrong_thread);
    bump(&destroyed);
    free(s);
}

/* The counts so far: engines created, destroyed, sets processed, and calls
 * made from a thread other than the one that created their engine. */
void thread_check_counts(int out[4]) {
    pthread_mutex_lock(&lock);
    out[0] = created;
    out[1] = destroyed;
    out[2] = processed;
    out[3] = wrong_thread;
    pthread_mutex_unlock(&lock);
}

static const ptmp_filter_engine engine = {
    PTMP_FILTER_ABI_VERSION, "thread_check", create, process, destroy,
};

static const ptmp_filter_engine* const engines[] = {&engine, NULL};

const ptmp_filter_engine* const* ptmp_filter_engines(void) { return engines; }

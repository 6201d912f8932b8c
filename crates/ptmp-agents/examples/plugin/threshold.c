/*
 * threshold.c: an example ptmp filter-engine plugin in C.
 *
 * Engine "adc_threshold": passes on, from each input TPSet, only the
 * TrigPrims whose adcsum is at least the config's "threshold" (default 100),
 * as one output TPSet with its summary fields recomputed; an input with no
 * such TrigPrim gives no output.
 *
 * Build and use:
 *   cc -shared -fPIC -O2 -I ../../include -o libptmp-threshold.so threshold.c
 *   PTMP_PLUGINS=$PWD/libptmp-threshold.so ptmp run config.json
 * with a filter agent whose "engine" is "adc_threshold".
 */
#include "ptmp_filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t threshold;
    ptmp_tp* buf;
    size_t cap;
} state_t;

/* A tiny reader for one integer key of the config JSON: enough for an
 * example; a real plugin would use a JSON library. Returns 0 if absent,
 * -1 if malformed. */
static int read_uint(const char* json, const char* key, uint32_t* out) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char* p = strstr(json, pat);
    if (!p) return 0;
    p = strchr(p + strlen(pat), ':');
    if (!p) return -1;
    char* end = NULL;
    long v = strtol(p + 1, &end, 10);
    if (end == p + 1 || v < 0) return -1;
    *out = (uint32_t)v;
    return 1;
}

static void* create(const char* config_json, char* err, size_t errlen) {
    state_t* s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->threshold = 100;
    if (read_uint(config_json, "threshold", &s->threshold) < 0) {
        snprintf(err, errlen, "threshold must be a non-negative integer");
        free(s);
        return NULL;
    }
    return s;
}

static int process(void* state, const ptmp_tpset* in, ptmp_emit_fn emit, void* sink) {
    state_t* s = state;
    if (in->ntps > s->cap) {
        ptmp_tp* nb = realloc(s->buf, in->ntps * sizeof *nb);
        if (!nb) return 1;
        s->buf = nb;
        s->cap = in->ntps;
    }
    size_t n = 0;
    uint32_t chanbeg = UINT32_MAX, chanend = 0, adc = 0;
    uint64_t tstart = UINT64_MAX;
    for (uint64_t i = 0; i < in->ntps; i++) {
        const ptmp_tp* tp = &in->tps[i];
        if (tp->adcsum < s->threshold) continue;
        s->buf[n++] = *tp;
        if (tp->channel < chanbeg) chanbeg = tp->channel;
        if (tp->channel > chanend) chanend = tp->channel;
        if (tp->tstart < tstart) tstart = tp->tstart;
        adc += tp->adcsum;
    }
    if (n == 0) return 0;
    ptmp_tpset out = *in;
    out.tps = s->buf;
    out.ntps = n;
    out.tstart = tstart;
    out.chanbeg = chanbeg;
    out.chanend = chanend;
    out.totaladc = adc;
    out.created = 0;
    return emit(sink, &out);
}

static void destroy(void* state) {
    state_t* s = state;
    free(s->buf);
    free(s);
}

static const ptmp_filter_engine threshold_engine = {
    PTMP_FILTER_ABI_VERSION, "adc_threshold", create, process, destroy,
};

static const ptmp_filter_engine* const engines[] = {&threshold_engine, NULL};

const ptmp_filter_engine* const* ptmp_filter_engines(void) { return engines; }

/*
 * ptmp_filter.h: the C ABI of ptmp filter-engine plugins (ABI version 1).
 *
 * A plugin is a shared library that exports one function,
 *
 *     const ptmp_filter_engine* const* ptmp_filter_engines(void);
 *
 * returning a NULL-terminated array of engine descriptors that live as long
 * as the library. ptmp loads the libraries listed in a configuration's
 * "plugins" array or in the comma-separated PTMP_PLUGINS variable (a bare
 * name NAME is looked up as libNAME.so on the dynamic loader's path; a name
 * with a '/' or ending in ".so" is a path), and a filter agent whose
 * "engine" names one of these descriptors runs it.
 *
 * Life of an engine. All calls on one engine state (its create, every
 * process, its destroy) come from one thread: the filter agent's own,
 * which holds the state until it stops. Before anything starts, ptmp also
 * checks a configuration by creating an engine and destroying it at once
 * (no process calls), on the thread that reads the configuration; so a
 * plugin may see creates from several threads, but never a state used
 * from a thread other than the one that created it.
 *   state = create(config_json, err, errlen)   once; config_json is the
 *           filter agent's whole "data" object as JSON text (valid for the
 *           call only). Return NULL and write a NUL-terminated reason into
 *           err (at most errlen bytes) to refuse the configuration.
 *   rc = process(state, in, emit, sink)        once per input TPSet. Call
 *           emit(sink, out) zero or more times; each out (and its tps) need
 *           only be valid during that emit call: ptmp copies it. Return 0,
 *           or nonzero to report an error (counted; the agent goes on).
 *   destroy(state)                             once, at shutdown.
 *
 * Rules that keep the ABI stable: structures are only ever extended at
 * their end with a bumped abi_version; ptmp refuses a descriptor whose
 * abi_version it does not know. Unset optional protobuf fields read as 0.
 */
#ifndef PTMP_FILTER_H
#define PTMP_FILTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTMP_FILTER_ABI_VERSION 1u

/* One trigger primitive (ptmp.data.TrigPrim), 32 bytes. */
typedef struct ptmp_tp {
    uint32_t channel;
    uint32_t tspan;
    uint64_t tstart;
    uint32_t adcsum;
    uint32_t adcpeak;
    uint32_t flags;
    uint32_t reserved; /* zero */
} ptmp_tp;

/* A set of trigger primitives (ptmp.data.TPSet). */
typedef struct ptmp_tpset {
    uint32_t count;
    uint32_t detid;
    int64_t created; /* microseconds since the Unix epoch; 0 = let ptmp set it */
    uint64_t tstart;
    uint32_t tspan;
    uint32_t chanbeg;
    uint32_t chanend;
    uint32_t totaladc;
    const ptmp_tp* tps;
    uint64_t ntps;
} ptmp_tpset;

typedef int (*ptmp_emit_fn)(void* sink, const ptmp_tpset* out);

typedef struct ptmp_filter_engine {
    uint32_t abi_version; /* PTMP_FILTER_ABI_VERSION */
    const char* name;     /* the "engine" name a config uses */
    void* (*create)(const char* config_json, char* err, size_t errlen);
    int (*process)(void* state, const ptmp_tpset* in, ptmp_emit_fn emit, void* sink);
    void (*destroy)(void* state);
} ptmp_filter_engine;

typedef const ptmp_filter_engine* const* (*ptmp_filter_engines_fn)(void);

#ifdef __cplusplus
}
#endif
#endif

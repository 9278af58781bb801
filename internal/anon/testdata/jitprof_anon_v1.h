/*
 * jitprof_anon.h: the interface of an anonymous-sample handler written as
 * a shared library (seed 001's libNAME.so), for `jitprof report
 * --anon-handler=NAME`. docs/anon-handlers.md describes how jitprof finds
 * the library and runs it.
 *
 * jitprof never loads the library itself: it runs jitprof-anon-host (built
 * with the agent, `make -C agent`), which dlopen()s the library and speaks
 * jitprof's line protocol for it. A crash, hang or leak in the library is
 * the host's, bounded by the handler time budget; the report completes and
 * says what happened.
 *
 * One host process serves one recorded process: jitprof_anon_claim once,
 * then jitprof_anon_resolve any number of times if it claimed, then
 * jitprof_anon_close. Calls come from one thread.
 */
#ifndef JITPROF_ANON_H
#define JITPROF_ANON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface. A library exports
 *     const uint32_t jitprof_anon_version = JITPROF_ANON_VERSION;
 * and the host refuses a library of another version. */
#define JITPROF_ANON_VERSION 1

/* The process a claim asks about. Strings are NUL-terminated and valid
 * for the call only. */
struct jitprof_anon_process {
	int32_t pid;      /* as recorded (the profiler's pid namespace) */
	int32_t nspid;    /* in the process's own pid namespace; 0 unknown */
	int32_t uid;      /* the user the process ran as; -1 unknown */
	const char *root; /* where its files are seen (/proc/PID/root); "" the host's / */
	const char *comm; /* its command name */
};

/* What jitprof_anon_claim returns. */
enum {
	JITPROF_ANON_NOT_MINE = 0, /* not this handler's process */
	JITPROF_ANON_CLAIMED = 1,  /* the handler names its anonymous samples */
	JITPROF_ANON_ERROR = -1,   /* the handler's data is unusable: say why in msg */
};

/* One address asked about, and the answer. */
struct jitprof_anon_query {
	uint64_t addr; /* in: the sampled address */
	uint64_t time; /* in: the sample's time, ns, in the recording's clock
	                  (CLOCK_MONOTONIC for jitprof record) */
	/* out: size 0 means nothing known at addr. Otherwise the code at addr
	 * at that time is [start, start+size), which must hold addr, at most
	 * 2 GiB; gen is its generation (0 if the data has none); name is
	 * copied into name[] (cut at name_len - 1 bytes, NUL-terminated). */
	uint64_t start, size, gen;
	char *name;      /* out buffer, provided by the host */
	size_t name_len; /* its size (4096) */
};

/* jitprof_anon_claim decides whether the handler understands the JIT data
 * of process p. On CLAIMED, *state is the handler's for the other calls;
 * on ERROR, msg (msg_len bytes) says why. */
typedef int jitprof_anon_claim_fn(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len);

/* jitprof_anon_resolve answers n queries (n <= 4096) in place. It returns
 * 0, or -1 with msg set when the handler can no longer answer (the session
 * ends; jitprof reports msg). */
typedef int jitprof_anon_resolve_fn(void *state, struct jitprof_anon_query *q, size_t n, char *msg, size_t msg_len);

/* jitprof_anon_close frees what claim allocated. */
typedef void jitprof_anon_close_fn(void *state);

/* The symbols a library exports (the host looks them up by these names). */
extern const uint32_t jitprof_anon_version;
jitprof_anon_claim_fn jitprof_anon_claim;
jitprof_anon_resolve_fn jitprof_anon_resolve;
jitprof_anon_close_fn jitprof_anon_close;

#ifdef __cplusplus
}
#endif

#endif

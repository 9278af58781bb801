/*
 * An example anonymous-sample handler library for jitprof (the interface
 * of agent/jitprof_anon.h), the counterpart of examples/anonhandler:
 * built as libjitprof-anon-example.so, it is used with `jitprof report
 * --anon-samples --anon-handler=example`.
 *
 * It claims a process when $ANONHANDLER_DIR (default /tmp) holds
 * jitsyms-PID.txt, lines "NAME START SIZE" (START and SIZE in hexadecimal)
 * that a toy JIT wrote, and names addresses by those ranges, without
 * times.
 *
 *   gcc -shared -fPIC -I../../agent -o libjitprof-anon-example.so example.c
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitprof_anon.h"

const uint32_t jitprof_anon_version = JITPROF_ANON_VERSION;

struct sym {
	uint64_t start, size;
	char *name;
};

struct map {
	struct sym *syms;
	size_t n;
};

int jitprof_anon_claim(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len) {
	const char *dir = getenv("ANONHANDLER_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/jitsyms-%d.txt", dir && *dir ? dir : "/tmp", p->pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return JITPROF_ANON_NOT_MINE;
	struct map *m = calloc(1, sizeof *m);
	size_t cap = 0;
	char name[1024];
	uint64_t start, size;
	while (m && fscanf(f, "%1023s %" SCNx64 " %" SCNx64, name, &start, &size) == 3) {
		if (m->n == cap) {
			cap = cap ? 2 * cap : 64;
			struct sym *s = realloc(m->syms, cap * sizeof *s);
			if (!s) {
				snprintf(msg, msg_len, "%s: out of memory", path);
				fclose(f);
				return JITPROF_ANON_ERROR;
			}
			m->syms = s;
		}
		m->syms[m->n++] = (struct sym){start, size, strdup(name)};
	}
	fclose(f);
	if (!m) {
		snprintf(msg, msg_len, "out of memory");
		return JITPROF_ANON_ERROR;
	}
	*state = m;
	return JITPROF_ANON_CLAIMED;
}

int jitprof_anon_resolve(void *state, struct jitprof_anon_query *q, size_t n, char *msg, size_t msg_len) {
	(void)msg;
	(void)msg_len;
	struct map *m = state;
	for (size_t i = 0; i < n; i++) {
		/* The last line for an address wins: a JIT that reuses memory
		 * appends the new code's line. */
		for (size_t j = m->n; j-- > 0;) {
			struct sym *s = &m->syms[j];
			if (q[i].addr >= s->start && q[i].addr - s->start < s->size) {
				q[i].start = s->start;
				q[i].size = s->size;
				snprintf(q[i].name, q[i].name_len, "%s", s->name);
				break;
			}
		}
	}
	return 0;
}

void jitprof_anon_close(void *state) {
	struct map *m = state;
	for (size_t i = 0; i < m->n; i++)
		free(m->syms[i].name);
	free(m->syms);
	free(m);
}

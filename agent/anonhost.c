/*
 * jitprof-anon-host: runs an anonymous-sample handler library (the
 * interface of jitprof_anon.h) for jitprof, speaking jitprof's external
 * handler protocol (docs/anon-handlers.md) on stdin and stdout, so that
 * the library's code never runs inside jitprof.
 *
 *   jitprof-anon-host LIBRARY [NAME]
 *
 * jitprof opens the library itself (after its trust checks) and passes it
 * as descriptor 3 with LIBRARY "/proc/self/fd/3", so that what is loaded
 * is the file it checked; NAME, the library's path, is how claims name
 * it to the report.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitprof_anon.h"

#define MAX_LINE 65536
#define MAX_BATCH 4096
#define NAME_LEN 4096

static jitprof_anon_claim_fn *claim_fn;
static jitprof_anon_resolve_fn *resolve_fn;
static jitprof_anon_close_fn *close_fn;

/* clean writes s to stdout with control bytes and newlines replaced, so
 * that a library's message or name cannot break the protocol. */
static void clean(const char *s) {
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
}

/* unescape decodes a protocol field in place: "-" is empty, %XX a byte. */
static void unescape(char *s) {
	if (strcmp(s, "-") == 0) {
		s[0] = 0;
		return;
	}
	char *w = s;
	for (char *r = s; *r; r++) {
		unsigned v;
		if (r[0] == '%' && r[1] && r[2] && sscanf(r + 1, "%2x", &v) == 1) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

static int read_line(char *buf, size_t len) {
	if (!fgets(buf, (int)len, stdin))
		return 0;
	buf[strcspn(buf, "\n")] = 0;
	return 1;
}

int main(int argc, char **argv) {
	static char line[MAX_LINE];
	static char msg[1024];
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: jitprof-anon-host LIBRARY [NAME]\n");
		return 2;
	}
	const char *shown = argv[argc - 1];
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	const char *why = NULL;
	if (!lib) {
		why = dlerror();
	} else {
		const uint32_t *version = dlsym(lib, "jitprof_anon_version");
		claim_fn = (jitprof_anon_claim_fn *)dlsym(lib, "jitprof_anon_claim");
		resolve_fn = (jitprof_anon_resolve_fn *)dlsym(lib, "jitprof_anon_resolve");
		close_fn = (jitprof_anon_close_fn *)dlsym(lib, "jitprof_anon_close");
		if (!version || !claim_fn || !resolve_fn || !close_fn)
			why = "the library lacks jitprof_anon_version, jitprof_anon_claim, jitprof_anon_resolve or jitprof_anon_close";
		else if (*version != JITPROF_ANON_VERSION) {
			snprintf(msg, sizeof msg, "the library is of interface version %u, this host of %u", *version, JITPROF_ANON_VERSION);
			why = msg;
		}
	}
	struct jitprof_anon_query *qs = calloc(MAX_BATCH, sizeof *qs);
	char *names = malloc((size_t)MAX_BATCH * NAME_LEN);
	if (!qs || !names) {
		fprintf(stderr, "jitprof-anon-host: out of memory\n");
		return 1;
	}
	void *state = NULL;
	int claimed = 0;
	while (read_line(line, sizeof line)) {
		if (strncmp(line, "claim ", 6) == 0) {
			if (why) {
				printf("error ");
				clean(why);
				printf("\n");
				fflush(stdout);
				continue;
			}
			struct jitprof_anon_process p = {0};
			char root[MAX_LINE], comm[MAX_LINE];
			if (sscanf(line + 6, "%" SCNd32 " %" SCNd32 " %" SCNd32 " %65535s %65535s", &p.pid, &p.nspid, &p.uid, root, comm) != 5) {
				printf("error malformed claim\n");
				fflush(stdout);
				continue;
			}
			unescape(root);
			unescape(comm);
			p.root = root;
			p.comm = comm;
			msg[0] = 0;
			int r = claim_fn(&p, &state, msg, sizeof msg);
			if (r == JITPROF_ANON_CLAIMED) {
				claimed = 1;
				printf("yes ");
				clean(shown);
				printf("\n");
			} else if (r == JITPROF_ANON_NOT_MINE) {
				printf("no\n");
			} else {
				printf("error ");
				clean(msg[0] ? msg : "the handler failed to claim the process");
				printf("\n");
			}
		} else if (strncmp(line, "resolve ", 8) == 0) {
			size_t n = strtoul(line + 8, NULL, 10);
			if (n == 0 || n > MAX_BATCH) {
				printf("error bad resolve count\n");
				fflush(stdout);
				continue;
			}
			for (size_t i = 0; i < n; i++) {
				if (!read_line(line, sizeof line))
					return 1;
				memset(&qs[i], 0, sizeof qs[i]);
				qs[i].name = names + i * NAME_LEN;
				qs[i].name[0] = 0;
				qs[i].name_len = NAME_LEN;
				if (sscanf(line, "%" SCNx64 " %" SCNu64, &qs[i].addr, &qs[i].time) != 2)
					qs[i].addr = 0;
			}
			msg[0] = 0;
			if (!claimed || resolve_fn(state, qs, n, msg, sizeof msg) != 0) {
				printf("error ");
				clean(claimed ? (msg[0] ? msg : "the handler failed to resolve") : "resolve before a claim");
				printf("\n");
				fflush(stdout);
				continue;
			}
			for (size_t i = 0; i < n; i++) {
				if (qs[i].size == 0 || !qs[i].name[0]) {
					printf("none\n");
					continue;
				}
				qs[i].name[NAME_LEN - 1] = 0;
				printf("ok %" PRIx64 " %" PRIx64 " %" PRIu64 " ", qs[i].start, qs[i].size, qs[i].gen);
				clean(qs[i].name);
				printf("\n");
			}
		} else if (strcmp(line, "quit") == 0) {
			break;
		} else {
			printf("error unknown request\n");
		}
		fflush(stdout);
	}
	if (claimed)
		close_fn(state);
	fflush(stdout);
	return 0;
}

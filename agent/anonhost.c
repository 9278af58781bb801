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
 *
 * A library of interface version 1 gets protocol version 1: the claim as
 * it comes. For one of version 2 the host answers a claim with
 * "protocol 2", reads the details jitprof then sends (executable, time
 * range, JIT data as inherited descriptors) and passes them to the
 * library's claim; its answers may carry source positions.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "jitprof_anon.h"

#define MAX_LINE 65536
#define MAX_BATCH 4096
#define NAME_LEN 4096
#define MAX_DATA 16

static jitprof_anon_claim_fn *claim_fn;
static jitprof_anon_resolve_fn *resolve_fn;
static jitprof_anon_close_fn *close_fn;
static uint32_t lib_version;

/* clean writes s to stdout with control bytes and newlines replaced, so
 * that a library's message or name cannot break the protocol. */
static void clean(const char *s) {
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
}

/* escape writes s to stdout as a protocol field: "-" for "", %XX for '%',
 * space, control bytes, DEL and a lone "-". */
static void escape(const char *s) {
	if (!*s || strcmp(s, "-") == 0) {
		fputs(*s ? "%2D" : "-", stdout);
		return;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= 0x20 || c == 0x7f || c == '%')
			printf("%%%02X", c);
		else
			putchar(c);
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

/* The details of a claim of protocol version 2, valid until the next. */
static char exe[MAX_LINE];
static struct jitprof_anon_data data[MAX_DATA];
static char data_strs[MAX_DATA][3][MAX_LINE / 4];

/* read_details reads the lines jitprof sends after "protocol 2", up to
 * "end", into p. Lines of later versions are skipped. 0 at end of input. */
static int read_details(char *line, struct jitprof_anon_process *p) {
	p->version = JITPROF_ANON_VERSION;
	p->exe = exe;
	exe[0] = 0;
	p->data = data;
	p->ndata = 0;
	for (;;) {
		if (!read_line(line, MAX_LINE))
			return 0;
		if (strcmp(line, "end") == 0)
			return 1;
		if (strncmp(line, "exe ", 4) == 0) {
			snprintf(exe, sizeof exe, "%s", line + 4);
			unescape(exe);
		} else if (strncmp(line, "range ", 6) == 0) {
			if (sscanf(line + 6, "%" SCNu64 " %" SCNu64, &p->time_from, &p->time_to) != 2)
				p->time_from = p->time_to = 0;
		} else if (strncmp(line, "data ", 5) == 0 && p->ndata < MAX_DATA && strlen(line) < MAX_LINE / 4) {
			/* A line longer than a field holds names a path past
			 * PATH_MAX: skipped rather than cut. */
			char (*s)[MAX_LINE / 4] = data_strs[p->ndata];
			char from[16];
			struct jitprof_anon_data *d = &data[p->ndata];
			if (sscanf(line + 5, "%16383s %15s %16383s %" SCNu64 " %16383s", s[0], from, s[1], &d->size, s[2]) != 5)
				continue;
			for (int i = 0; i < 3; i++)
				unescape(s[i]);
			d->kind = s[0];
			d->path = s[1];
			d->origin = s[2];
			d->embedded = strcmp(from, "recording") == 0;
			p->ndata++;
		}
	}
}

/* resolve answers one batch of n queries, read from stdin. */
static int resolve(void *state, int claimed, size_t n, char *line, char *msg, size_t msg_len) {
	static struct jitprof_anon_query qs[MAX_BATCH];
	static struct jitprof_anon_query_v1 qs1[MAX_BATCH];
	static char names[MAX_BATCH][NAME_LEN], files[MAX_BATCH][NAME_LEN];
	for (size_t i = 0; i < n; i++) {
		if (!read_line(line, MAX_LINE))
			return 0;
		memset(&qs[i], 0, sizeof qs[i]);
		qs[i].name = names[i];
		qs[i].name[0] = 0;
		qs[i].name_len = NAME_LEN;
		qs[i].file = files[i];
		qs[i].file[0] = 0;
		qs[i].file_len = NAME_LEN;
		if (sscanf(line, "%" SCNx64 " %" SCNu64, &qs[i].addr, &qs[i].time) != 2)
			qs[i].addr = 0;
		qs1[i] = (struct jitprof_anon_query_v1){qs[i].addr, qs[i].time, 0, 0, 0, qs[i].name, NAME_LEN};
	}
	msg[0] = 0;
	int r = -1;
	if (claimed && lib_version == 1) {
		r = resolve_fn(state, (struct jitprof_anon_query *)qs1, n, msg, msg_len);
		for (size_t i = 0; i < n; i++) {
			qs[i].start = qs1[i].start;
			qs[i].size = qs1[i].size;
			qs[i].gen = qs1[i].gen;
		}
	} else if (claimed) {
		r = resolve_fn(state, qs, n, msg, msg_len);
	}
	if (r != 0) {
		printf("error ");
		clean(claimed ? (msg[0] ? msg : "the handler failed to resolve") : "resolve before a claim");
		printf("\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (qs[i].size == 0 || !names[i][0]) {
			printf("none\n");
			continue;
		}
		names[i][NAME_LEN - 1] = 0;
		files[i][NAME_LEN - 1] = 0;
		if (lib_version >= 2 && files[i][0]) {
			printf("src %" PRIx64 " %" PRIx64 " %" PRIu64 " ", qs[i].start, qs[i].size, qs[i].gen);
			escape(files[i]);
			printf(" %" PRIu32 " ", qs[i].line <= INT32_MAX ? qs[i].line : 0);
		} else {
			printf("ok %" PRIx64 " %" PRIx64 " %" PRIu64 " ", qs[i].start, qs[i].size, qs[i].gen);
		}
		clean(names[i]);
		printf("\n");
	}
	return 1;
}

int main(int argc, char **argv) {
	static char line[MAX_LINE];
	static char msg[1024];
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: jitprof-anon-host LIBRARY [NAME]\n");
		return 2;
	}
	/* jitprof runs this file through the descriptor it checked
	 * (/proc/self/fd/N), which the kernel makes the process's name: give
	 * ps and top the executable's. */
	prctl(PR_SET_NAME, "jitprof-anon-host", 0, 0, 0);
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
		if (!version || !claim_fn || !resolve_fn || !close_fn) {
			why = "the library lacks jitprof_anon_version, jitprof_anon_claim, jitprof_anon_resolve or jitprof_anon_close";
		} else if (*version < 1 || *version > JITPROF_ANON_VERSION) {
			snprintf(msg, sizeof msg, "the library is of interface version %" PRIu32 ", this host of 1 to %u: use a host built with the library's jitprof_anon.h or later",
			         *version, JITPROF_ANON_VERSION);
			why = msg;
		} else {
			lib_version = *version;
		}
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
			static char root[MAX_LINE], comm[MAX_LINE];
			if (claimed || sscanf(line + 6, "%" SCNd32 " %" SCNd32 " %" SCNd32 " %65535s %65535s", &p.pid, &p.nspid, &p.uid, root, comm) != 5) {
				printf("error %s\n", claimed ? "a second claim" : "malformed claim");
				fflush(stdout);
				continue;
			}
			unescape(root);
			unescape(comm);
			p.root = root;
			p.comm = comm;
			if (lib_version >= 2) {
				/* jitprof answers with the session's version and the
				 * details, which the claim needs. */
				printf("protocol %u\n", JITPROF_ANON_VERSION);
				fflush(stdout);
				if (!read_details(line, &p))
					return 1;
			}
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
			} else if (!resolve(state, claimed, n, line, msg, sizeof msg)) {
				return 1;
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

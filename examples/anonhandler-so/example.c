/*
 * An example anonymous-sample handler library for jitprof (the interface
 * of agent/jitprof_anon.h), the counterpart of examples/anonhandler:
 * built as libjitprof-anon-example.so, it is used with `jitprof report
 * --anon-samples --anon-handler=example`.
 *
 * It claims a process when $ANONHANDLER_DIR (default /tmp) holds
 * jitsyms-PID.txt, lines "NAME START SIZE [FILE LINE]" (START and SIZE in
 * hexadecimal; FILE and LINE the source of the code, optional) that a toy
 * JIT wrote, and names addresses by those ranges, without times, with
 * their source positions (interface version 2).
 *
 * Another user can write /tmp, and can put a symlink, a FIFO, a hard link
 * or a file of their own where the JIT's file should be: open_own opens
 * the file as a handler should, never through a symlink, never blocking,
 * and only a regular file of the process's user with one link. When
 * jitprof runs as root it runs the host as that user, without privileges;
 * these checks keep the handler honest as root's too.
 *
 *   gcc -shared -fPIC -I../../agent -o libjitprof-anon-example.so example.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jitprof_anon.h"

const uint32_t jitprof_anon_version = JITPROF_ANON_VERSION;

struct sym {
	uint64_t start, size;
	char *name, *file; /* file NULL without a source position */
	uint32_t line;
};

struct map {
	struct sym *syms;
	size_t n;
};

/* The largest symbol file read. */
#define MAX_FILE (64 << 20)

/* open_own opens path for reading if it is a regular file of uid's with
 * one link, reached without following a symlink at its end (O_NOFOLLOW)
 * and without blocking on a FIFO (O_NONBLOCK). It returns NULL when there
 * is no file, and NULL with msg set (never quoting the file) when there is
 * one it refuses or cannot read. */
static FILE *open_own(const char *path, uid_t uid, char *msg, size_t msg_len) {
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			snprintf(msg, msg_len, "refusing %s: a symlink", path);
		else if (errno != ENOENT)
			snprintf(msg, msg_len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = "cannot stat it";
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != uid)
		why = "not owned by the process's user";
	else if (st.st_nlink != 1)
		why = "more than one link";
	else if (st.st_size > MAX_FILE)
		why = "too large";
	FILE *f = why ? NULL : fdopen(fd, "r");
	if (!f) {
		snprintf(msg, msg_len, "refusing %s: %s", path, why ? why : "out of memory");
		close(fd);
	}
	return f;
}

int jitprof_anon_claim(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len) {
	const char *dir = getenv("ANONHANDLER_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/jitsyms-%d.txt", dir && *dir ? dir : "/tmp", p->pid);
	/* The process's user; -1 when jitprof does not know it: then only
	 * this handler's own user's files are read. */
	msg[0] = 0;
	FILE *f = open_own(path, p->uid >= 0 ? (uid_t)p->uid : geteuid(), msg, msg_len);
	if (!f)
		return msg[0] ? JITPROF_ANON_ERROR : JITPROF_ANON_NOT_MINE;
	struct map *m = calloc(1, sizeof *m);
	size_t cap = 0;
	char buf[4096], name[1024], file[1024];
	uint64_t start, size;
	uint32_t line;
	while (m && fgets(buf, sizeof buf, f)) {
		int k = sscanf(buf, "%1023s %" SCNx64 " %" SCNx64 " %1023s %" SCNu32, name, &start, &size, file, &line);
		if (k < 3)
			continue;
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
		m->syms[m->n++] = (struct sym){start, size, strdup(name), k == 5 ? strdup(file) : NULL, k == 5 ? line : 0};
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
				if (s->file) {
					snprintf(q[i].file, q[i].file_len, "%s", s->file);
					q[i].line = s->line;
				}
				break;
			}
		}
	}
	return 0;
}

void jitprof_anon_close(void *state) {
	struct map *m = state;
	for (size_t i = 0; i < m->n; i++) {
		free(m->syms[i].name);
		free(m->syms[i].file);
	}
	free(m->syms);
	free(m);
}

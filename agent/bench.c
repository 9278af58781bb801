/*
 * jitlog_bench - what the agent costs a JIT, in one run beside the usual
 * alternative, a perf jitdump record written with one write(2) each.
 * Figures are the median (and 99th percentile) over batches of 64 calls of
 * the mean time per call, as one thread saw it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "jitlog.h"

#define THREADS 4
#define BATCH 64
#define BATCHES 4096 /* per thread */

static jitlog_t *jl;
static int jd_fd;
static const char name64[] = "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void op_clock(void) { (void)now(); }
#if defined(__x86_64__)
static void op_tsc(void) { (void)__rdtsc(); }
#endif
static void op_load(void) { jitlog_code_load(jl, 0x1000, 64, name64, NULL); }
static void op_enter(void) { jitlog_enter(jl, 7); }
static void op_exit(void) { jitlog_exit(jl); }

/* The same load as a jitdump JIT_CODE_LOAD record: prefix, pid, tid, vma,
 * code_addr, code_size, code_index, name, 64 code bytes. */
static void op_jitdump(void)
{
	static _Atomic uint64_t index;
	unsigned char rec[16 + 40 + sizeof name64 + 64] = {0};
	uint32_t id = 0, size = sizeof rec, pid = (uint32_t)getpid(), tid = (uint32_t)syscall(SYS_gettid);
	uint64_t t = now(), addr = 0x1000, csize = 64, idx = ++index;
	memcpy(rec, &id, 4);
	memcpy(rec + 4, &size, 4);
	memcpy(rec + 8, &t, 8);
	memcpy(rec + 16, &pid, 4);
	memcpy(rec + 20, &tid, 4);
	memcpy(rec + 24, &addr, 8);
	memcpy(rec + 32, &addr, 8);
	memcpy(rec + 40, &csize, 8);
	memcpy(rec + 48, &idx, 8);
	memcpy(rec + 56, name64, sizeof name64);
	if (write(jd_fd, rec, sizeof rec) != (ssize_t)sizeof rec)
		perror("write"), exit(1);
}

struct run {
	void (*op)(void);
	double *means;
};

static void *worker(void *arg)
{
	struct run *r = arg;
	for (int b = 0; b < BATCHES; b++) {
		uint64_t t0 = now();
		for (int i = 0; i < BATCH; i++)
			r->op();
		r->means[b] = (double)(now() - t0) / BATCH;
	}
	return NULL;
}

static void measure(const char *what, void (*op)(void), int threads)
{
	pthread_t th[THREADS];
	struct run runs[THREADS];
	double *all = malloc(sizeof(double) * BATCHES * threads);
	for (int t = 0; t < threads; t++) {
		runs[t] = (struct run){op, all + t * BATCHES};
		pthread_create(&th[t], NULL, worker, &runs[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	int n = BATCHES * threads;
	qsort(all, n, sizeof *all, cmp);
	printf("%-40s %d thread%s  p50 %7.1f ns  p99 %8.1f ns\n", what, threads,
	       threads > 1 ? "s" : " ", all[n / 2], all[n * 99 / 100]);
	free(all);
}

int main(void)
{
	char dir[] = "/tmp/jitlog-bench-XXXXXX";
	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	setenv("JITPROF_JITLOG_DIR", dir, 0);
	jl = jitlog_open(NULL, "bench");
	if (!jl)
		return perror("jitlog_open"), 1;
	char path[4200];
	snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
	jd_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (jd_fd < 0)
		return perror(path), 1;

	measure("jitlog code load (64-byte name)", op_load, 1);
	measure("jitlog code load (64-byte name)", op_load, THREADS);
	measure("jitdump code load, write(2) each", op_jitdump, 1);
	measure("jitdump code load, write(2) each", op_jitdump, THREADS);
	measure("clock_gettime(CLOCK_MONOTONIC) alone", op_clock, 1);
#if defined(__x86_64__)
	measure("rdtsc alone", op_tsc, 1);
#endif
	measure("jitlog enter", op_enter, 1);
	measure("jitlog exit", op_exit, 1);
	measure("jitlog enter", op_enter, THREADS);

	char db[4200];
	snprintf(db, sizeof db, "%s", jitlog_path(jl));
	jitlog_close(jl);
	close(jd_fd);
	unlink(db);
	unlink(path);
	rmdir(dir);
	return 0;
}

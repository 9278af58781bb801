/*
 * testjit - a tiny JIT for the jitlog agent test. It generates functions
 * returning a constant into executable memory, runs them, re-generates
 * different code at the same address, moves and frees code, and logs all
 * of it with the agent, also from several threads at once. It prints what
 * it logged, one line each, for the Go test to compare with the database.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jitlog.h"

static jitlog_t *jl;

/* Emits "return v" at p and returns its length. */
static size_t emit_return(unsigned char *p, uint32_t v)
{
#if defined(__x86_64__) || defined(__i386__)
	p[0] = 0xb8; /* mov eax, imm32 */
	memcpy(p + 1, &v, 4);
	p[5] = 0xc3; /* ret */
	return 6;
#elif defined(__aarch64__)
	uint32_t ins[2] = {0x52800000u | ((v & 0xffff) << 5), 0xd65f03c0u}; /* mov w0, #v; ret */
	memcpy(p, ins, 8);
	return 8;
#else
#error "testjit knows x86 and arm64"
#endif
}

static unsigned char *region(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* Generates "return v" at p, logs it, runs it inside enter/exit. */
static uint64_t jit(unsigned char *p, uint32_t v, const char *name)
{
	mprotect(p, 4096, PROT_READ | PROT_WRITE);
	size_t n = emit_return(p, v);
	mprotect(p, 4096, PROT_READ | PROT_EXEC);
	__builtin___clear_cache((char *)p, (char *)p + n);
	static const char *files[] = {"gen.c", "other.js"};
	struct jitlog_line lines[] = {{0, 0, v}, {(uint32_t)n - 1, 1, v + 1}};
	struct jitlog_bytecode bc[] = {{0, v * 2}};
	struct jitlog_load_extra x = {p, files, 2, lines, 2, bc, 1};
	uint64_t seq = jitlog_code_load(jl, (uintptr_t)p, n, name, &x);
	if (!seq) {
		perror("jitlog_code_load");
		exit(1);
	}
	if (jitlog_enter(jl, seq) < 0)
		perror("jitlog_enter"), exit(1);
	int got = ((int (*)(void))p)();
	if (jitlog_exit(jl) < 0)
		perror("jitlog_exit"), exit(1);
	printf("load %" PRIu64 " %" PRIxPTR " %zu %s %d\n", seq, (uintptr_t)p, n, name, got);
	return seq;
}

#define THREADS 4
#define PER_THREAD 500

static void *worker(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	uint64_t *seqs = malloc(PER_THREAD * sizeof *seqs);
	for (int i = 0; i < PER_THREAD; i++) {
		char name[64];
		snprintf(name, sizeof name, "t%u-%d", (unsigned)t, i);
		seqs[i] = jitlog_code_load(jl, 0x100000 * (t + 1) + (uint64_t)i * 16, 16, name, NULL);
		if (!seqs[i])
			perror("jitlog_code_load"), exit(1);
	}
	return seqs;
}

int main(void)
{
	jl = jitlog_open(NULL, "testjit");
	if (!jl) {
		perror("jitlog_open");
		return 1;
	}
	printf("open %s\n", jitlog_path(jl));
	unsigned char *a = region(), *b = region();
	uint64_t s1 = jit(a, 1, "answer");
	jit(a, 2, "answer"); /* same address, same name, new code */
	jit(a, 3, "other");
	if (jitlog_code_unload(jl, s1) < 0)
		return perror("unload"), 1;
	printf("unload %" PRIu64 "\n", s1);
	uint64_t s4 = jit(b, 4, "mover");
	mprotect(a, 4096, PROT_READ | PROT_WRITE);
	memcpy(a, b, 16); /* a moving collector moves code */
	mprotect(a, 4096, PROT_READ | PROT_EXEC);
	if (jitlog_code_move(jl, s4, (uintptr_t)b, (uintptr_t)a) < 0)
		return perror("move"), 1;
	printf("move %" PRIu64 " %" PRIxPTR " %" PRIxPTR " %d\n", s4, (uintptr_t)b, (uintptr_t)a, ((int (*)(void))a)());
	/* Its unwinding information: a CIE alone (CFA rsp+8, return address
	 * at CFA-8), which the reader must return byte for byte. */
	static const unsigned char eh[] = {0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
	if (jitlog_code_unwind(jl, s4, eh, sizeof eh) < 0)
		return perror("unwind"), 1;

	pthread_t th[THREADS];
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < THREADS; t++) {
		uint64_t *seqs;
		pthread_join(th[t], (void **)&seqs);
		for (int i = 0; i < PER_THREAD; i++)
			printf("tload %" PRIu64 " t%d-%d\n", seqs[i], t, i);
		free(seqs);
	}
	if (jitlog_close(jl) < 0)
		return perror("jitlog_close"), 1;
	return 0;
}

/*
 * splitjit - a C JIT with a known split of CPU time, the C agent's
 * end-to-end test subject (cmd/jitprof/cagent_test.go).
 *
 * It generates x86-64 loops into two mmap'd pages (written, then made
 * executable: never both), and in every phase re-generates different code
 * under a new name at the same two addresses, unloading the old generation.
 * Each call runs inside jitlog_enter/jitlog_exit and is timed with the
 * thread's CPU clock; calls go to whichever generation is furthest behind
 * its share of the phase, so the split holds whatever the machine's load.
 * Call lengths are random: a regular pattern of calls aliases with the
 * sampling period and biases the profile by several points.
 *
 *	splitjit TRUTH [CPU_MS]
 *
 * runs until the JIT code has used CPU_MS (default 1500) of CPU time, then
 * writes the measured split as JSON lines to TRUTH:
 *
 *	{"pid":P,"name":"N","seq":S,"cpu_ns":T,"percent":X}
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "jitlog.h"

#if !defined(__x86_64__)
#error "splitjit generates x86-64 code"
#endif

#define PAGE 4096
#define PHASES 3
#define REGIONS 2
#define ITERS 200000 /* mean loop trips per call of the 1-add loop: ~100 us, so the CPU clock, a system call, costs under 2% */

struct gen {
	char name[32];
	uint64_t seq;
	uint64_t cpu_ns;
};

/* Per cent of each phase's JIT time that region 0 gets; region 1 the rest. */
static const int share0[PHASES] = {70, 25, 50};
static const char *const names[REGIONS][PHASES] = {
	{"adder", "mixer", "shifter"},
	{"counter", "rotator", "folder"},
};

static uint32_t xorshift(void)
{
	static uint32_t x = 2463534242u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Emits "int f(int n) { eax = n; do { k x (add rcx, imm8) } while (--eax); }"
 * at p: different bytes and lengths for every (region, phase).
 */
static size_t emit(unsigned char *p, int k, uint8_t imm)
{
	size_t n = 0;
	p[n++] = 0x89, p[n++] = 0xf8; /* mov eax, edi */
	size_t loop = n;
	for (int i = 0; i < k; i++)
		p[n++] = 0x48, p[n++] = 0x83, p[n++] = 0xc1, p[n++] = imm; /* add rcx, imm8 */
	p[n++] = 0xff, p[n++] = 0xc8; /* dec eax */
	p[n++] = 0x75;                /* jnz loop */
	p[n] = (unsigned char)(int8_t)(loop - (n + 1));
	n++;
	p[n++] = 0xc3; /* ret */
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: splitjit TRUTH [CPU_MS]\n");
		return 2;
	}
	uint64_t total = (argc == 3 ? strtoull(argv[2], NULL, 10) : 1500) * 1000000u;
	jitlog_t *jl = jitlog_open(NULL, "splitjit");
	if (!jl) {
		perror("jitlog_open");
		return 1;
	}
	unsigned char *code[REGIONS];
	for (int r = 0; r < REGIONS; r++) {
		code[r] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (code[r] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	struct gen gens[PHASES][REGIONS];
	uint64_t jit_ns = 0;
	for (int ph = 0; ph < PHASES; ph++) {
		for (int r = 0; r < REGIONS; r++) {
			struct gen *g = &gens[ph][r];
			if (ph > 0 && jitlog_code_unload(jl, gens[ph - 1][r].seq) < 0) {
				perror("jitlog_code_unload");
				return 1;
			}
			if (mprotect(code[r], PAGE, PROT_READ | PROT_WRITE) < 0) {
				perror("mprotect");
				return 1;
			}
			size_t n = emit(code[r], 1 + ph + r, (uint8_t)(16 * ph + r + 1));
			if (mprotect(code[r], PAGE, PROT_READ | PROT_EXEC) < 0) {
				perror("mprotect");
				return 1;
			}
			snprintf(g->name, sizeof g->name, "%s", names[r][ph]);
			struct jitlog_load_extra x = {.code = code[r]};
			g->seq = jitlog_code_load(jl, (uintptr_t)code[r], n, g->name, &x);
			if (!g->seq) {
				perror("jitlog_code_load");
				return 1;
			}
			g->cpu_ns = 0;
		}
		uint64_t phase_ns = 0, end = total * (uint64_t)(ph + 1) / PHASES;
		while (jit_ns < end) {
			/* The region furthest behind its share runs next. */
			int r = gens[ph][0].cpu_ns * 100 <= phase_ns * (uint64_t)share0[ph] ? 0 : 1;
			int (*f)(int) = (int (*)(int))(void *)code[r];
			if (jitlog_enter(jl, gens[ph][r].seq) < 0) {
				perror("jitlog_enter");
				return 1;
			}
			uint64_t t0 = cpu_ns();
			/*
			 * A loop of k dependent adds takes k times as long per
			 * trip: k divides the trips, so that every generation's
			 * calls take about as long, and no generation's share
			 * depends on how often the clock is read around it.
			 */
			int k = 1 + ph + r;
			f((ITERS / 2 + (int)(xorshift() % ITERS)) / k);
			uint64_t d = cpu_ns() - t0;
			if (jitlog_exit(jl) < 0) {
				perror("jitlog_exit");
				return 1;
			}
			gens[ph][r].cpu_ns += d;
			phase_ns += d;
			jit_ns += d;
		}
	}
	if (jitlog_close(jl) < 0) {
		perror("jitlog_close");
		return 1;
	}
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	for (int ph = 0; ph < PHASES; ph++)
		for (int r = 0; r < REGIONS; r++)
			fprintf(f, "{\"pid\":%d,\"name\":\"%s\",\"seq\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"percent\":%.3f}\n",
				(int)getpid(), gens[ph][r].name, gens[ph][r].seq, gens[ph][r].cpu_ns,
				100.0 * (double)gens[ph][r].cpu_ns / (double)jit_ns);
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}

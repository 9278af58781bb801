/* attack.c: the JIT-data attacks of issue 26 on root's daemon, run by an
 * unprivileged user (bench/daemon/attack.sh). Each mode runs JIT code in
 * an anonymous executable mapping, so the daemon's samples land in it and
 * it reads the process's JIT data, which the mode makes hostile:
 *
 *   flood N      /tmp/jit-PID.dump gains 150,000 loads at one address every
 *                2 s, up to N loads
 *   grow MB      /tmp/jit-PID.dump of MB megabytes, then one load every 200 ms
 *   sparse MB    /tmp/perf-PID.map of one line, made MB megabytes sparse
 *   rewrite      /tmp/perf-PID.map written anew every 100 ms, 5,000 lines
 *                of new names each time
 *   short        forever: a process every 50 ms that runs anonymous code
 *                for 5 ms and exits, with no JIT data
 *   spin         only runs the code (a child of short)
 *
 * Each spends a tenth of its time in its JIT code, and runs until killed.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned char *code;
/* mov rcx, rdi; 1: dec rcx; jnz 1b; ret */
static const unsigned char loop[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};

static uint64_t now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* run spends about ms milliseconds in the JIT code. */
static void run(int ms) {
	uint64_t end = now() + (uint64_t)ms * 1000000;
	while (now() < end)
		((void (*)(long))code)(200000);
}

/* pass lets ms milliseconds pass, a tenth of them in the JIT code: enough
 * for the daemon's samples to land there, little enough to leave a shared
 * machine its CPUs (the attack is the JIT data, not the CPU time). */
static void pass(int ms) {
	run(ms / 10);
	usleep(ms * 900);
}

static void jit(void) {
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memcpy(code, loop, sizeof loop);
}

static FILE *dump;

static void dump_open(void) {
	char path[64];
	snprintf(path, sizeof path, "/tmp/jit-%d.dump", (int)getpid());
	dump = fopen(path, "w");
	if (!dump) {
		perror(path);
		exit(1);
	}
	struct {
		uint32_t magic, version, size, mach, pad, pid;
		uint64_t time, flags;
	} h = {0x4A695444, 1, 40, 62, 0, (uint32_t)getpid(), now(), 0};
	fwrite(&h, sizeof h, 1, dump);
	fflush(dump);
}

/* load appends a CODE_LOAD of 16 bytes of code at addr. */
static void load(uint64_t addr, uint64_t index) {
	struct {
		uint32_t id, size;
		uint64_t time;
		uint32_t pid, tid;
		uint64_t vma, addr, size2, index;
		char name[2];
		unsigned char code[16];
	} __attribute__((packed)) r = {0, sizeof r, now(), (uint32_t)getpid(), (uint32_t)getpid(), addr, addr, 16, index, "f", {0}};
	memcpy(r.code, code, 16);
	fwrite(&r, sizeof r, 1, dump);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	long arg = argc > 2 ? atol(argv[2]) : 0;
	if (strcmp(mode, "short") == 0) {
		for (;;) {
			pid_t p = fork();
			if (p == 0) {
				execl("/proc/self/exe", argv[0], "spin", (char *)NULL);
				_exit(1);
			}
			usleep(50000);
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
	}
	jit();
	if (strcmp(mode, "spin") == 0) {
		run(5);
		return 0;
	}
	if (strcmp(mode, "flood") == 0) {
		dump_open();
		for (long n = 0;;) {
			if (n < arg) {
				for (int i = 0; i < 150000 && n < arg; i++, n++)
					load((uint64_t)code, n + 1);
				fflush(dump);
			}
			pass(2000);
		}
	}
	if (strcmp(mode, "grow") == 0) {
		dump_open();
		long n = 0;
		for (long bytes = 0; bytes < arg << 20; bytes += 74, n++)
			load((uint64_t)code + 0x20 + n % 64 * 16, n + 1);
		fflush(dump);
		for (;; n++) {
			load((uint64_t)code, n + 1);
			fflush(dump);
			pass(200);
		}
	}
	char map[64], tmp[80];
	snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
	snprintf(tmp, sizeof tmp, "%s.tmp", map);
	if (strcmp(mode, "sparse") == 0) {
		FILE *f = fopen(map, "w");
		if (!f) {
			perror(map);
			return 1;
		}
		fprintf(f, "%lx %zx jit_spin\n", (unsigned long)code, sizeof loop);
		fclose(f);
		if (truncate(map, arg << 20) != 0) {
			perror("truncate");
			return 1;
		}
		for (;;)
			pass(1000);
	}
	if (strcmp(mode, "rewrite") == 0) {
		for (long gen = 0;; gen++) {
			FILE *f = fopen(tmp, "w");
			if (!f) {
				perror(tmp);
				return 1;
			}
			for (int i = 0; i < 5000; i++)
				fprintf(f, "%lx 10 attacker_function_of_generation_%ld_number_%d\n", (unsigned long)code + 16 * (i % 256), gen, i);
			fclose(f);
			rename(tmp, map);
			pass(100);
		}
	}
	return 2;
}

// Test subject: static functions, an inlined function, PLT calls to libc.
// "prog maps" prints its functions' run-time addresses and its mappings.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WITH_LIB
void lib_addrs(void **helper, void **entry);
int lib_entry(int);
#endif

static inline int square(int x) {
	return x * x + 1;
}

static int __attribute__((noinline)) leaf(int x) {
	volatile int v = x;
	return v * 3;
}

static int __attribute__((noinline)) compute(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i) ^ leaf(i);
	return s;
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "maps") == 0) {
		printf("leaf %p\ncompute %p\nmain %p\n", (void *)leaf, (void *)compute, (void *)main);
#ifdef WITH_LIB
		void *h, *e;
		lib_addrs(&h, &e);
		printf("lib_helper %p\nlib_entry %p\n", h, e);
#endif
		FILE *f = fopen("/proc/self/maps", "r");
		char line[4096];
		while (f && fgets(line, sizeof line, f))
			printf("map %s", line);
		return 0;
	}
	int r = compute(argc * 1000);
#ifdef WITH_LIB
	r += lib_entry(r);
#endif
	puts(argv[0]);
	return r & 1 ? EXIT_SUCCESS : atoi("0");
}

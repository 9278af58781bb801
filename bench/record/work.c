/* A CPU-bound workload for the recorder benchmark: fixed work, one thread,
   frame pointers so -g walks whole stacks. argv[1] scales the work. */
#include <stdlib.h>
__attribute__((noinline)) double leaf(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
__attribute__((noinline)) double mid(long n) { return leaf(n) + leaf(n / 2); }
/* volatile, so the compiler can neither drop nor hoist the pure work. */
static volatile double sink;
static volatile long step = 1000000;
int main(int argc, char **argv) {
	long iters = argc > 1 ? atol(argv[1]) : 300;
	for (long k = 0; k < iters; k++) sink += mid(step);
	return 0;
}

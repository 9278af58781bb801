// A shared library for the load-bias test.
static int __attribute__((noinline)) lib_helper(int x) {
	volatile int v = x;
	return v + 7;
}

int lib_entry(int x) {
	return lib_helper(x) * 2;
}

void lib_addrs(void **helper, void **entry) {
	*helper = (void *)lib_helper;
	*entry = (void *)lib_entry;
}

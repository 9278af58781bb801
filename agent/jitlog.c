/*
 * jitlog.c - the jitlog database writer in plain C (docs/jitlog-format.md).
 * It mirrors jitlog/logger.go; the two must stay byte-compatible.
 */
#define _GNU_SOURCE
#include "jitlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "jitlog writes little-endian records by storing native words"
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define MAGIC "JITPLOG"
#define VERSION 2
#define HEADER_SIZE 128
#define CLOCK_ID 1
#define OFF_VERSION 8
#define OFF_HDRSIZE 12
#define OFF_PID 16
#define OFF_CLOCK 20
#define OFF_PAGESIZE 24
#define OFF_START 32
#define OFF_CREATED 40
#define OFF_MAXSIZE 48
#define OFF_APPEND 64
#define OFF_SEQ 72
#define OFF_CAPACITY 80
#define OFF_LOGGERID 88

#define COMMIT_TAG (0x4a4cu << 16)
#define K_LOAD 1
#define K_MOVE 2
#define K_UNLOAD 3
#define K_ENTER 4
#define K_EXIT 5
#define K_OPEN 6
#define K_CLOSE 7
#define K_PAD 8
#define K_CLOCK 9
#define K_ENTER_TSC 10
#define K_EXIT_TSC 11
#define K_UNWIND 12

#define LOAD_FIXED 64
#define MOVE_SIZE 48
#define UNLOAD_SIZE 32
#define UNWIND_FIXED 24
#define ENTER_SIZE 32
#define EXIT_SIZE 24
#define OPEN_FIXED 24
#define CLOSE_SIZE 24
#define CLOCK_SIZE 32
#define MAX_RECORD (64u << 20)

#define DEFAULT_MAX_SIZE (1ull << 30)
#define GROW_STEP (1ull << 20)
#define MAX_GROW_STEP (16ull << 20)

/* TSC calibration: two pairs CAL_FIRST_NS apart at open, then one when the
 * interval since the last has passed, doubling up to CAL_MAX_NS, so a
 * reader extrapolating from the last pair errs by about one pair's error. */
#define CAL_FIRST_NS 200000u
#define CAL_MAX_NS 100000000u

struct jitlog {
	int fd;
	unsigned char *mem;
	uint64_t max;
	uint32_t id;
	_Atomic uint64_t *append;
	_Atomic uint64_t *seq;
	_Atomic uint64_t *cap;
	pthread_mutex_t grow_mu;
	int tsc; /* enter/exit stamped with the TSC, not clock_gettime */
	double ticks_per_ns;
	uint64_t cal_ns;           /* current calibration interval */
	_Atomic uint64_t next_cal; /* TSC of the next calibration; ~0 while one runs */
	char path[PATH_MAX];
};

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static _Atomic uint32_t *word32(const jitlog_t *l, uint64_t off)
{
	return (_Atomic uint32_t *)(void *)(l->mem + off);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t tsc(void) { return __rdtsc(); }

/* The TSC is usable when the kernel itself keeps time with it: then it is
 * invariant and synchronised across CPUs. */
static int tsc_usable(void)
{
	char buf[16] = {0};
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n >= 3 && memcmp(buf, "tsc\n", 4) == 0;
}
#else
static inline uint64_t tsc(void) { return 0; }
static int tsc_usable(void) { return 0; }
#endif

/* A (TSC, CLOCK_MONOTONIC) pair: the clock read between two TSC reads,
 * the tightest of three tries, paired with their midpoint. */
static void clock_pair(uint64_t *t, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	*t = *ns = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t a = tsc(), n = now_ns(), b = tsc();
		if (b - a < best)
			best = b - a, *t = a + (b - a) / 2, *ns = n;
	}
}

static uint32_t thread_id(void)
{
	static __thread uint32_t tid;
	if (!tid)
		tid = (uint32_t)syscall(SYS_gettid);
	return tid;
}

/* Field 22 of /proc/self/stat: start time in ticks since boot. */
static int start_time(uint64_t *out)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return errno = EIO, -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return errno = EIO, -1;
	p++;
	for (int field = 2; field < 21; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return errno = EIO, -1;
	}
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

static int ensure_dir(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	if (lstat(dir, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return errno = EPERM, -1;
	return 0;
}

static void populate(unsigned char *mem, uint64_t from, uint64_t to)
{
	if (madvise(mem + from, to - from, MADV_POPULATE_WRITE) == 0)
		return;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	for (uint64_t p = from & ~(page - 1); p < to; p += page)
		atomic_fetch_add((_Atomic uint32_t *)(void *)(mem + p), 0);
}

static uint64_t ahead(uint64_t c)
{
	uint64_t a = c / 2;
	return a < MAX_GROW_STEP / 2 ? a : MAX_GROW_STEP / 2;
}

static void publish(jitlog_t *l, uint64_t off, uint32_t kind)
{
	atomic_store_explicit(word32(l, off + 4), COMMIT_TAG | kind, memory_order_release);
}

static int64_t reserve(jitlog_t *l, uint64_t n);

/* Logs a clock record, a (TSC, CLOCK_MONOTONIC) pair for this logger,
 * and returns the pair. */
static int log_clock(jitlog_t *l, uint64_t *t, uint64_t *ns)
{
	int64_t off = reserve(l, CLOCK_SIZE);
	if (off < 0)
		return -1;
	clock_pair(t, ns);
	unsigned char *b = l->mem + off;
	put64(b + 8, *t);
	put64(b + 16, *ns);
	put32(b + 24, l->id);
	publish(l, (uint64_t)off, K_CLOCK);
	return 0;
}

/* Recalibrates once the TSC passes next_cal; one thread wins the swap to
 * ~0 and does it, the others go on. An error leaves the old schedule. */
static void recalibrate(jitlog_t *l, uint64_t seen)
{
	uint64_t next = atomic_load_explicit(&l->next_cal, memory_order_relaxed);
	if (seen < next || !atomic_compare_exchange_strong(&l->next_cal, &next, UINT64_MAX))
		return;
	uint64_t t, ns;
	if (log_clock(l, &t, &ns) == 0 && l->cal_ns < CAL_MAX_NS)
		l->cal_ns *= 2;
	atomic_store_explicit(&l->next_cal, tsc() + (uint64_t)((double)l->cal_ns * l->ticks_per_ns), memory_order_relaxed);
}

/* Two clock records CAL_FIRST_NS apart, so a reader has a rate from the
 * start, then the recalibration schedule. */
static int start_tsc(jitlog_t *l)
{
	uint64_t t0, n0, t1, n1;
	if (log_clock(l, &t0, &n0) < 0)
		return -1;
	do
		clock_pair(&t1, &n1);
	while (n1 - n0 < CAL_FIRST_NS);
	if (log_clock(l, &t1, &n1) < 0)
		return -1;
	l->ticks_per_ns = (double)(t1 - t0) / (double)(n1 - n0);
	l->cal_ns = 2 * CAL_FIRST_NS;
	atomic_store(&l->next_cal, t1 + (uint64_t)((double)l->cal_ns * l->ticks_per_ns));
	l->tsc = 1;
	return 0;
}

/* Extends the file past off+n, faulting the new pages in before publishing
 * the capacity; wait=0 grows ahead and gives way to a grower at work. */
static int grow(jitlog_t *l, uint64_t off, uint64_t n, int wait)
{
	if (wait)
		pthread_mutex_lock(&l->grow_mu);
	else if (pthread_mutex_trylock(&l->grow_mu) != 0)
		return 0;
	int ret = 0;
	if (flock(l->fd, LOCK_EX) < 0) {
		ret = -1;
		goto out;
	}
	uint64_t end = off + n, cur = atomic_load(l->cap);
	if (end <= cur && (wait || end <= cur - ahead(cur)))
		goto unlock;
	if (cur < l->max) {
		uint64_t step = cur < GROW_STEP ? GROW_STEP : cur;
		if (step > MAX_GROW_STEP)
			step = MAX_GROW_STEP;
		uint64_t next = cur + step, need = (end + GROW_STEP - 1) & ~(GROW_STEP - 1);
		if (next < need)
			next = need;
		if (next > l->max)
			next = l->max;
		if (ftruncate(l->fd, (off_t)next) < 0) {
			ret = -1;
			goto unlock;
		}
		populate(l->mem, cur, next);
		atomic_store(l->cap, next);
	}
	if (end > l->max && wait) {
		if (off >= l->max) {
			errno = ENOSPC;
			ret = -1;
			goto unlock;
		}
		uint32_t zero = 0;
		if (atomic_compare_exchange_strong(word32(l, off), &zero, (uint32_t)(l->max - off))) {
			publish(l, off, K_PAD);
			uint64_t o = off;
			atomic_compare_exchange_strong(l->append, &o, l->max);
		}
	}
unlock:
	flock(l->fd, LOCK_UN);
out:
	pthread_mutex_unlock(&l->grow_mu);
	return ret;
}

/* Claims n bytes by compare-and-swap of the size word at the append
 * offset, so no claimed record lacks its size; see reserve in logger.go. */
static int64_t reserve(jitlog_t *l, uint64_t n)
{
	for (;;) {
		uint64_t off = atomic_load_explicit(l->append, memory_order_acquire);
		uint64_t c = atomic_load_explicit(l->cap, memory_order_acquire);
		if (off + n > c) {
			if (grow(l, off, n, 1) < 0)
				return -1;
			continue;
		}
		uint32_t zero = 0;
		_Atomic uint32_t *w = word32(l, off);
		if (atomic_compare_exchange_strong_explicit(w, &zero, (uint32_t)n, memory_order_acq_rel, memory_order_acquire)) {
			/* A plain store, not a second compare-and-swap (6 ns of
			 * enter's 30): a racing store may move the hint back, and
			 * the next claimers then help it forward again. */
			atomic_store_explicit(l->append, off + n, memory_order_release);
			if (off + n > c - ahead(c) && c < l->max)
				grow(l, off, n, 0);
			return (int64_t)off;
		}
		uint64_t o = off;
		atomic_compare_exchange_strong(l->append, &o, off + zero);
	}
}

static int attach(jitlog_t *l, uint64_t start, uint64_t max)
{
	struct stat st;
	unsigned char hb[HEADER_SIZE];
	if (fstat(l->fd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return errno = EPERM, -1;
	if (flock(l->fd, LOCK_EX) < 0)
		return -1;
	int ret = -1;
	uint32_t pid = (uint32_t)getpid();
	ssize_t n = pread(l->fd, hb, sizeof hb, 0);
	if (n < 0)
		goto out;
	int fresh = n < HEADER_SIZE || memcmp(hb, MAGIC, 8) != 0 ||
		    get32(hb + OFF_VERSION) != VERSION || get32(hb + OFF_HDRSIZE) != HEADER_SIZE ||
		    get32(hb + OFF_PID) != pid || get64(hb + OFF_START) != start ||
		    get64(hb + OFF_MAXSIZE) < GROW_STEP;
	if (fresh) {
		if (ftruncate(l->fd, 0) < 0 || ftruncate(l->fd, GROW_STEP) < 0)
			goto out;
	} else {
		max = get64(hb + OFF_MAXSIZE);
	}
	void *mem = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	if (mem == MAP_FAILED)
		goto out;
	l->mem = mem;
	l->max = max;
	l->append = (_Atomic uint64_t *)(void *)(l->mem + OFF_APPEND);
	l->seq = (_Atomic uint64_t *)(void *)(l->mem + OFF_SEQ);
	l->cap = (_Atomic uint64_t *)(void *)(l->mem + OFF_CAPACITY);
	if (fresh) {
		put32(l->mem + OFF_VERSION, VERSION);
		put32(l->mem + OFF_HDRSIZE, HEADER_SIZE);
		put32(l->mem + OFF_PID, pid);
		put32(l->mem + OFF_CLOCK, CLOCK_ID);
		put32(l->mem + OFF_PAGESIZE, (uint32_t)sysconf(_SC_PAGESIZE));
		put64(l->mem + OFF_START, start);
		put64(l->mem + OFF_CREATED, now_ns());
		put64(l->mem + OFF_MAXSIZE, max);
		populate(l->mem, 0, GROW_STEP);
		atomic_store(l->cap, GROW_STEP);
		atomic_store(l->append, HEADER_SIZE);
		/* Magic last: a reader never trusts a half-written header. */
		uint64_t magic;
		memcpy(&magic, MAGIC "\0", 8);
		atomic_store_explicit((_Atomic uint64_t *)(void *)l->mem, magic, memory_order_release);
	}
	ret = 0;
out:
	flock(l->fd, LOCK_UN);
	return ret;
}

jitlog_t *jitlog_open(const char *dir, const char *jit_name)
{
	char defdir[PATH_MAX];
	if (!dir || !*dir)
		dir = getenv("JITPROF_JITLOG_DIR");
	if (!dir || !*dir) {
		const char *tmp = getenv("TMPDIR");
		if (!tmp || !*tmp)
			tmp = "/tmp";
		snprintf(defdir, sizeof defdir, "%s/jitprof-%u", tmp, (unsigned)geteuid());
		dir = defdir;
	}
	if (!jit_name)
		jit_name = "";
	size_t name_len = strlen(jit_name);
	if (name_len > MAX_RECORD - OPEN_FIXED)
		return errno = E2BIG, NULL;
	if (ensure_dir(dir) < 0)
		return NULL;
	uint64_t start;
	if (start_time(&start) < 0)
		return NULL;
	jitlog_t *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	pthread_mutex_init(&l->grow_mu, NULL);
	if (snprintf(l->path, sizeof l->path, "%s/anon.%d", dir, (int)getpid()) >= (int)sizeof l->path) {
		free(l);
		return errno = ENAMETOOLONG, NULL;
	}
	l->fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (l->fd < 0) {
		free(l);
		return NULL;
	}
	if (attach(l, start, DEFAULT_MAX_SIZE) < 0) {
		int e = errno;
		close(l->fd);
		free(l);
		return errno = e, NULL;
	}
	l->id = atomic_fetch_add((_Atomic uint32_t *)(void *)(l->mem + OFF_LOGGERID), 1) + 1;
	uint64_t size = align8(OPEN_FIXED + name_len);
	int64_t off = reserve(l, size);
	if (off < 0) {
		int e = errno;
		munmap(l->mem, l->max);
		close(l->fd);
		free(l);
		return errno = e, NULL;
	}
	unsigned char *b = l->mem + off;
	put64(b + 8, now_ns());
	put32(b + 16, l->id);
	put32(b + 20, (uint32_t)name_len);
	memcpy(b + OPEN_FIXED, jit_name, name_len);
	publish(l, (uint64_t)off, K_OPEN);
	if (tsc_usable() && start_tsc(l) < 0) {
		int e = errno;
		jitlog_close(l);
		return errno = e, NULL;
	}
	return l;
}

uint64_t jitlog_code_load(jitlog_t *l, uint64_t addr, uint64_t size,
			  const char *name, const struct jitlog_load_extra *x)
{
	size_t name_len = strlen(name);
	uint64_t code_len = x && x->code ? size : 0;
	uint64_t n = LOAD_FIXED + align8(name_len) + align8(code_len);
	if (x) {
		uint64_t files = 0;
		for (uint32_t i = 0; i < x->nfiles; i++)
			files += 4 + strlen(x->files[i]);
		n += align8(files) + align8((uint64_t)x->nlines * 12) + (uint64_t)x->nbytecode * 8;
		for (uint32_t i = 0; i < x->nlines; i++)
			if (x->lines[i].file_index >= x->nfiles)
				return errno = EINVAL, 0;
	}
	if (n > MAX_RECORD)
		return errno = E2BIG, 0;
	int64_t off = reserve(l, n);
	if (off < 0)
		return 0;
	uint64_t seq = atomic_fetch_add(l->seq, 1) + 1;
	unsigned char *b = l->mem + off;
	put64(b + 8, seq);
	put64(b + 16, now_ns());
	put64(b + 24, addr);
	put64(b + 32, size);
	put32(b + 40, l->id);
	put32(b + 44, (uint32_t)name_len);
	uint64_t p = LOAD_FIXED;
	memcpy(b + p, name, name_len);
	p += align8(name_len);
	if (x) {
		put32(b + 48, (uint32_t)code_len);
		put32(b + 52, x->nfiles);
		put32(b + 56, x->nlines);
		put32(b + 60, x->nbytecode);
		if (code_len)
			memcpy(b + p, x->code, code_len);
		p += align8(code_len);
		uint64_t q = p;
		for (uint32_t i = 0; i < x->nfiles; i++) {
			uint32_t fl = (uint32_t)strlen(x->files[i]);
			put32(b + q, fl);
			memcpy(b + q + 4, x->files[i], fl);
			q += 4 + fl;
		}
		p = align8(q);
		for (uint32_t i = 0; i < x->nlines; i++, p += 12) {
			put32(b + p, x->lines[i].code_offset);
			put32(b + p + 4, x->lines[i].file_index);
			put32(b + p + 8, x->lines[i].line);
		}
		p = align8(p);
		for (uint32_t i = 0; i < x->nbytecode; i++, p += 8) {
			put32(b + p, x->bytecode[i].code_offset);
			put32(b + p + 4, x->bytecode[i].bytecode_offset);
		}
	}
	publish(l, (uint64_t)off, K_LOAD);
	return seq;
}

int jitlog_code_move(jitlog_t *l, uint64_t seq, uint64_t old_addr, uint64_t new_addr)
{
	int64_t off = reserve(l, MOVE_SIZE);
	if (off < 0)
		return -1;
	unsigned char *b = l->mem + off;
	put64(b + 8, seq);
	put64(b + 16, now_ns());
	put64(b + 24, old_addr);
	put64(b + 32, new_addr);
	put32(b + 40, l->id);
	publish(l, (uint64_t)off, K_MOVE);
	return 0;
}

int jitlog_code_unload(jitlog_t *l, uint64_t seq)
{
	int64_t off = reserve(l, UNLOAD_SIZE);
	if (off < 0)
		return -1;
	unsigned char *b = l->mem + off;
	put64(b + 8, seq);
	put64(b + 16, now_ns());
	put32(b + 24, l->id);
	publish(l, (uint64_t)off, K_UNLOAD);
	return 0;
}

int jitlog_code_unwind(jitlog_t *l, uint64_t seq, const void *eh_frame, uint64_t size)
{
	if (size > MAX_RECORD - UNWIND_FIXED)
		return errno = E2BIG, -1;
	uint64_t n = UNWIND_FIXED + align8(size);
	int64_t off = reserve(l, n);
	if (off < 0)
		return -1;
	unsigned char *b = l->mem + off;
	put64(b + 8, seq);
	put32(b + 16, l->id);
	put32(b + 20, (uint32_t)size);
	memcpy(b + UNWIND_FIXED, eh_frame, size);
	publish(l, (uint64_t)off, K_UNWIND);
	return 0;
}

/* Enter and exit stamp the raw TSC when it is usable: 7 ns where
 * clock_gettime takes 21; readers convert by the clock records. */
int jitlog_enter(jitlog_t *l, uint64_t seq)
{
	int64_t off = reserve(l, ENTER_SIZE);
	if (off < 0)
		return -1;
	unsigned char *b = l->mem + off;
	put64(b + 8, seq);
	put32(b + 24, thread_id());
	put32(b + 28, l->id);
	if (l->tsc) {
		uint64_t t = tsc();
		put64(b + 16, t);
		publish(l, (uint64_t)off, K_ENTER_TSC);
		recalibrate(l, t);
	} else {
		put64(b + 16, now_ns());
		publish(l, (uint64_t)off, K_ENTER);
	}
	return 0;
}

int jitlog_exit(jitlog_t *l)
{
	int64_t off = reserve(l, EXIT_SIZE);
	if (off < 0)
		return -1;
	unsigned char *b = l->mem + off;
	put32(b + 16, thread_id());
	put32(b + 20, l->id);
	if (l->tsc) {
		uint64_t t = tsc();
		put64(b + 8, t);
		publish(l, (uint64_t)off, K_EXIT_TSC);
		recalibrate(l, t);
	} else {
		put64(b + 8, now_ns());
		publish(l, (uint64_t)off, K_EXIT);
	}
	return 0;
}

int jitlog_close(jitlog_t *l)
{
	int ret = 0;
	int64_t off = reserve(l, CLOSE_SIZE);
	if (off >= 0) {
		unsigned char *b = l->mem + off;
		put64(b + 8, now_ns());
		put32(b + 16, l->id);
		publish(l, (uint64_t)off, K_CLOSE);
	} else {
		ret = -1;
	}
	int e = errno;
	if (munmap(l->mem, l->max) < 0 || close(l->fd) < 0)
		ret = -1, e = errno;
	pthread_mutex_destroy(&l->grow_mu);
	free(l);
	errno = e;
	return ret;
}

const char *jitlog_path(const jitlog_t *l) { return l->path; }

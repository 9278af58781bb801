/*
 * jitlog.h - C ABI of jitprof's JIT data logger.
 *
 * A JIT calls jitlog_code_load() every time it generates code; the logger
 * appends to this process's database, <dir>/anon.<pid>, which jitprof reads
 * while the JIT runs. The format is docs/jitlog-format.md, the same the Go
 * package github.com/jitprof/jitprof/jitlog writes; loggers of both kinds in
 * one process share the file and its sequence counter.
 *
 * Every function is thread-safe, except that jitlog_close() must not run
 * concurrently with other calls on the same logger. Functions returning int
 * return 0, or -1 with errno set.
 */
#ifndef JITPROF_JITLOG_H
#define JITPROF_JITLOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define JITLOG_API __attribute__((visibility("default")))
#else
#define JITLOG_API
#endif

typedef struct jitlog jitlog_t;

/* Maps generated code to a source line. */
struct jitlog_line {
	uint32_t code_offset; /* from the start of the code */
	uint32_t file_index;  /* into jitlog_load_extra.files */
	uint32_t line;
};

/* Maps generated code to a bytecode offset. */
struct jitlog_bytecode {
	uint32_t code_offset;
	uint32_t bytecode_offset;
};

/* Optional parts of a code load; any member may be NULL/0. */
struct jitlog_load_extra {
	const void *code; /* the generated code: `size` bytes */
	const char *const *files;
	uint32_t nfiles;
	const struct jitlog_line *lines;
	uint32_t nlines;
	const struct jitlog_bytecode *bytecode;
	uint32_t nbytecode;
};

/*
 * Opens this process's database in dir (NULL: $JITPROF_JITLOG_DIR, else
 * $TMPDIR/jitprof-<euid>, else /tmp/jitprof-<euid>), creating the directory
 * 0700 and refusing one that is a symlink, not ours, or writable by others.
 * jit_name (may be NULL) is logged in the logger-open record.
 * Returns NULL with errno set on failure.
 */
JITLOG_API jitlog_t *jitlog_open(const char *dir, const char *jit_name);

/*
 * Logs `size` bytes of code generated at addr, named name. Returns the new
 * sequence number (never 0; unique in the process, also when addr and name
 * repeat), or 0 with errno set.
 */
JITLOG_API uint64_t jitlog_code_load(jitlog_t *l, uint64_t addr, uint64_t size,
			  const char *name,
			  const struct jitlog_load_extra *extra);

/* The code of generation seq moved from old_addr to new_addr. */
JITLOG_API int jitlog_code_move(jitlog_t *l, uint64_t seq, uint64_t old_addr,
		     uint64_t new_addr);

/*
 * The unwinding information of the code of generation seq: an .eh_frame
 * of size bytes (CIEs and FDEs) whose FDE addresses are pc-relative,
 * counted from where the .eh_frame would be if it followed the code at
 * its first 8-byte boundary (the layout of perf's jitdump unwinding
 * records). jitprof's DWARF call graphs then unwind through the code.
 */
JITLOG_API int jitlog_code_unwind(jitlog_t *l, uint64_t seq, const void *eh_frame,
		       uint64_t size);

/* The code of generation seq was freed. */
JITLOG_API int jitlog_code_unload(jitlog_t *l, uint64_t seq);

/* The calling thread entered / left the code of generation seq. No locks,
 * no allocation; the thread id is cached per thread. */
JITLOG_API int jitlog_enter(jitlog_t *l, uint64_t seq);
JITLOG_API int jitlog_exit(jitlog_t *l);

/* Logs a logger-close record and frees l. The database stays. */
JITLOG_API int jitlog_close(jitlog_t *l);

/* The database's path, valid until jitlog_close. */
JITLOG_API const char *jitlog_path(const jitlog_t *l);

#ifdef __cplusplus
}
#endif

#endif

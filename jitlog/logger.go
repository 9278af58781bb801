package jitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// nanotime is the runtime's CLOCK_MONOTONIC clock (vDSO on Linux): the
// clock the recorder samples with, read without time.Now's extra wall-clock
// read. The runtime keeps this linkname working on purpose.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

const (
	// DefaultMaxSize bounds a database unless Options.MaxSize says otherwise.
	DefaultMaxSize = 1 << 30
	// growStep is the size of a new file and the least a writer grows it
	// by; steps double up to maxGrowStep.
	growStep    = 1 << 20
	maxGrowStep = 16 << 20
	// EnvDir names the environment variable that overrides the directory.
	EnvDir = "JITPROF_JITLOG_DIR"

	// TSC calibration: two clock records calFirst apart at open, then one
	// whenever the interval since the last has passed, doubling up to
	// calMax, so a reader extrapolating from the last pair errs by about
	// one pair's error.
	calFirst = 200_000
	calMax   = 100_000_000
)

// useTSC reports whether enter and exit stamp the TSC; tests turn it
// off. Asked once, at the first Open, not when the package initializes:
// every program that links jitlog (jitprof's own commands among them)
// would read sysfs at start-up.
var useTSC = sync.OnceValue(tscUsable)

// Options configure Open. The zero value is usable.
type Options struct {
	// Dir is where the database lives: default DefaultDir().
	Dir string
	// Name names the JIT in the logger-open record ("v8", "myjit").
	Name string
	// MaxSize bounds the database; default DefaultMaxSize. Only the
	// process's first logger sets it; later ones use the file's.
	MaxSize int64
	// Jitdump also writes perf's jitdump, jit-<pid>.dump, from the same
	// calls, and maps it once so perf record notices it.
	Jitdump bool
	// JitdumpDir is where jit-<pid>.dump goes: default Dir.
	JitdumpDir string
}

// Load carries the optional parts of a code load.
type Load struct {
	// Code is the generated machine code; perf annotate needs it.
	Code []byte
	// Files is the file-name table that Lines index.
	Files []string
	// Lines maps code offsets to source lines.
	Lines []LineEntry
	// Bytecode maps code offsets to bytecode offsets.
	Bytecode []BytecodeEntry
}

// A Logger appends to this process's database. It is safe for concurrent
// use by many goroutines, and several Loggers in one process (and the C
// agent's, in the same process) share one file and one sequence counter.
// Close must not run concurrently with other methods: it unmaps the file.
type Logger struct {
	path    string
	fd      int
	mem     []byte
	max     uint64
	id      uint32
	appendp *uint64
	seqp    *uint64
	capp    *uint64
	base    unsafe.Pointer // &mem[0]
	// mark is where reserve's fast path ends: the capacity less the grow
	// margin as last seen by the slow path, 0 before it ran and once
	// closed. The capacity only grows, so a stale mark is only too low.
	mark   atomic.Uint64
	growMu sync.Mutex
	closed atomic.Bool
	jd     *jitdump

	tsc        bool // enter and exit stamp the TSC
	ticksPerNs float64
	calNs      uint64        // current calibration interval
	nextCal    atomic.Uint64 // TSC of the next calibration; ^0 while one runs
}

// DefaultDir is $JITPROF_JITLOG_DIR, else /tmp/jitprof-<euid>.
func DefaultDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "jitprof-"+strconv.Itoa(os.Geteuid()))
}

// DatabasePath is the database of process pid in dir.
func DatabasePath(dir string, pid int) string {
	return filepath.Join(dir, "anon."+strconv.Itoa(pid))
}

// Open opens this process's database, creating it if this is the first
// logger of the process, and logs a logger-open record.
func Open(opts Options) (*Logger, error) {
	dir := opts.Dir
	if dir == "" {
		dir = DefaultDir()
	}
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	maxSize := uint64(DefaultMaxSize)
	if opts.MaxSize > 0 {
		maxSize = uint64(opts.MaxSize)
	}
	page := uint64(os.Getpagesize())
	maxSize = (maxSize + page - 1) &^ (page - 1)
	if maxSize < growStep {
		maxSize = growStep
	}
	pid := os.Getpid()
	start, _, err := linux.Host.Stat(pid)
	if err != nil {
		return nil, fmt.Errorf("jitlog: open: %w", err)
	}
	path := DatabasePath(dir, pid)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jitlog: open %s: %w", path, err)
	}
	l := &Logger{path: path, fd: fd}
	if err := l.attach(pid, start, maxSize, page); err != nil {
		unix.Close(fd)
		return nil, err
	}
	l.id = atomic.AddUint32((*uint32)(unsafe.Pointer(&l.mem[offLoggerID])), 1)
	if opts.Jitdump {
		jdir := opts.JitdumpDir
		if jdir == "" {
			jdir = dir
		}
		if l.jd, err = openJitdump(jdir, pid, uint64(nanotime())); err != nil {
			l.unmap()
			return nil, err
		}
	}
	if err := l.logOpen(opts.Name); err != nil {
		l.Close()
		return nil, err
	}
	if useTSC() {
		if err := l.startTSC(); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// attach checks the file, initialises its header unless it already belongs
// to this process, and maps it. flock guards only this and growth.
func (l *Logger) attach(pid int, start, maxSize, page uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return fmt.Errorf("jitlog: stat %s: %w", l.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("jitlog: refusing %s: not a regular file: %w", l.path, ErrUnsafe)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("jitlog: refusing %s: owned by uid %d, not %d: %w", l.path, st.Uid, os.Geteuid(), ErrUnsafe)
	}
	if err := unix.Flock(l.fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("jitlog: lock %s: %w", l.path, err)
	}
	defer unix.Flock(l.fd, unix.LOCK_UN)
	var hb [HeaderSize]byte
	n, err := unix.Pread(l.fd, hb[:], 0)
	if err != nil {
		return fmt.Errorf("jitlog: read %s: %w", l.path, err)
	}
	h, herr := decodeHeader(hb[:n])
	fresh := herr != nil || h.PID != uint32(pid) || h.StartTime != start || h.MaxSize < growStep
	if fresh {
		// A file left by a dead process that had our pid: start over.
		if err := unix.Ftruncate(l.fd, 0); err != nil {
			return fmt.Errorf("jitlog: truncate %s: %w", l.path, err)
		}
		if err := unix.Ftruncate(l.fd, growStep); err != nil {
			return fmt.Errorf("jitlog: grow %s: %w", l.path, err)
		}
	} else {
		maxSize = h.MaxSize
	}
	mem, err := unix.Mmap(l.fd, 0, int(maxSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("jitlog: map %s: %w", l.path, err)
	}
	l.mem, l.max, l.base = mem, maxSize, unsafe.Pointer(&mem[0])
	l.appendp = (*uint64)(unsafe.Pointer(&mem[offAppend]))
	l.seqp = (*uint64)(unsafe.Pointer(&mem[offSeq]))
	l.capp = (*uint64)(unsafe.Pointer(&mem[offCapacity]))
	if fresh {
		le.PutUint32(mem[offVersion:], Version)
		le.PutUint32(mem[offHdrSize:], HeaderSize)
		le.PutUint32(mem[offPID:], uint32(pid))
		le.PutUint32(mem[offClock:], ClockMonotonic)
		le.PutUint32(mem[offPageSize:], uint32(page))
		le.PutUint64(mem[offStartTime:], start)
		le.PutUint64(mem[offCreated:], uint64(nanotime()))
		le.PutUint64(mem[offMaxSize:], maxSize)
		populate(mem, 0, growStep)
		atomic.StoreUint64(l.capp, growStep)
		atomic.StoreUint64(l.appendp, HeaderSize)
		// Magic last: a reader never trusts a half-written header.
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[offMagic])), le.Uint64([]byte(Magic)))
	}
	return nil
}

// Path is the database file.
func (l *Logger) Path() string { return l.path }

// ID is this logger's id within the process's database.
func (l *Logger) ID() uint32 { return l.id }

// reserve claims n bytes (a multiple of 8) at the append offset. The claim
// is the compare-and-swap of the record's size word from 0 to n, so no
// reserved record ever lacks its size: a writer killed at any point leaves
// a record readers can step over. The append offset is only a hint that
// claimers move on, helping each other, so it never needs to be exact: the
// winner moves it with one store (storeHint) rather than a second
// compare-and-swap, and should a racing store move it back, the next
// claimers find the size words there taken and help it forward again.
func (l *Logger) reserve(n uint64) (uint64, error) {
	if off, ok := l.claim(n); ok {
		return off, nil
	}
	return l.reserveSlow(n)
}

// claim is reserve's common case, small enough to inline into Enter and
// Exit: an uncontended claim below the mark, which is within the file.
func (l *Logger) claim(n uint64) (uint64, bool) {
	m := l.mark.Load()
	if m == 0 {
		return 0, false // perhaps closed: the file is no longer mapped
	}
	off := atomic.LoadUint64(l.appendp)
	if off+n <= m && atomic.CompareAndSwapUint32((*uint32)(unsafe.Add(l.base, off)), 0, uint32(n)) {
		storeHint(l.appendp, off+n)
		return off, true
	}
	return 0, false
}

// reserveSlow is reserve's loop: contention, growth, a closed logger.
func (l *Logger) reserveSlow(n uint64) (uint64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	for {
		off := atomic.LoadUint64(l.appendp)
		c := atomic.LoadUint64(l.capp)
		if off+n > c {
			if err := l.grow(off, n, true); err != nil {
				return 0, err
			}
			continue
		}
		w := (*uint32)(unsafe.Pointer(&l.mem[off]))
		if atomic.CompareAndSwapUint32(w, 0, uint32(n)) {
			storeHint(l.appendp, off+n)
			if off+n > c-ahead(c) && c < l.max {
				// Grow before anyone must wait; an error here reaches the
				// writer that finds the space missing.
				l.grow(off, n, false)
			} else if !l.closed.Load() {
				l.mark.Store(c - ahead(c))
			}
			return off, nil
		}
		atomic.CompareAndSwapUint64(l.appendp, off, off+uint64(atomic.LoadUint32(w)))
	}
}

// ahead is how close to the end of the file writers start growing it.
func ahead(c uint64) uint64 { return min(c/2, maxGrowStep/2) }

// publish stores the commit word last; Go atomics are sequentially
// consistent, so every byte of the record is visible before it.
func (l *Logger) publish(off uint64, k Kind) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&l.mem[off+4])), commitTag|uint32(k))
}

// grow extends the file past off+n, first writing every new page in (so
// writers never take page faults, the cost that dominates otherwise), then
// publishing the new capacity. With wait false it grows ahead of need and
// gives way to a grower already at work. It and Open are the only paths
// that lock the file.
func (l *Logger) grow(off, n uint64, wait bool) error {
	if !wait && !l.growMu.TryLock() {
		return nil
	}
	if wait {
		l.growMu.Lock()
	}
	defer l.growMu.Unlock()
	if err := unix.Flock(l.fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("jitlog: lock %s: %w", l.path, err)
	}
	defer unix.Flock(l.fd, unix.LOCK_UN)
	end := off + n
	cur := atomic.LoadUint64(l.capp)
	if end <= cur && (wait || end <= cur-ahead(cur)) {
		return nil // someone else grew it
	}
	if cur < l.max {
		next := cur + min(max(cur, growStep), maxGrowStep)
		next = min(max(next, (end+growStep-1)&^(growStep-1)), l.max)
		if err := unix.Ftruncate(l.fd, int64(next)); err != nil {
			return fmt.Errorf("jitlog: grow %s: %w", l.path, err)
		}
		populate(l.mem, cur, next)
		atomic.StoreUint64(l.capp, next)
		cur = next
	}
	if end > l.max && wait {
		if off >= l.max {
			return fmt.Errorf("jitlog: %s: %w", l.path, ErrFull)
		}
		// The record would straddle the end: pad to it, so readers see a
		// clean end and every later writer finds the file full.
		if atomic.CompareAndSwapUint32((*uint32)(unsafe.Pointer(&l.mem[off])), 0, uint32(l.max-off)) {
			l.publish(off, KindPad)
			atomic.CompareAndSwapUint64(l.appendp, off, l.max)
		}
	}
	return nil
}

// populate faults in mem[from:to] for writing ahead of the writers.
// MADV_POPULATE_WRITE (Linux 5.14) does it in one call; before it, an
// atomic add of zero to each page does, without disturbing a record a
// writer may already be writing there.
func populate(mem []byte, from, to uint64) {
	if unix.Madvise(mem[from:to], unix.MADV_POPULATE_WRITE) == nil {
		return
	}
	page := uint64(os.Getpagesize())
	for p := from &^ (page - 1); p < to; p += page {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&mem[p])), 0)
	}
}

// CodeLoad logs code of size bytes generated at addr and returns its new
// sequence number, unique in this process even when addr and name repeat.
// extra may be nil.
func (l *Logger) CodeLoad(addr uintptr, size int, name string, extra *Load) (uint64, error) {
	if size < 0 {
		return 0, fmt.Errorf("jitlog: code load %q: negative size %d", name, size)
	}
	if extra != nil && len(extra.Code) != 0 && len(extra.Code) != size {
		return 0, fmt.Errorf("jitlog: code load %q: %d code bytes for size %d", name, len(extra.Code), size)
	}
	if extra != nil {
		for i, e := range extra.Lines {
			if int64(e.File) >= int64(len(extra.Files)) {
				return 0, fmt.Errorf("jitlog: code load %q: line entry %d names file %d of %d", name, i, e.File, len(extra.Files))
			}
		}
	}
	n, err := loadSize(name, extra)
	if err != nil {
		return 0, err
	}
	off, err := l.reserve(n)
	if err != nil {
		return 0, err
	}
	seq := atomic.AddUint64(l.seqp, 1)
	now := uint64(nanotime())
	putLoad(l.mem[off:off+n:off+n], seq, now, uint64(addr), uint64(size), l.id, name, extra)
	l.publish(off, KindCodeLoad)
	if l.jd != nil {
		if err := l.jd.codeLoad(seq, now, uint64(addr), uint64(size), name, extra); err != nil {
			return seq, err
		}
	}
	return seq, nil
}

// CodeMove logs that the code of generation seq moved (a moving GC): the
// sequence number stays, the address changes.
func (l *Logger) CodeMove(seq uint64, oldAddr, newAddr uintptr) error {
	off, err := l.reserve(moveSize)
	if err != nil {
		return err
	}
	now := uint64(nanotime())
	b := l.mem[off : off+moveSize]
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], now)
	le.PutUint64(b[24:], uint64(oldAddr))
	le.PutUint64(b[32:], uint64(newAddr))
	le.PutUint32(b[40:], l.id)
	l.publish(off, KindCodeMove)
	if l.jd != nil {
		return l.jd.codeMove(seq, now, uint64(oldAddr), uint64(newAddr))
	}
	return nil
}

// CodeUnwind logs the unwinding information of the code of generation
// seq: an .eh_frame (CIEs and FDEs, as a JIT writes for jitdump's
// unwinding records or V8 for --perf-prof-unwinding-info) whose FDE
// addresses are pc-relative, counted from where the .eh_frame would be if
// it followed the code at its first 8-byte boundary. With it, jitprof's
// DWARF call graphs unwind through the code, which need not keep a frame
// pointer.
func (l *Logger) CodeUnwind(seq uint64, ehFrame []byte) error {
	if uint64(len(ehFrame)) > maxRecord-unwindFixed {
		return fmt.Errorf("jitlog: unwinding information of %d bytes: %w", len(ehFrame), ErrTooLarge)
	}
	n := unwindFixed + align8(uint64(len(ehFrame)))
	off, err := l.reserve(n)
	if err != nil {
		return err
	}
	b := l.mem[off : off+n : off+n]
	le.PutUint64(b[8:], seq)
	le.PutUint32(b[16:], l.id)
	le.PutUint32(b[20:], uint32(len(ehFrame)))
	copy(b[unwindFixed:], ehFrame)
	l.publish(off, KindCodeUnwind)
	return nil
}

// CodeUnload logs that the code of generation seq was freed.
func (l *Logger) CodeUnload(seq uint64) error {
	off, err := l.reserve(unloadSize)
	if err != nil {
		return err
	}
	b := l.mem[off : off+unloadSize]
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], uint64(nanotime()))
	le.PutUint32(b[24:], l.id)
	l.publish(off, KindCodeUnload)
	if l.jd != nil {
		l.jd.forget(seq)
	}
	return nil
}

// Enter logs that execution context tid entered the code of generation seq.
// tid is the caller's: an OS thread id (from a goroutine locked to its
// thread) or any id stable for one goroutine; readers pair Enter and Exit by
// it. Enter neither allocates nor makes a system call. Where the TSC is
// usable it stamps the raw TSC (12 ns where nanotime takes 21) and readers
// convert by the logger's clock records.
func (l *Logger) Enter(tid uint32, seq uint64) error {
	off, ok := l.claim(enterSize)
	if !ok {
		var err error
		if off, err = l.reserveSlow(enterSize); err != nil {
			return err
		}
	}
	// An array within the file (claim checked): no bounds checks.
	b := (*[enterSize]byte)(unsafe.Add(l.base, off))
	le.PutUint64(b[8:], seq)
	le.PutUint32(b[24:], tid)
	le.PutUint32(b[28:], l.id)
	if l.tsc {
		t := stampTSC(&b[0], 16, commitTag|uint32(KindRegionEnterTSC))
		if t >= l.nextCal.Load() {
			l.recalibrate(t)
		}
		return nil
	}
	le.PutUint64(b[16:], uint64(nanotime()))
	l.publish(off, KindRegionEnter)
	return nil
}

// Exit logs that execution context tid left the region it last entered.
func (l *Logger) Exit(tid uint32) error {
	off, ok := l.claim(exitSize)
	if !ok {
		var err error
		if off, err = l.reserveSlow(exitSize); err != nil {
			return err
		}
	}
	b := (*[exitSize]byte)(unsafe.Add(l.base, off))
	le.PutUint32(b[16:], tid)
	le.PutUint32(b[20:], l.id)
	if l.tsc {
		t := stampTSC(&b[0], 8, commitTag|uint32(KindRegionExitTSC))
		if t >= l.nextCal.Load() {
			l.recalibrate(t)
		}
		return nil
	}
	le.PutUint64(b[8:], uint64(nanotime()))
	l.publish(off, KindRegionExit)
	return nil
}

// clockPair reads the monotonic clock between two TSC reads, three times,
// and pairs the tightest with its midpoint.
func clockPair() (tsc, ns uint64) {
	best := ^uint64(0)
	for range 3 {
		a := rdtsc()
		n := uint64(nanotime())
		b := rdtsc()
		if b-a < best {
			best, tsc, ns = b-a, a+(b-a)/2, n
		}
	}
	return tsc, ns
}

// logClock logs a clock record and returns its pair.
func (l *Logger) logClock() (tsc, ns uint64, err error) {
	off, err := l.reserve(clockSize)
	if err != nil {
		return 0, 0, err
	}
	tsc, ns = clockPair()
	b := l.mem[off : off+clockSize]
	le.PutUint64(b[8:], tsc)
	le.PutUint64(b[16:], ns)
	le.PutUint32(b[24:], l.id)
	l.publish(off, KindClock)
	return tsc, ns, nil
}

// startTSC logs two clock records calFirst apart, so readers have a rate
// from the start, and switches enter and exit to the TSC.
func (l *Logger) startTSC() error {
	t0, n0, err := l.logClock()
	if err != nil {
		return err
	}
	for _, n := clockPair(); n-n0 < calFirst; _, n = clockPair() {
	}
	t1, n1, err := l.logClock()
	if err != nil {
		return err
	}
	l.ticksPerNs = float64(t1-t0) / float64(n1-n0)
	l.calNs = 2 * calFirst
	l.nextCal.Store(t1 + uint64(float64(l.calNs)*l.ticksPerNs))
	l.tsc = true
	return nil
}

// recalibrate logs a clock record once the TSC passes nextCal (which
// callers check first, inline); one goroutine wins the swap to ^0 and does
// it. An error (a full file) keeps
// the old schedule: readers extrapolate.
func (l *Logger) recalibrate(seen uint64) {
	next := l.nextCal.Load()
	if seen < next || !l.nextCal.CompareAndSwap(next, ^uint64(0)) {
		return
	}
	if _, _, err := l.logClock(); err == nil && l.calNs < calMax {
		l.calNs *= 2
	}
	l.nextCal.Store(rdtsc() + uint64(float64(l.calNs)*l.ticksPerNs))
}

func (l *Logger) logOpen(name string) error {
	n := align8(openFixed + uint64(len(name)))
	if n > maxRecord {
		return fmt.Errorf("jitlog: logger name of %d bytes: %w", len(name), ErrTooLarge)
	}
	off, err := l.reserve(n)
	if err != nil {
		return err
	}
	b := l.mem[off : off+n]
	le.PutUint64(b[8:], uint64(nanotime()))
	le.PutUint32(b[16:], l.id)
	le.PutUint32(b[20:], uint32(len(name)))
	copy(b[openFixed:], name)
	l.publish(off, KindLoggerOpen)
	return nil
}

// Close logs a logger-close record and releases the file. The database
// stays for the profiler; Cleanup removes it once the process is gone.
func (l *Logger) Close() error {
	var errs []error
	if off, err := l.reserve(closeSize); err == nil {
		b := l.mem[off : off+closeSize]
		le.PutUint64(b[8:], uint64(nanotime()))
		le.PutUint32(b[16:], l.id)
		l.publish(off, KindLoggerClose)
	} else if errors.Is(err, ErrClosed) {
		return err
	} else {
		errs = append(errs, err)
	}
	if l.jd != nil {
		errs = append(errs, l.jd.close(uint64(nanotime())))
	}
	errs = append(errs, l.unmap())
	return errors.Join(errs...)
}

func (l *Logger) unmap() error {
	l.mark.Store(0)
	l.closed.Store(true)
	err := unix.Munmap(l.mem)
	if cerr := unix.Close(l.fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jitlog: close %s: %w", l.path, err)
	}
	return nil
}

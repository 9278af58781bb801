package jitlog

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// perf's jitdump, as in tools/perf/util/jitdump.h and
// tools/perf/Documentation/jitdump-specification.txt.
const (
	jdMagic      = 0x4A695444 // "JiTD" as a little-endian u32
	jdVersion    = 1
	jdHeaderSize = 40
	jdPrefixSize = 16 // id, total_size, timestamp

	jdCodeLoad  = 0
	jdCodeMove  = 1
	jdDebugInfo = 2
	jdClose     = 3

	jdLoadFixed  = jdPrefixSize + 40
	jdMoveSize   = jdPrefixSize + 48
	jdDebugFixed = jdPrefixSize + 16
	jdDebugEntry = 16 // addr, lineno, discrim; then the file name
)

var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "386": elf.EM_386, "arm64": elf.EM_AARCH64,
	"arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64,
	"ppc64": elf.EM_PPC64, "s390x": elf.EM_S390, "loong64": elf.EM_LOONGARCH,
}

// jitdump writes jit-<pid>.dump with one write(2) per record (debug info
// and its code load share one, so no other thread's load comes between
// them), and keeps the marker mapping that makes perf record log an mmap
// event naming the file.
type jitdump struct {
	f      *os.File
	marker []byte
	pid    uint32
	bufs   sync.Pool

	mu    sync.Mutex
	sizes map[uint64]uint64 // seq → code size: jitdump's move record wants it
}

func openJitdump(dir string, pid int, now uint64) (*jitdump, error) {
	path := filepath.Join(dir, "jit-"+strconv.Itoa(pid)+".dump")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jitlog: jitdump: %w", err)
	}
	var h [jdHeaderSize]byte
	le.PutUint32(h[0:], jdMagic)
	le.PutUint32(h[4:], jdVersion)
	le.PutUint32(h[8:], jdHeaderSize)
	le.PutUint32(h[12:], uint32(elfMachines[runtime.GOARCH]))
	le.PutUint32(h[20:], uint32(pid))
	le.PutUint64(h[24:], now)
	// flags stay 0: time stamps are CLOCK_MONOTONIC (perf record -k mono).
	if _, err := f.Write(h[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("jitlog: jitdump %s: %w", path, err)
	}
	marker, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("jitlog: jitdump %s: marker mapping (is %s mounted noexec?): %w", path, dir, err)
	}
	return &jitdump{f: f, marker: marker, pid: uint32(pid), sizes: make(map[uint64]uint64)}, nil
}

func (j *jitdump) buf(n int) *[]byte {
	bp, _ := j.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	*bp = (*bp)[:n]
	clear(*bp)
	return bp
}

func (j *jitdump) write(bp *[]byte) error {
	_, err := j.f.Write(*bp)
	j.bufs.Put(bp)
	if err != nil {
		return fmt.Errorf("jitlog: jitdump: %w", err)
	}
	return nil
}

// codeLoad writes a code load, preceded by its debug info when the load
// has a line table. Without code bytes the code is written as zeros: perf
// still names samples, but annotate shows nothing useful.
func (j *jitdump) codeLoad(seq, now, addr, size uint64, name string, ld *Load) error {
	if size > maxRecord {
		return fmt.Errorf("jitlog: jitdump: code load %q: %d bytes: %w", name, size, ErrTooLarge)
	}
	debug := 0
	if ld != nil && len(ld.Lines) > 0 {
		debug = jdDebugFixed
		for _, e := range ld.Lines {
			debug += jdDebugEntry + len(ld.Files[e.File]) + 1
		}
	}
	load := jdLoadFixed + len(name) + 1 + int(size)
	bp := j.buf(debug + load)
	b := *bp
	if debug > 0 {
		le.PutUint32(b[0:], jdDebugInfo)
		le.PutUint32(b[4:], uint32(debug))
		le.PutUint64(b[8:], now)
		le.PutUint64(b[16:], addr)
		le.PutUint64(b[24:], uint64(len(ld.Lines)))
		p := jdDebugFixed
		for _, e := range ld.Lines {
			le.PutUint64(b[p:], addr+uint64(e.CodeOffset))
			le.PutUint32(b[p+8:], e.Line)
			p += jdDebugEntry
			p += copy(b[p:], ld.Files[e.File]) + 1
		}
	}
	r := b[debug:]
	le.PutUint32(r[0:], jdCodeLoad)
	le.PutUint32(r[4:], uint32(load))
	le.PutUint64(r[8:], now)
	le.PutUint32(r[16:], j.pid)
	le.PutUint32(r[20:], uint32(unix.Gettid()))
	le.PutUint64(r[24:], addr) // vma
	le.PutUint64(r[32:], addr) // code_addr
	le.PutUint64(r[40:], size)
	le.PutUint64(r[48:], seq) // code_index: our sequence number is unique
	p := jdLoadFixed + copy(r[jdLoadFixed:], name) + 1
	if ld != nil {
		copy(r[p:], ld.Code)
	}
	j.mu.Lock()
	j.sizes[seq] = size
	j.mu.Unlock()
	return j.write(bp)
}

func (j *jitdump) codeMove(seq, now, oldAddr, newAddr uint64) error {
	j.mu.Lock()
	size := j.sizes[seq]
	j.mu.Unlock()
	bp := j.buf(jdMoveSize)
	b := *bp
	le.PutUint32(b[0:], jdCodeMove)
	le.PutUint32(b[4:], jdMoveSize)
	le.PutUint64(b[8:], now)
	le.PutUint32(b[16:], j.pid)
	le.PutUint32(b[20:], uint32(unix.Gettid()))
	le.PutUint64(b[24:], newAddr) // vma
	le.PutUint64(b[32:], oldAddr)
	le.PutUint64(b[40:], newAddr)
	le.PutUint64(b[48:], size)
	le.PutUint64(b[56:], seq)
	return j.write(bp)
}

func (j *jitdump) forget(seq uint64) {
	j.mu.Lock()
	delete(j.sizes, seq)
	j.mu.Unlock()
}

func (j *jitdump) close(now uint64) error {
	bp := j.buf(jdPrefixSize)
	le.PutUint32((*bp)[0:], jdClose)
	le.PutUint32((*bp)[4:], jdPrefixSize)
	le.PutUint64((*bp)[8:], now)
	err := j.write(bp)
	if merr := unix.Munmap(j.marker); err == nil && merr != nil {
		err = fmt.Errorf("jitlog: jitdump: %w", merr)
	}
	if cerr := j.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("jitlog: jitdump: %w", cerr)
	}
	return err
}

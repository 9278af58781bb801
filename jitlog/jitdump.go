package jitlog

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	jd "github.com/jitprof/jitprof/internal/jitdump"
)

var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "386": elf.EM_386, "arm64": elf.EM_AARCH64,
	"arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64,
	"ppc64": elf.EM_PPC64, "s390x": elf.EM_S390, "loong64": elf.EM_LOONGARCH,
}

// jitdump writes jit-<pid>.dump with one write(2) per record (debug info
// and its code load share one, so no other thread's load comes between
// them), and keeps the marker mapping that makes perf record log an mmap
// event naming the file. The records are internal/jitdump's, encoded by
// its AppendRecord.
type jitdump struct {
	f      *os.File
	marker []byte
	pid    uint32
	bufs   sync.Pool // of *jdBuf

	mu    sync.Mutex
	sizes map[uint64]uint64 // seq → code size: jitdump's move record wants it
}

// jdBuf is one write's bytes and the records encoded into them, reused so
// that logging a load allocates nothing.
type jdBuf struct {
	b     []byte
	load  jd.CodeLoad
	move  jd.CodeMove
	debug jd.DebugInfo
	close jd.CodeClose
}

func openJitdump(dir string, pid int, now uint64) (*jitdump, error) {
	path := filepath.Join(dir, "jit-"+strconv.Itoa(pid)+".dump")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jitlog: jitdump: %w", err)
	}
	// Flags stay 0: time stamps are CLOCK_MONOTONIC (perf record -k mono).
	h, err := jd.AppendHeader(nil, jd.Header{ElfMach: uint32(elfMachines[runtime.GOARCH]), PID: uint32(pid), Timestamp: now})
	if err == nil {
		_, err = f.Write(h)
	}
	if err != nil {
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

func (j *jitdump) buf() *jdBuf {
	jb, _ := j.bufs.Get().(*jdBuf)
	if jb == nil {
		jb = new(jdBuf)
	}
	jb.b = jb.b[:0]
	return jb
}

// write appends recs to jb and writes them in one write(2).
func (j *jitdump) write(jb *jdBuf, recs ...jd.Record) error {
	var err error
	for _, rec := range recs {
		if jb.b, err = jd.AppendRecord(jb.b, binary.LittleEndian, rec); err != nil {
			break
		}
	}
	if err == nil {
		_, err = j.f.Write(jb.b)
	}
	jb.debug.Entries = jb.debug.Entries[:0]
	j.bufs.Put(jb)
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
	jb := j.buf()
	jb.load = jd.CodeLoad{
		RecordHeader: jd.RecordHeader{Type: jd.TypeCodeLoad, Timestamp: now},
		PID:          j.pid, TID: uint32(unix.Gettid()),
		VMA: addr, CodeAddr: addr, CodeSize: size,
		CodeIndex: seq, // our sequence number is unique
		Name:      name,
	}
	if ld != nil && uint64(len(ld.Code)) == size {
		jb.load.Code = ld.Code
	}
	j.mu.Lock()
	j.sizes[seq] = size
	j.mu.Unlock()
	if ld == nil || len(ld.Lines) == 0 {
		return j.write(jb, &jb.load)
	}
	jb.debug.RecordHeader = jd.RecordHeader{Type: jd.TypeCodeDebugInfo, Timestamp: now}
	jb.debug.CodeAddr = addr
	for _, e := range ld.Lines {
		jb.debug.Entries = append(jb.debug.Entries, jd.DebugEntry{Addr: addr + uint64(e.CodeOffset), Line: e.Line, File: ld.Files[e.File]})
	}
	return j.write(jb, &jb.debug, &jb.load)
}

func (j *jitdump) codeMove(seq, now, oldAddr, newAddr uint64) error {
	j.mu.Lock()
	size := j.sizes[seq]
	j.mu.Unlock()
	jb := j.buf()
	jb.move = jd.CodeMove{
		RecordHeader: jd.RecordHeader{Type: jd.TypeCodeMove, Timestamp: now},
		PID:          j.pid, TID: uint32(unix.Gettid()),
		VMA: newAddr, OldCodeAddr: oldAddr, NewCodeAddr: newAddr,
		CodeSize: size, CodeIndex: seq,
	}
	return j.write(jb, &jb.move)
}

func (j *jitdump) forget(seq uint64) {
	j.mu.Lock()
	delete(j.sizes, seq)
	j.mu.Unlock()
}

func (j *jitdump) close(now uint64) error {
	jb := j.buf()
	jb.close = jd.CodeClose{RecordHeader: jd.RecordHeader{Type: jd.TypeCodeClose, Timestamp: now}}
	err := j.write(jb, &jb.close)
	if merr := unix.Munmap(j.marker); err == nil && merr != nil {
		err = fmt.Errorf("jitlog: jitdump: %w", merr)
	}
	if cerr := j.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("jitlog: jitdump: %w", cerr)
	}
	return err
}

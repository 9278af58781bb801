package process

import (
	"encoding/hex"

	"github.com/jitprof/jitprof/perfdata"
)

// Take tells the Tracker what a perf_event record says of processes and
// mappings (MMAP, MMAP2, COMM, FORK), decoded by package perfdata from a
// file or a ring buffer; it reports whether the record was one of those.
func (t *Tracker) Take(rec perfdata.Record) bool {
	switch r := rec.(type) {
	case *perfdata.Mmap:
		t.Map(FromMmap(r))
	case *perfdata.Comm:
		t.SetComm(r.PID, r.TID, r.Timestamp(), r.Comm, r.Exec())
	case *perfdata.Fork:
		tm := r.Timestamp()
		if tm == 0 {
			tm = r.ForkTime
		}
		t.Fork(r.PID, r.PPID, r.TID, r.PTID, tm)
	default:
		return false
	}
	return true
}

// FromMmap is the Mapping an MMAP or MMAP2 record tells of: a kernel
// mapping when its pid is the kernel's or its cpumode the kernel's;
// anonymous memory as perf judges it (perfdata.IsAnon); executable unless
// the record says it is data or, with MMAP2, has no PROT_EXEC.
func FromMmap(r *perfdata.Mmap) Mapping {
	m := Mapping{
		PID: r.PID, Start: r.Addr, End: r.Addr + r.Len, Pgoff: r.Pgoff,
		Path: r.Filename, Time: r.Timestamp(),
		Kernel: r.PID == KernelPID || r.CPUMode() == perfdata.MiscKernel,
	}
	if len(r.BuildID) > 0 {
		m.BuildID = hex.EncodeToString(r.BuildID)
	}
	m.Anon = !m.Kernel && r.IsAnon()
	m.Exec = r.Misc&perfdata.MiscMmapData == 0 &&
		(!r.Version2 || r.Prot == 0 || r.Prot&0x4 != 0) // PROT_EXEC
	if m.Anon && m.Exec {
		m.Pgoff = 0 // JIT code: its offsets are in the memory, not a file
	}
	return m
}

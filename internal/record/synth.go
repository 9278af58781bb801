package record

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/perfdata"
)

// common is the sample_id trailer of a synthesized record: time 0, so
// that perf sorts it before every kernel record, and the recording's first
// event id, so that readers find the attr.
func (r *Recorder) common(misc uint16, pid, tid uint32) perfdata.Common {
	c := perfdata.Common{Misc: misc, Attr: r.attr, PID: pid, TID: tid}
	if len(r.attr.IDs) > 0 {
		c.ID = r.attr.IDs[0]
	}
	return c
}

// synthKernel writes the MMAP of the kernel text that perf report
// resolves kernel samples against: [kernel.kallsyms]_text, pid -1, pgoff
// the address of _text. Hidden addresses give none, as kernel samples
// cannot be named then.
func (r *Recorder) synthKernel() {
	k, err := linux.KernelMapping()
	if err != nil || k.Hidden || k.Text == 0 || k.Etext <= k.Text {
		return
	}
	const hostPID = ^uint32(0) // perf's HOST_KERNEL_ID, -1
	r.record(&perfdata.Mmap{
		Common:   r.common(perfdata.MiscKernel, hostPID, 0),
		PID:      hostPID,
		Addr:     k.Text,
		Len:      k.Etext - k.Text,
		Pgoff:    k.Text,
		Filename: "[kernel.kallsyms]_text",
	})
}

// synthProcesses writes COMM records for every thread and MMAP2 records
// for every executable mapping of the processes that were running before
// recording began, read from /proc; for DWARF call graphs, for every
// mapping, since an unwinder reads .eh_frame_hdr where the process mapped
// it (perf's libunwind does; perf synthesizes them too with mmap_data).
func (r *Recorder) synthProcesses(cfg Config) error {
	var pids []int
	switch {
	case cfg.SystemWide:
		all, err := linux.Host.PIDs()
		if err != nil {
			return err
		}
		pids = all
	case len(cfg.PIDs) > 0:
		pids = cfg.PIDs
	default:
		// /proc/TID reads as the thread's process.
		pids = cfg.TIDs
	}
	seen := map[int]bool{}
	for _, pid := range pids {
		p, err := linux.Host.Process(pid)
		if errors.Is(err, linux.ErrNoProcess) || errors.Is(err, fs.ErrPermission) {
			continue // gone, or another user's process a system-wide recording cannot name
		}
		if err != nil {
			return err
		}
		if seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		r.synthProcess(p, cfg.UserStack != 0)
	}
	return r.err
}

func (r *Recorder) synthProcess(p linux.Process, data bool) {
	pid := uint32(p.PID)
	r.ids[pid] = identity{p.Identity, true}
	for _, t := range p.Threads {
		tid := uint32(t.TID)
		r.record(&perfdata.Comm{Common: r.common(perfdata.MiscUser, pid, tid), PID: pid, TID: tid, Comm: t.Comm})
	}
	for _, m := range p.Maps {
		misc := uint16(perfdata.MiscUser)
		if m.Prot&unix.PROT_EXEC == 0 {
			if !data {
				continue
			}
			misc |= perfdata.MiscMmapData
		}
		r.record(&perfdata.Mmap{
			Common:   r.common(misc, pid, pid),
			Version2: true,
			PID:      pid,
			TID:      pid,
			Addr:     m.Start,
			Len:      m.End - m.Start,
			Pgoff:    m.Pgoff,
			Maj:      m.Major,
			Min:      m.Minor,
			Ino:      m.Inode,
			Prot:     m.Prot,
			Flags:    m.Flags,
			Filename: m.Path,
		})
	}
}

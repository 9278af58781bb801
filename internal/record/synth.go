package record

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/perfdata"
)

// common is the sample_id trailer of a synthesized record: time 0, so
// that perf sorts it before every kernel record, and the recording's first
// event id, so that readers find the attr.
func (r *recorder) common(misc uint16, pid, tid uint32) perfdata.Common {
	c := perfdata.Common{Misc: misc, Attr: r.attr, PID: pid, TID: tid}
	if len(r.attr.IDs) > 0 {
		c.ID = r.attr.IDs[0]
	}
	return c
}

func (r *recorder) writeRecord(rec perfdata.Record) {
	if err := r.w.WriteRecord(rec); err != nil && r.err == nil {
		r.err = err
	}
}

// synthKernel writes the MMAP of the kernel text that perf report
// resolves kernel samples against: [kernel.kallsyms]_text, pid -1, pgoff
// the address of _text. Hidden addresses give none, as kernel samples
// cannot be named then.
func (r *recorder) synthKernel() {
	k, err := linux.KernelMapping()
	if err != nil || k.Hidden || k.Text == 0 || k.Etext <= k.Text {
		return
	}
	const hostPID = ^uint32(0) // perf's HOST_KERNEL_ID, -1
	r.writeRecord(&perfdata.Mmap{
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
// recording began, read from /proc.
func (r *recorder) synthProcesses(cfg Config) error {
	var pids []int
	switch {
	case cfg.SystemWide:
		all, err := linux.AllPIDs()
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
		p, err := linux.ReadProcess(pid)
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
		r.synthProcess(p)
	}
	return r.err
}

func (r *recorder) synthProcess(p linux.Process) {
	pid := uint32(p.PID)
	pm := r.proc(pid)
	pm.id, pm.idKnown = p.Identity, true
	for _, t := range p.Threads {
		tid := uint32(t.TID)
		r.writeRecord(&perfdata.Comm{Common: r.common(perfdata.MiscUser, pid, tid), PID: pid, TID: tid, Comm: t.Comm})
	}
	for _, m := range p.Maps {
		if m.Prot&unix.PROT_EXEC == 0 {
			continue
		}
		r.writeRecord(&perfdata.Mmap{
			Common:   r.common(perfdata.MiscUser, pid, pid),
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
		r.mmap(pid, m.Start, m.End, m.Path, perfdata.IsAnon(m.Path, m.Flags))
	}
}

// identify reads who process pid is from /proc, keeping what was known
// when it is gone.
func (r *recorder) identify(pid uint32) {
	id, err := linux.ReadIdentity("/proc", int(pid))
	if err != nil {
		return
	}
	p := r.proc(pid)
	p.id, p.idKnown = id, true
}

// finish sets the feature sections and returns how many build-ids it
// wrote.
func (r *recorder) finish(cfg Config) int {
	fs := &r.w.Features
	if host, err := os.Hostname(); err == nil {
		fs.SetString(perfdata.FeatHostname, host)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		fs.SetString(perfdata.FeatOSRelease, unix.ByteSliceToString(u.Release[:]))
		fs.SetString(perfdata.FeatArch, unix.ByteSliceToString(u.Machine[:]))
	}
	fs.SetString(perfdata.FeatVersion, "jitprof")
	if online, err := linux.OnlineCPUs(); err == nil {
		avail := len(online)
		if l, err := linux.PossibleCPUs(); err == nil {
			avail = len(l)
		}
		fs.SetNrCPUs(uint32(avail), uint32(len(online)))
	}
	if desc, id := linux.CPUInfo(); desc != "" {
		fs.SetString(perfdata.FeatCPUDesc, desc)
		if id != "" {
			fs.SetString(perfdata.FeatCPUID, id)
		}
	}
	if kB := linux.MemTotal(); kB > 0 {
		fs.SetTotalMem(kB)
	}
	if len(cfg.Cmdline) > 0 {
		fs.SetCmdline(cfg.Cmdline)
	}
	fs.SetEventDescs([]perfdata.EventDesc{{Attr: *r.attr, Name: r.attr.Name, IDs: r.attr.IDs}})
	clock := r.attr.ClockID
	var res unix.Timespec
	if unix.ClockGetres(clock, &res) == nil {
		fs.SetClockResolution(uint64(res.Nano()))
	}
	var wall, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &wall) == nil && unix.ClockGettime(clock, &mono) == nil {
		fs.SetClockData(perfdata.ClockData{Version: 1, ClockID: uint32(clock), WallNS: uint64(wall.Nano()), ClockNS: uint64(mono.Nano())})
	}
	if r.samples > 0 && r.first > 0 {
		fs.SetSampleTime(r.first, r.last)
	}
	ids := r.buildIDs()
	if len(ids) > 0 {
		fs.SetBuildIDs(ids)
	}
	return len(ids)
}

package perfdatasrc

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// synth writes a perf.data file of recs, with times and pids in every
// record (sample_id_all), and opens it.
func synth(t *testing.T, recs func(a *perfdata.Attr) []perfdata.Record) *perfdata.File {
	t.Helper()
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	return synthWith(t, a, recs(a))
}

// synthWith writes a perf.data file of recs, of the one attr a.
func synthWith(t *testing.T, a *perfdata.Attr, recs []perfdata.Record) *perfdata.File {
	t.Helper()
	return perftest.OpenData(t, []*perfdata.Attr{a}, recs)
}

func common(a *perfdata.Attr, pid, tid uint32, time uint64) perfdata.Common {
	return perfdata.Common{Attr: a, PID: pid, TID: tid, Time: time, Misc: perfdata.MiscUser}
}

func mmap(a *perfdata.Attr, pid uint32, time, addr, size uint64, path string) *perfdata.Mmap {
	return &perfdata.Mmap{Common: common(a, pid, pid, time), PID: pid, TID: pid, Addr: addr, Len: size, Filename: path}
}

func comm(a *perfdata.Attr, pid uint32, time uint64, name string, exec bool) *perfdata.Comm {
	c := &perfdata.Comm{Common: common(a, pid, pid, time), PID: pid, TID: pid, Comm: name}
	if exec {
		c.Misc |= perfdata.MiscCommExec
	}
	return c
}

func fork(a *perfdata.Attr, pid, ppid uint32, time uint64) *perfdata.Fork {
	return &perfdata.Fork{Common: common(a, pid, pid, time), PID: pid, PPID: ppid, TID: pid, PTID: ppid, ForkTime: time}
}

// sample is a sample of pid at ip; its tid names it in the result of
// leafImages, which is keyed by tid.
func sample(a *perfdata.Attr, pid, tid uint32, time, ip uint64) *perfdata.Sample {
	return &perfdata.Sample{Common: common(a, pid, tid, time), IP: ip, Period: 1000}
}

// leafImages loads f and returns the image each sample's leaf resolved
// to, by the sample's tid.
func leafImages(t *testing.T, f *perfdata.File, opts Options) map[uint32]string {
	t.Helper()
	opts.Symbolizer = symbolize.New(symbolize.Options{})
	p, err := Load(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]string{}
	for _, e := range p.Entries {
		fn := p.FuncOf(p.Nodes[e.Stack].Frame)
		out[p.Threads[e.Thread].TID] = p.Images[fn.Image].Name
	}
	return out
}

const base = 0x400000

// replayCases are recordings whose samples resolve differently over time.
var replayCases = []struct {
	name string
	recs func(a *perfdata.Attr) []perfdata.Record
	want map[uint32]string // tid of a sample -> image
}{
	{"exec replaces the mappings", func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			comm(a, 10, 1, "sh", false),
			mmap(a, 10, 2, base, 0x1000, "/bin/sh"),
			mmap(a, 10, 2, 0x7f0000, 0x1000, "/lib/libsh.so"),
			sample(a, 10, 100, 3, base+0x10),
			comm(a, 10, 5, "prog", true),
			mmap(a, 10, 6, base, 0x2000, "/bin/prog"),
			sample(a, 10, 101, 7, base+0x10),
			// A sample in the exec syscall, after the exec's COMM,
			// has the old image's user addresses: perf names them
			// by the old mappings, and so do we.
			sample(a, 10, 102, 8, 0x7f0010),
		}
	}, map[uint32]string{100: "/bin/sh", 101: "/bin/prog", 102: "/lib/libsh.so"}},
	{"exec written before its fork", func(a *perfdata.Attr) []perfdata.Record {
		// The child's records come from another CPU's buffer than
		// the parent's FORK, so the file need not be in time order.
		return []perfdata.Record{
			mmap(a, 50, 1, 0x7f0000, 0x1000, "/lib/libc.so"),
			comm(a, 51, 5, "true", true),
			sample(a, 51, 510, 6, 0x7f0010), // in execve
			fork(a, 51, 50, 3),
			mmap(a, 51, 7, base, 0x1000, "/bin/true"),
			sample(a, 51, 511, 8, base+0x10),
		}
	}, map[uint32]string{510: "/lib/libc.so", 511: "/bin/true"}},
	{"pid reuse", func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			fork(a, 20, 1, 1),
			mmap(a, 20, 2, base, 0x1000, "/bin/first"),
			sample(a, 20, 200, 3, base+0x10),
			// pid 20 exits; a new process gets the pid by fork
			// from an unrelated parent and execs.
			fork(a, 20, 1, 10),
			comm(a, 20, 11, "second", true),
			mmap(a, 20, 12, base, 0x1000, "/bin/second"),
			sample(a, 20, 201, 13, base+0x10),
		}
	}, map[uint32]string{200: "/bin/first", 201: "/bin/second"}},
	{"remap at the same address", func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			mmap(a, 30, 1, base, 0x1000, "/lib/old.so"),
			sample(a, 30, 300, 2, base+0x10),
			mmap(a, 30, 5, base, 0x1000, "/lib/new.so"),
			sample(a, 30, 301, 6, base+0x10),
			// Written after the remap but taken before it: per-CPU
			// buffers interleave so in a real file.
			sample(a, 30, 302, 4, base+0x20),
		}
	}, map[uint32]string{300: "/lib/old.so", 301: "/lib/new.so", 302: "/lib/old.so"}},
	{"same address before and after a remap", func(a *perfdata.Attr) []perfdata.Record {
		// Resolved stacks are reused until the mappings change.
		return []perfdata.Record{
			mmap(a, 31, 1, base, 0x1000, "/lib/old.so"),
			sample(a, 31, 310, 2, base+0x10),
			mmap(a, 31, 5, base, 0x1000, "/lib/new.so"),
			sample(a, 31, 311, 6, base+0x10),
			sample(a, 31, 312, 4, base+0x10),
			sample(a, 31, 313, 7, base+0x10),
		}
	}, map[uint32]string{310: "/lib/old.so", 311: "/lib/new.so", 312: "/lib/old.so", 313: "/lib/new.so"}},
	{"fork inherits the parent's mappings", func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			mmap(a, 40, 1, base, 0x1000, "/bin/parent"),
			fork(a, 41, 40, 2),
			sample(a, 41, 410, 3, base+0x10),
			// The parent's later mappings are not the child's.
			mmap(a, 40, 4, 0x7f0000, 0x1000, "/lib/late.so"),
			sample(a, 41, 411, 5, 0x7f0010),
			sample(a, 40, 400, 5, 0x7f0010),
		}
	}, map[uint32]string{410: "/bin/parent", 411: "[unknown]", 400: "/lib/late.so"}},
}

func TestReplay(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) {
			f := synth(t, c.recs)
			for _, opts := range []Options{{}, {LeafOnly: true}} {
				got := leafImages(t, f, opts)
				for tid, want := range c.want {
					if got[tid] != want {
						t.Errorf("%+v: sample %d: image %q, want %q", opts, tid, got[tid], want)
					}
				}
			}
		})
	}
}

func TestProcesses(t *testing.T) {
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		data := mmap(a, 10, 3, 0x600000, 0x1000, "/bin/sh")
		data.Version2, data.Prot = true, 0x3 // read, write
		return []perfdata.Record{
			comm(a, 10, 1, "sh", false),
			mmap(a, 10, 2, 0x400000, 0x1000, "/bin/sh"),
			data,
			comm(a, 10, 5, "prog", true),
			mmap(a, 10, 7, 0x7f0000, 0x1000, "//anon"),
			mmap(a, 10, 6, 0x400000, 0x2000, "/bin/prog"),
			fork(a, 11, 10, 8),
			sample(a, 10, 10, 9, 0x7f0010),
		}
	})
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	ps := tl.Tracker.Processes()
	if len(ps) != 2 || ps[0].PID != 10 || ps[1].PID != 11 {
		t.Fatalf("processes %+v, want pids 10 and 11", ps)
	}
	if ps[0].Comm != "prog" || ps[1].Comm != "prog" {
		t.Errorf("comms %q, %q, want prog (the last name; the child's inherited)", ps[0].Comm, ps[1].Comm)
	}
	var got []string
	for _, m := range ps[0].Mappings {
		got = append(got, fmt.Sprintf("%d %s %#x-%#x exec=%v anon=%v", m.Time, m.Path, m.Start, m.End, m.Exec, m.Anon))
	}
	want := []string{
		"2 /bin/sh 0x400000-0x401000 exec=true anon=false",
		"3 /bin/sh 0x600000-0x601000 exec=false anon=false",
		"6 /bin/prog 0x400000-0x402000 exec=true anon=false",
		"7 //anon 0x7f0000-0x7f1000 exec=true anon=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mappings of pid 10:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Load with the timeline resolves as Load without.
	with := leafImages(t, f, Options{Timeline: tl})
	if with[10] != "anon (tgid:10 range:0x7f0000-0x7f1000)" {
		t.Errorf("sample with the given timeline in %q", with[10])
	}
}

// TestCommsAsPerf: the idle task, which no COMM record names, is
// swapper; a thread nothing names is :TID; a child between fork and exec
// has its parent's name. perf report names them so on the same file.
func TestCommsAsPerf(t *testing.T) {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	recs := []perfdata.Record{comm(a, 10, 1, "app", false)}
	for i := range uint64(3) {
		recs = append(recs, sample(a, 10, 10, 2+i, 0x400000), sample(a, 0, 0, 2+i, 0x400000), sample(a, 20, 21, 2+i, 0x400000))
	}
	recs = append(recs, fork(a, 11, 10, 6), sample(a, 11, 11, 7, 0x400000), comm(a, 11, 8, "child", true), sample(a, 11, 11, 9, 0x400000))
	path := perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil)
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Load(f, Options{Symbolizer: symbolize.New(symbolize.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]uint64{}
	for _, e := range p.Entries {
		ours[p.Strings[p.Threads[e.Thread].Comm]] += e.Count
	}
	if want := map[string]uint64{"app": 4, "swapper": 3, ":21": 3, "child": 1}; !maps.Equal(ours, want) {
		t.Errorf("samples by comm %v, want %v", ours, want)
	}
	out := perftest.Run(t, perftest.Perf(t), "report", "-i", path, "--stdio", "--sort", "comm", "-n", "-q")
	perfs := map[string]uint64{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && strings.HasSuffix(f[0], "%") {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			perfs[f[2]] += n
		}
	}
	if !maps.Equal(ours, perfs) {
		t.Errorf("samples by comm %v, perf report's %v\n%s", ours, perfs, out)
	}
}

// TestComm checks the name a thread has over time: before a name of its
// own (an exec, a rename), the one it was created with, as perf names it.
func TestComm(t *testing.T) {
	thread := func(a *perfdata.Attr, pid, tid, ptid uint32, time uint64) *perfdata.Fork {
		return &perfdata.Fork{Common: common(a, pid, tid, time), PID: pid, PPID: pid, TID: tid, PTID: ptid, ForkTime: time}
	}
	rename := func(a *perfdata.Attr, pid, tid uint32, time uint64, name string) *perfdata.Comm {
		return &perfdata.Comm{Common: common(a, pid, tid, time), PID: pid, TID: tid, Comm: name}
	}
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			comm(a, 10, 0, "sh", false),
			fork(a, 11, 10, 2),
			// The child's exec comes before its fork in the file, as
			// records of two CPUs' buffers can.
			comm(a, 12, 6, "prog2", true),
			comm(a, 11, 5, "prog", true),
			fork(a, 12, 10, 3),
			thread(a, 11, 13, 11, 7),
			rename(a, 11, 13, 9, "worker"),
		}
	})
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pid, tid uint32
		time     uint64
		want     string
	}{
		{10, 10, 1, "sh"},
		{11, 11, 4, "sh"}, // forked, not yet exec'd: the parent's name
		{11, 11, 5, "prog"},
		{12, 12, 4, "sh"},
		{12, 12, 6, "prog2"},
		{11, 13, 8, "prog"}, // a new thread, not yet renamed
		{11, 13, 9, "worker"},
		{10, 10, 100, "sh"},
		{11, ^uint32(0), 6, ":-1"}, // a sample the kernel gave no thread
	} {
		if got := tl.Tracker.Comm(c.pid, c.tid, c.time); got != c.want {
			t.Errorf("pid %d tid %d at %d: %q, want %q", c.pid, c.tid, c.time, got, c.want)
		}
	}
}

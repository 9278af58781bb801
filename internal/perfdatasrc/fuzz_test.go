package perfdatasrc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// memFile is an in-memory io.WriteSeeker for perfdata.Writer.
type memFile struct {
	b   []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	if end := m.off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	n := copy(m.b[m.off:], p)
	m.off += int64(n)
	return n, nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += m.off
	case io.SeekEnd:
		off += int64(len(m.b))
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	m.off = off
	return off, nil
}

// ops reads the fuzzer's bytes as a program; past its end it reads zeros.
type ops []byte

func (o *ops) byte() byte {
	if len(*o) == 0 {
		return 0
	}
	c := (*o)[0]
	*o = (*o)[1:]
	return c
}

func (o *ops) u64() uint64 {
	var b [8]byte
	for i := range b {
		b[i] = o.byte()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// The values records pick from: few enough that records meet each other
// (pid reuse, exec after mmap, fork loops, overlapping mappings), with
// the extremes (the kernel's pid -1, lengths that wrap, time 0).
var (
	fuzzPIDs  = []uint32{1, 2, 3, 4, 0, process.KernelPID}
	fuzzBases = []uint64{base, 0x7f0000000000, 0xffffffff81000000, 0, ^uint64(0) - 0xfff}
	fuzzLens  = []uint64{0x1000, 0x10000, 0x100, 1 << 63, ^uint64(0), 0}
	fuzzPaths = []string{"/bin/busy", "//anon", "/nonexistent/lib.so", "[vdso]", "[kernel.kallsyms]_text", "/memfd:jit (deleted)", "", "[anon:x]"}
	fuzzComms = []string{"a", "b", ""}
	fuzzModes = []uint16{perfdata.MiscUser, perfdata.MiscKernel, perfdata.MiscHypervisor, perfdata.MiscGuestUser}
	fuzzMarks = []uint64{perfdata.CallchainUser, perfdata.CallchainKernel, perfdata.CallchainGuest, perfdata.CallchainContextMax}
)

// fuzzRecording turns the fuzzer's bytes into a valid recording: each
// operation writes one record (or moves the clock) with values from the
// lists above. It returns the file and the number of samples in it.
func fuzzRecording(t *testing.T, prog []byte, stacks bool) (*perfdata.File, uint64) {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCPU |
			perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags: perfdata.FlagSampleIDAll,
		IDs:   []uint64{1},
	}
	if stacks {
		// --call-graph dwarf's fields, with three registers: BP, SP
		// and IP (perf's x86 numbers 6, 7 and 8).
		a.SampleType |= perfdata.SampleRegsUser | perfdata.SampleStackUser
		a.SampleRegsUser, a.SampleStackUser = 0x1c0, 64
	}
	var out memFile
	w, err := perfdata.NewWriter(&out, []*perfdata.Attr{a})
	if err != nil {
		t.Fatal(err)
	}
	o := ops(prog)
	clock := uint64(1000)
	pick := func(n int) int { return int(o.byte()) % n }
	addr := func() uint64 {
		b := fuzzBases[pick(len(fuzzBases))]
		return b + uint64(o.byte())<<8 + uint64(o.byte())
	}
	var samples uint64
	for n := 0; len(o) > 0 && n < 256; n++ {
		pid := fuzzPIDs[pick(len(fuzzPIDs))]
		c := perfdata.Common{Attr: a, PID: pid, TID: pid, Time: clock, CPU: uint32(o.byte() % 4), Misc: perfdata.MiscUser}
		clock += 10
		var rec perfdata.Record
		switch o.byte() % 10 {
		case 0:
			r := &perfdata.Comm{Common: c, PID: pid, TID: pid, Comm: fuzzComms[pick(len(fuzzComms))]}
			if o.byte()&1 != 0 {
				r.Misc |= perfdata.MiscCommExec
			}
			rec = r
		case 1:
			ppid := fuzzPIDs[pick(len(fuzzPIDs))]
			rec = &perfdata.Fork{Common: c, PID: pid, PPID: ppid, TID: pid, PTID: ppid, ForkTime: clock}
		case 2:
			ppid := fuzzPIDs[pick(len(fuzzPIDs))]
			rec = &perfdata.Exit{Common: c, PID: pid, PPID: ppid, TID: pid, PTID: ppid, ExitTime: clock}
		case 3:
			flags := o.byte()
			r := &perfdata.Mmap{Common: c, Version2: flags&1 != 0, PID: pid, TID: pid, Addr: addr(),
				Len: fuzzLens[pick(len(fuzzLens))], Pgoff: uint64(o.byte()) << 12, Filename: fuzzPaths[pick(len(fuzzPaths))]}
			if r.Version2 {
				r.Prot = uint32(flags>>1) & 7
			}
			if flags&0x10 != 0 {
				r.Misc |= perfdata.MiscMmapData
			}
			if flags&0x20 != 0 || pid == process.KernelPID {
				r.Misc = r.Misc&^perfdata.MiscCPUModeMask | perfdata.MiscKernel
			}
			rec = r
		case 4:
			s := &perfdata.Sample{Common: c, IP: addr(), Period: uint64(o.byte()) + 1}
			s.Misc = fuzzModes[pick(len(fuzzModes))]
			for range o.byte() % 5 {
				if o.byte()&1 != 0 {
					s.Callchain = append(s.Callchain, fuzzMarks[pick(len(fuzzMarks))])
				} else {
					s.Callchain = append(s.Callchain, addr())
				}
			}
			if stacks {
				// A stack of words, some of them addresses, and
				// registers pointing into it or anywhere.
				sp := 0x7ffffff000 + uint64(o.byte())*8
				s.RegsUserABI, s.RegsUser = 2, []uint64{sp + uint64(o.byte())*8, sp, s.IP}
				for range o.byte() % 9 {
					s.StackUser = binary.LittleEndian.AppendUint64(s.StackUser, addr())
				}
				s.StackDyn = uint64(o.byte()) % uint64(len(s.StackUser)+1)
			}
			rec = s
			samples++
		case 5:
			clock -= min(clock, uint64(o.byte())*100) // time going backwards
		case 6:
			clock += uint64(o.byte()) * 100
		case 7:
			clock = o.u64()
		case 8:
			rec = &perfdata.Lost{Common: c, LostID: 1, Lost: uint64(o.byte())}
		case 9:
			rec = &perfdata.FinishedRound{}
		}
		if rec != nil {
			if err := w.WriteRecord(rec); err != nil {
				t.Fatalf("writing %T: %v", rec, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := perfdata.Parse(out.b)
	if err != nil {
		t.Fatalf("reading what the Writer wrote: %v", err)
	}
	return f, samples
}

// fuzzAnon names every anonymous address by its 64-byte block, as a JIT
// handler would, so the JIT path of Load is replayed too.
type fuzzAnon struct{}

func (fuzzAnon) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	if addr%3 == 0 {
		return resolve.AnonFrame{}, false
	}
	return resolve.AnonFrame{Func: fmt.Sprintf("jit_%x", addr>>6), Image: "[JIT] fuzz", Start: addr &^ 63, Code: []byte{0x90}}, true
}

// fuzzAnon is the unwinder's JITInfo too: it names what it resolves,
// and has no tables.
func (fuzzAnon) UnwindTable(uint32, uint64, uint64) (*unwind.Table, uint64, bool) {
	return nil, 0, false
}
func (fuzzAnon) Named(pid uint32, addr, time uint64) bool { return addr%3 != 0 }

// Settled: what fuzzAnon says does not depend on the timeline.
func (fuzzAnon) Settled() bool { return true }

// replaySymbolizer finds images under a root of its own: busy as
// /bin/busy, and a kallsyms of three symbols. FuzzReplay shares it between
// inputs: it caches the images, read-only once loaded, so an input costs
// its replay, not ELF parsing.
func replaySymbolizer(tb testing.TB) *symbolize.Symbolizer {
	root := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(perftest.Busy(tb), filepath.Join(root, "bin", "busy")); err != nil {
		tb.Fatal(err)
	}
	kallsyms := filepath.Join(root, "kallsyms")
	if err := os.WriteFile(kallsyms, []byte("ffffffff81000000 T _text\nffffffff81000100 T schedule\nffffffff81000200 t helper\t[mod]\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return symbolize.New(symbolize.Options{Root: root, DebugDirs: []string{}, BuildIDCaches: []string{}, Kallsyms: kallsyms})
}

// FuzzReplay replays well-formed but hostile recordings: records made by
// perfdata's Writer from the fuzzer's bytes, so every input is a valid
// perf.data whose story may make no sense (exec after mmap, fork loops,
// pid reuse, time going backwards, overlapping mappings, lengths that
// wrap). BuildTimeline and Load must not fail or panic; every sample is
// in the profile once; and the profile is the same read in one part or
// several, the flat way or after a timeline pass.
func FuzzReplay(f *testing.F) {
	sym := replaySymbolizer(f)
	// An input is the index of its replayOptions, then operations of
	// fuzzRecording; rec spells one operation: the index of its pid,
	// CPU 0, the kind of record and its arguments.
	rec := func(pid, kind byte, args ...byte) []byte { return append([]byte{pid, 0, kind}, args...) }
	cat := func(opts byte, recs ...[]byte) []byte {
		b := []byte{opts}
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	// pid 1 maps busy and samples in it, with a callchain; it forks 2,
	// which execs, maps anonymous memory and samples in it. (An address
	// is three bytes: the index of its base, then the offset, high byte
	// first.)
	seeds := [][][]byte{{
		rec(0, 3, 0x0b, 0, 0, 0, 1, 0, 0),                      // MMAP2 r-x busy at base, 64 KB
		rec(0, 4, 0, 0x14, 0, 1, 0, 2, 1, 0, 0, 0, 0x18, 0x10), // sample, callchain: user mark, base+0x1810
		rec(1, 1, 0),                      // fork 2 from 1
		rec(1, 0, 0, 1),                   // 2 execs
		rec(1, 3, 0x0f, 1, 0, 0, 0, 0, 1), // MMAP2 rwx //anon
		rec(1, 4, 1, 0, 0x30, 1, 0, 0),    // sample in it
		rec(0, 4, 0, 0x14, 0x20, 1, 0, 0), // sample in 1
	}, {
		// The kernel's text and a kernel sample; time going
		// backwards; pid 1 reused by a fork from 4; a mapping of a
		// missing file; the clock set anywhere; lost samples; a round.
		rec(5, 3, 0x20, 2, 0, 0, 1, 0, 4),
		rec(0, 4, 2, 0x01, 0x08, 1, 1, 0),
		rec(0, 5, 200),
		rec(0, 4, 0, 0x14, 0, 1, 0, 0),
		rec(0, 1, 3),
		rec(0, 3, 0, 0, 0, 0, 1, 0, 2),
		rec(0, 4, 0, 0x14, 0, 1, 0, 0),
		rec(0, 7, 1, 2, 3, 4, 5, 6, 7, 8),
		rec(0, 8, 5),
		rec(0, 9),
	}}
	for _, recs := range seeds {
		for opts := range replayOptions {
			f.Add(cat(byte(opts), recs...))
		}
	}
	// With user stacks (an options byte past replayOptions): pid 1 maps
	// busy and samples in it, a stack of two words, one an address in
	// busy; then, a round later in the file but earlier in time (time
	// going backwards), 2 is forked and maps anonymous memory, and a
	// sample of 1 comes after.
	stack := func(pid byte, ip ...byte) []byte {
		r := rec(pid, 4, ip...)
		return append(r, 0, 0x14, 0, 1, 2, 2, 0, 0x18, 0x10, 3, 0, 0x20, 16)
	}
	for opts := range replayOptions {
		f.Add(cat(byte(len(replayOptions)+opts),
			rec(0, 3, 0x0b, 0, 0, 0, 1, 0, 0), // MMAP2 r-x busy at base, 64 KB
			stack(0, 0, 0x14, 0),
			rec(0, 9),     // a round
			rec(0, 5, 10), // time going backwards
			rec(1, 1, 0),  // fork 2 from 1
			rec(1, 3, 0x0f, 1, 0, 0, 0, 0, 1),
			stack(0, 0, 0x14, 0x20),
		))
	}
	f.Fuzz(func(t *testing.T, in []byte) { replay(t, sym, in) })
}

// replay is FuzzReplay's check of one input.
func replay(t *testing.T, sym *symbolize.Symbolizer, in []byte) {
	if len(in) == 0 {
		return
	}
	// The first byte chooses how to load, so that an input costs a few
	// loads, not a dozen: the fuzzer's speed is what finds bugs.
	opts := replayOptions[int(in[0])%len(replayOptions)]
	opts.Symbolizer = sym
	stacks := int(in[0])/len(replayOptions)%2 == 1
	if opts.Anon != nil && int(in[0])/len(replayOptions)/2%2 == 1 {
		// JIT code named by handlers bound by the timeline (report
		// --anon-samples): early, for a DWARF recording read in one pass.
		opts.Anon = nil
		opts.BindEarly = func(*Timeline) (EarlyAnon, error) { return fuzzAnon{}, nil }
		opts.Bind = func(*Timeline) (resolve.AnonResolver, error) { return fuzzAnon{}, nil }
	}
	file, samples := fuzzRecording(t, in[1:], stacks)
	tl, err := BuildTimeline(file)
	if err != nil {
		t.Fatalf("BuildTimeline: %v", err)
	}
	tl.Tracker.Processes()
	want, err := load(file, opts, 1, 1)
	if err != nil {
		t.Fatalf("%+v: Load: %v", opts, err)
	}
	var n uint64
	for _, e := range want.Entries {
		n += e.Count
	}
	if n != samples {
		t.Fatalf("%+v: %d samples in the profile, %d in the recording", opts, n, samples)
	}
	if onePassOK(file, opts) {
		// Read in one pass, unwound as read: the same as two.
		got, err := loadTwoPass(file, opts, 3, 2)
		if err != nil {
			t.Fatalf("%+v in two passes: %v", opts, err)
		}
		if !reflect.DeepEqual(content(got), content(want)) || got.Unwound != want.Unwound {
			t.Fatalf("%+v: read in two passes, the profile differs: %s (unwound %+v, in one pass %+v)",
				opts, firstDifference(got, want), got.Unwound, want.Unwound)
		}
	}
	others := []Options{opts}
	if flatOK(file, opts) {
		// Given the timeline, Load reads sample by sample.
		byTimeline := opts
		byTimeline.Timeline = tl
		others = append(others, byTimeline)
	}
	for _, o := range others {
		got, err := load(file, o, 3, 2)
		if err != nil {
			t.Fatalf("%+v in 3 parts: %v", o, err)
		}
		if !reflect.DeepEqual(content(got), content(want)) {
			t.Fatalf("%+v (flat way: %v): read in 3 parts, the profile differs: %s", o, flatOK(file, o), firstDifference(got, want))
		}
	}
}

// replayOptions are the ways FuzzReplay loads: a callgraph, a flat
// profile, lines and addresses (annotate), JIT code named (by a
// resolver given, or bound to the timeline: replay).
var replayOptions = []Options{{}, {LeafOnly: true}, {Lines: true, Addresses: true}, {Anon: fuzzAnon{}}}

package driver

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// A pid above the kernel's pid_max: no live process is looked up.
const memPID = 1 << 23

const jitBase = 0x7f0000000000

// memSource is a Source that is not perf.data: one JIT process whose
// mappings, JIT data (a perf map) and samples are in memory, resolved as
// a collector resolves samples as they arrive: 7 samples in JIT code, 3
// at an address nothing mapped.
type memSource struct {
	closed bool
	bound  bool
}

func (s *memSource) Name() string       { return "memory" }
func (s *memSource) Warnings() []string { return []string{"one record torn"} }
func (s *memSource) Close() error       { s.closed = true; return nil }

func (s *memSource) Load(ctx context.Context, opts LoadOptions, bind func(anonbind.Processes) *anonbind.Binder) (*profile.Profile, error) {
	tr := process.New()
	tr.SetComm(memPID, memPID, 1, "toyjit", true)
	tr.Map(process.Mapping{PID: memPID, Start: jitBase, End: jitBase + 0x10000, Path: "//anon", Time: 1, Exec: true, Anon: true})
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1000})
	ro := resolve.Options{Symbolizer: symbolize.New(symbolize.Options{}), LeafOnly: opts.LeafOnly, Lines: opts.Lines, Addresses: opts.Addresses}
	if bind != nil {
		s.bound = true
		ro.Anon = bind(memProcs{tr})
	}
	r := resolve.New(b, tr, ro)
	for i := range 10 {
		ip := uint64(jitBase + 0x10)
		if i >= 7 {
			ip = 0x1234
		}
		r.Add(&resolve.Sample{PID: memPID, TID: memPID, Time: uint64(10 + i), Mode: resolve.ModeUser, IP: ip, Event: ev, Count: 1, Period: 1000})
	}
	return b.Profile(), nil
}

// memProcs are the source's processes as the handlers see them.
type memProcs struct{ tr *process.Tracker }

func (m memProcs) Process(pid uint32) anon.Process {
	p := anon.Process{PID: int(pid), NSPID: int(pid), UID: trust.UnknownOwner}
	if pid != memPID {
		return p
	}
	p.Comm = "toyjit"
	path := "/tmp/perf-" + strconv.Itoa(int(pid)) + ".map"
	p.Embedded = map[string][]byte{path: []byte("7f0000000000 100 hot_loop\n")}
	p.Kinds = map[string]string{path: "perfmap"}
	sp, _ := m.tr.Process(pid)
	for _, mp := range sp.Mappings {
		p.Mappings = append(p.Mappings, anon.Mapping{Start: mp.Start, End: mp.End, Path: mp.Path, Time: mp.Time, Exec: mp.Exec})
	}
	return p
}

// funcs are the profile's leaf functions with their samples.
func funcs(p *profile.Profile) map[string]uint64 {
	out := map[string]uint64{}
	for _, e := range p.Entries {
		out[p.FuncOf(p.Nodes[e.Stack].Frame).Name] += e.Count
	}
	return out
}

// TestLoadLeavesJITOut: without JIT options, the samples in JIT code
// are left out with a note that says how to include them, and the
// source is neither bound nor left open.
func TestLoadLeavesJITOut(t *testing.T) {
	src := &memSource{}
	var log strings.Builder
	l, err := Load(context.Background(), src, Options{ExcludeJIT: true, Command: "report", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if src.bound || l.Claims != nil {
		t.Errorf("bound %v, claims %v: want no binder without JIT options", src.bound, l.Claims)
	}
	if l.LeftOut.Samples != 7 || len(l.Notes) != 1 || !strings.Contains(l.Note, "7 of 10 samples") || !strings.Contains(l.Note, "--anon-samples") {
		t.Errorf("left out %d samples, notes %q", l.LeftOut.Samples, l.Notes)
	}
	if got := funcs(l.Profile); len(got) != 1 || l.Profile.Events[0].Count != 3 {
		t.Errorf("functions %v, %d samples: want the 3 outside JIT code", got, l.Profile.Events[0].Count)
	}
	if want := "jitprof report: memory: warning: one record torn\n"; log.String() != want {
		t.Errorf("told %q, want %q", log.String(), want)
	}
	l.Close()
	if !src.closed {
		t.Error("Close did not close the source")
	}
}

// TestLoadNamesJIT: with a handler, the source's processes are bound,
// JIT code is named from the data the source holds, and the claim is
// told and returned.
func TestLoadNamesJIT(t *testing.T) {
	src := &memSource{}
	var log strings.Builder
	l, err := Load(context.Background(), src, Options{ExcludeJIT: true, JIT: JITOptions{Handlers: []string{"perfmap"}}, Command: "report", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := funcs(l.Profile); got["hot_loop"] != 7 {
		t.Errorf("functions %v, want hot_loop with 7 samples", got)
	}
	if len(l.Claims) != 1 || l.Claims[0].Handler != "perfmap" || l.Claims[0].Named != 7 || len(l.Notes) != 0 {
		t.Errorf("claims %+v, notes %q: want perfmap's claim and no note", l.Claims, l.Notes)
	}
	if !strings.Contains(log.String(), "toyjit): JIT code named by perfmap from perfmap /tmp/perf-") {
		t.Errorf("told %q", log.String())
	}
}

// TestLoadFails: a Load that fails closes its source and names it.
func TestLoadFails(t *testing.T) {
	src := &memSource{}
	_, err := Load(context.Background(), src, Options{JIT: JITOptions{Handlers: []string{"no/such handler"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "memory: ") || !src.closed {
		t.Errorf("error %v, source closed %v: want an error naming the source, and it closed", err, src.closed)
	}
	src = &memSource{}
	_, err = Load(context.Background(), src, Options{RequireCallchains: true})
	if err == nil || !strings.Contains(err.Error(), "no callchains") || !src.closed {
		t.Errorf("error %v, source closed %v: want no callchains, and the source closed", err, src.closed)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestReport: the note goes in a text report's header and at its end,
// and to the log for folded stacks.
func TestReport(t *testing.T) {
	for _, f := range []Format{Text, Folded} {
		var out, log strings.Builder
		o := ReportOptions{Options: Options{Command: "report", Log: &log}, Format: f, View: View{Symbols: true}}
		err := Report(context.Background(), &memSource{}, o, func() (io.WriteCloser, error) { return nopCloser{&out}, nil })
		if err != nil {
			t.Fatal(err)
		}
		inOut, inLog := strings.Count(out.String(), "7 of 10 samples"), strings.Count(log.String(), "note: 7 of 10 samples")
		if f == Text && (inOut != 2 || inLog != 0) || f == Folded && (inOut != 0 || inLog != 1) {
			t.Errorf("%s: the note %d times in the output, %d in the log:\n%s\n%s", f, inOut, inLog, out.String(), log.String())
		}
	}
}

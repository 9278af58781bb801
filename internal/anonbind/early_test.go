package anonbind

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// TestSettled: a process claimed while its timeline is read stays
// settled through records that change nothing its handlers read (its
// mappings of data and of files, another process's records), and not
// through one that does: a rename (its JIT image is named by its last
// name), a jitdump marker mapping, JIT memory of a PyPy process.
func TestSettled(t *testing.T) {
	a := &perfdata.Attr{SampleType: perfdata.SampleTID | perfdata.SampleTime, Flags: perfdata.FlagSampleIDAll}
	common := func(pid uint32, time uint64) perfdata.Common {
		return perfdata.Common{Attr: a, PID: pid, TID: pid, Time: time, Misc: perfdata.MiscUser}
	}
	rename := func(pid uint32, time uint64, name string) perfdata.Record {
		return &perfdata.Comm{Common: common(pid, time), PID: pid, TID: pid, Comm: name}
	}
	mmap := func(pid uint32, time, addr uint64, prot uint32, path string) perfdata.Record {
		return &perfdata.Mmap{Common: common(pid, time), Version2: true, PID: pid, TID: pid, Addr: addr, Len: 0x1000, Prot: prot, Filename: path}
	}
	const pid = 10
	for _, c := range []struct {
		name    string
		comm    string
		later   perfdata.Record
		settled bool
	}{
		{"data mapping", "node", mmap(pid, 5, 0x600000, 3, "//anon"), true},
		{"file mapping", "node", mmap(pid, 5, 0x600000, 5, "/usr/lib/libz.so"), true},
		{"JIT memory, not PyPy", "node", mmap(pid, 5, 0x600000, 7, "//anon"), true},
		{"another process renamed", "node", rename(pid+1, 5, "other"), true},
		{"renamed", "node", rename(pid, 5, "renamed"), false},
		{"renamed before, told late", "node", rename(pid, 1, "node-old"), true},
		{"jitdump marker", "node", mmap(pid, 5, 0x700000, 5, "/tmp/jit-10.dump"), false},
		{"JIT memory of PyPy", "pypy3", mmap(pid, 5, 0x600000, 7, "//anon"), false},
		{"data of PyPy", "pypy3", mmap(pid, 5, 0x600000, 3, "//anon"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := process.New()
			tr.Take(rename(pid, 2, c.comm))
			tr.Take(mmap(pid, 3, 0x500000, 7, "//anon"))
			b := New(Recorded(tr, nil, anon.TimeRange{}), Options{Handlers: anon.Builtins(), Proc: linux.Proc{Root: t.TempDir()}})
			if !b.Early() {
				t.Fatal("the built-in handlers cannot be bound early")
			}
			b.Resolve(pid, 0x500010, 4) // claims pid
			if !b.Settled() {
				t.Fatal("not settled before any record")
			}
			tr.Take(c.later)
			if got := b.Settled(); got != c.settled {
				t.Errorf("settled %v after the record, want %v", got, c.settled)
			}
		})
	}
}

// TestEarlyAsWhole: a DWARF recording of a JIT process read in one pass
// with the handlers bound early names its code as the two-pass way
// does, with the handlers bound by the whole timeline: with the perf
// map the recorder embedded, "[JIT perfmap] NAME" by the process's last
// name. Renamed after its first JIT sample, the process would have been
// named by its first name; the one pass gives up, and Bind binds again.
func TestEarlyAsWhole(t *testing.T) {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod |
			perfdata.SampleRegsUser | perfdata.SampleStackUser,
		SampleRegsUser: 0xff0fff, SampleStackUser: 64,
		Flags: perfdata.FlagSampleIDAll,
		IDs:   []uint64{1},
	}
	const pid, n = 10, 1<<14 + 100
	common := func(time uint64) perfdata.Common {
		return perfdata.Common{Attr: a, PID: pid, TID: pid, Time: time, Misc: perfdata.MiscUser}
	}
	bundle := &jitbundle.Bundle{Files: []jitbundle.Entry{{PID: pid, Kind: "perfmap", Path: "/tmp/perf-10.map", Data: []byte("7f0000 100 loop\n")}}}
	for _, renamed := range []bool{false, true} {
		recs := []perfdata.Record{
			&perfdata.Comm{Common: common(1), PID: pid, TID: pid, Comm: "jit"},
			&perfdata.Mmap{Common: common(2), PID: pid, TID: pid, Addr: 0x7f0000, Len: 0x1000, Filename: "//anon"},
		}
		// More samples than the one pass holds unresolved (16,384): the
		// first are resolved, and the process claimed, before the rename.
		for i := range n {
			recs = append(recs, &perfdata.Sample{Common: common(uint64(3 + i)), IP: 0x7f0010, Period: 1000})
		}
		if renamed {
			recs = append(recs, &perfdata.Comm{Common: common(n + 3), PID: pid, TID: pid, Comm: "jit2"})
		}
		f := perftest.OpenData(t, []*perfdata.Attr{a}, recs)
		sym := symbolize.New(symbolize.Options{})
		binder := func(tl *perfdatasrc.Timeline) *Binder {
			return New(Recorded(tl.Tracker, bundle, anon.TimeRange{}), Options{Handlers: anon.Builtins(), Proc: linux.Proc{Root: t.TempDir()}})
		}
		binds := 0
		one, err := perfdatasrc.Load(f, perfdatasrc.Options{Symbolizer: sym,
			BindEarly: func(tl *perfdatasrc.Timeline) (perfdatasrc.EarlyAnon, error) { return binder(tl), nil },
			Bind: func(tl *perfdatasrc.Timeline) (resolve.AnonResolver, error) {
				binds++
				return binder(tl), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		tl, err := perfdatasrc.BuildTimeline(f)
		if err != nil {
			t.Fatal(err)
		}
		two, err := perfdatasrc.Load(f, perfdatasrc.Options{Symbolizer: sym, Timeline: tl, Anon: binder(tl)})
		if err != nil {
			t.Fatal(err)
		}
		name := "[JIT perfmap] jit"
		if renamed {
			name += "2"
		}
		for what, p := range map[string]*profile.Profile{"one pass": one, "two passes": two} {
			var got []string
			for _, e := range p.Entries {
				fn := p.FuncOf(p.Nodes[e.Stack].Frame)
				got = append(got, fmt.Sprintf("%s in %s: %d", fn.Name, p.Images[fn.Image].Name, e.Count))
			}
			if want := []string{fmt.Sprintf("loop in %s: %d", name, n)}; !reflect.DeepEqual(got, want) {
				t.Errorf("renamed %v, %s: %q, want %q", renamed, what, got, want)
			}
		}
		if want := map[bool]int{false: 0, true: 1}[renamed]; binds != want {
			t.Errorf("renamed %v: Bind asked %d times, want %d", renamed, binds, want)
		}
	}
}

package anonbind

import (
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
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

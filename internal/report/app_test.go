package report

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
)

// apps builds a profile of three processes sharing libc and the kernel:
// app (with a worker thread that renamed itself), a program whose name
// the kernel cut to 15 bytes in its comm, and a process whose samples
// all fell in libc, whose executable is therefore never seen.
func apps() *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 4000})
	app := b.Image(profile.Image{Name: "/usr/bin/app"})
	long := b.Image(profile.Image{Name: "/opt/bin/averyveryverylongname"})
	libc := b.Image(profile.Image{Name: "/lib/libc.so.6"})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	fr := func(im int32, name string) int32 {
		return b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: im, Kernel: im == kern})})
	}
	main, lmain, memcpy, sys := fr(app, "main"), fr(long, "main"), fr(libc, "memcpy"), fr(kern, "do_syscall_64")
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	thread := func(pid, tid uint32, comm string) int32 {
		return b.Thread(profile.Thread{PID: pid, TID: tid, Comm: b.String(comm)})
	}
	t1, t2 := thread(7, 7, "app"), thread(7, 8, "worker")
	t3, t4 := thread(9, 9, "averyveryverylo"), thread(11, 11, "sleepy")
	add := func(th, stack int32, n uint64) {
		b.Add(profile.Key{Stack: stack, Thread: th, CPU: -1, Event: ev}, n, n*250000)
	}
	add(t1, push(main), 4)
	add(t1, push(main, memcpy), 2)
	add(t2, push(memcpy), 3)
	add(t2, push(memcpy, sys), 1)
	add(t3, push(lmain), 2)
	add(t3, push(lmain, memcpy), 1)
	add(t3, push(lmain, sys), 2)
	add(t4, push(memcpy), 1)
	add(t4, push(memcpy, sys), 3)
	return b.Profile()
}

func TestAppGolden(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"apps.userapp.dso.text", Options{Sort: []string{KeyUserApp, KeyDSO}}},
		{"apps.app.dso.text", Options{Sort: []string{KeyApp, KeyDSO}}},
		{"apps.pid.tid.app.dso.sym.text", Options{Sort: []string{KeyPID, KeyTID, KeyApp, KeyDSO, KeySym}}},
	}
	p := apps()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, p, c.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.name), buf.Bytes())
		})
	}
}

// TestAppBeforeExec: a shell's child that ran only libc between its fork
// and its exec keeps the shell's comm, and so its application, not the
// program it went on to exec (perf's comm key agrees). A thread the
// program itself started that ran only libc is the program's. When the
// parent's program was never seen, the child's application is its comm.
func TestAppBeforeExec(t *testing.T) {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 4000})
	dash := b.Image(profile.Image{Name: "/usr/bin/dash"})
	busy := b.Image(profile.Image{Name: "/tmp/busy"})
	libc := b.Image(profile.Image{Name: "/lib/libc.so.6"})
	fr := func(im int32, name string) int32 {
		return b.Push(-1, b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: im})}))
	}
	eval, work, malloc := fr(dash, "evaltree"), fr(busy, "work"), fr(libc, "malloc")
	thread := func(pid, tid uint32, comm string) int32 {
		return b.Thread(profile.Thread{PID: pid, TID: tid, Comm: b.String(comm)})
	}
	add := func(th, stack int32) {
		b.Add(profile.Key{Stack: stack, Thread: th, CPU: -1, Event: ev}, 1, 250000)
	}
	shell, child, execd, worker := thread(5, 5, "sh"), thread(6, 6, "sh"), thread(6, 6, "busy"), thread(6, 7, "sh")
	add(shell, eval)
	add(child, malloc)
	add(execd, work)
	add(worker, malloc)
	bash, bashExecd := thread(9, 9, "bash"), thread(9, 9, "busy")
	add(bash, malloc)
	add(bashExecd, work)
	p := b.Profile()
	a := appIndex{p: p}
	for _, c := range []struct {
		th   int32
		want string
	}{{shell, "/usr/bin/dash"}, {child, "/usr/bin/dash"}, {execd, "/tmp/busy"}, {worker, "/tmp/busy"}, {bash, "bash"}, {bashExecd, "/tmp/busy"}} {
		e := p.Entries[slices.IndexFunc(p.Entries, func(e profile.Entry) bool { return e.Thread == c.th })]
		if got := appName(p, a.key(&e, -1, true)); got != c.want {
			t.Errorf("thread %d/%d %s: app %s, want %s", p.Threads[c.th].PID, p.Threads[c.th].TID, p.Strings[p.Threads[c.th].Comm], got, c.want)
		}
	}
}

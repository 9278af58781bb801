package profiletest

import "github.com/jitprof/jitprof/internal/profile"

// Sample builds a small profile by hand: two threads, a recursive stack,
// a kernel frame and an anonymous (JIT) bucket, with recording fields.
func Sample() *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 4000})
	app := b.Image(profile.Image{Name: "/usr/bin/app", BuildID: "abcd", Start: 0x400000, Limit: 0x500000})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	anon := b.Image(profile.Image{Name: "anon (tgid:7 range:0x7f0000-0x7f1000)", Kind: profile.ImageAnon, Start: 0x7f0000, Limit: 0x7f1000})
	fr := func(im int32, name string, addr uint64, line int32) int32 {
		f := b.Func(profile.Func{Name: name, Image: im, Addr: addr, File: "app.c", Kernel: im == kern})
		return b.Frame(profile.Frame{Func: f, File: b.String("app.c"), Line: line})
	}
	main, work, rec, sys, jit := fr(app, "main", 0x1000, 10), fr(app, "work", 0x1100, 20), fr(app, "rec", 0x1200, 30), fr(kern, "do_syscall_64", 0xffffffff81000000, 0), fr(anon, "anon (tgid:7 range:0x7f0000-0x7f1000)", 0x7f0000, 0)
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	t1 := b.Thread(profile.Thread{PID: 7, TID: 7, Comm: b.String("app")})
	t2 := b.Thread(profile.Thread{PID: 7, TID: 8, Comm: b.String("worker")})
	b.Add(profile.Key{Stack: push(main, work), Thread: t1, CPU: 0, Event: ev}, 5, 1250000)
	b.Add(profile.Key{Stack: push(main, rec, rec, rec), Thread: t1, CPU: 1, Event: ev}, 3, 750000)
	b.Add(profile.Key{Stack: push(main, work, sys), Thread: t2, CPU: 1, Event: ev}, 1, 250000)
	b.Add(profile.Key{Stack: push(main, jit), Thread: t2, CPU: 0, Event: ev}, 2, 500000)
	m := b.Meta()
	m.Cmdline = []string{"perf", "record", "-g", "./app"}
	m.StartNS, m.EndNS, m.Lost = 1_000_000_000, 1_003_000_000, 2
	return b.Profile()
}

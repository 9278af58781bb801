package otlp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

// jitProfile is a profile of two processes: minijit, whose JIT code
// jitlog named by generation, and node, whose perf map named its code;
// with each sample's time, the executables and the wall clock.
func jitProfile() *profile.Profile {
	b := profile.NewBuilder()
	b.KeepTimes()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 1000})
	exe := b.Image(profile.Image{Name: "/tmp/minijit", BuildID: "5eed", Start: 0x400000, Limit: 0x500000})
	libc := b.Image(profile.Image{Name: "/usr/lib/x86_64-linux-gnu/libc.so.6", BuildID: "c0ffee", Start: 0x7f0000000000, Limit: 0x7f0000100000, Offset: 0x1000})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	jit := b.Image(profile.Image{Name: "[JIT jitlog] minijit", Kind: profile.ImageAnon, Handler: "jitlog"})
	v8 := b.Image(profile.Image{Name: "[JIT perfmap] node", Kind: profile.ImageAnon, Handler: "perfmap"})
	bucket := b.Image(profile.Image{Name: "anon (tgid:30 range:0x1000-0x2000)", Kind: profile.ImageAnon, Start: 0x1000, Limit: 0x2000})
	fr := func(im int32, f profile.Func) int32 {
		f.Image = im
		return b.Frame(profile.Frame{Func: b.Func(f)})
	}
	main := fr(exe, profile.Func{Name: "main.main"})
	fib3 := fr(jit, profile.Func{Name: "fib [gen 3]", Gen: 3})
	fib5 := fr(jit, profile.Func{Name: "fib [gen 5]", Gen: 5})
	memset := fr(libc, profile.Func{Name: "__memset_avx2_unaligned_erms"})
	sys := fr(kern, profile.Func{Name: "asm_sysvec_apic_timer_interrupt", Kernel: true})
	js := fr(v8, profile.Func{Name: "LazyCompile:*hot /app/x.js:3"})
	anon := fr(bucket, profile.Func{Name: "anon (tgid:30 range:0x1000-0x2000)"})
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	t1 := b.Thread(profile.Thread{PID: 20, TID: 20, Comm: b.String("minijit")})
	t2 := b.Thread(profile.Thread{PID: 20, TID: 21, Comm: b.String("minijit")})
	t3 := b.Thread(profile.Thread{PID: 30, TID: 30, Comm: b.String("node")})
	at := func(k profile.Key, times ...uint64) {
		for _, tm := range times {
			b.AddAt(k, 1, 1_000_000, tm)
		}
	}
	at(profile.Key{Stack: push(main, fib3), Thread: t1, CPU: 0, Event: ev}, 1000, 1003)
	at(profile.Key{Stack: push(main, fib3), Thread: t1, CPU: 1, Event: ev}, 1001) // one sample with the CPU 0 ones
	at(profile.Key{Stack: push(main, fib5), Thread: t2, CPU: 1, Event: ev}, 1002)
	at(profile.Key{Stack: push(main, memset, sys), Thread: t1, CPU: 0, Event: ev}, 1004)
	at(profile.Key{Stack: push(js), Thread: t3, CPU: 0, Event: ev}, 1005, 1006, 1007)
	at(profile.Key{Stack: push(anon), Thread: t3, CPU: 1, Event: ev}, 1008)
	at(profile.Key{Stack: -1, Thread: t3, CPU: 1, Event: ev}, 1009)
	m := b.Meta()
	m.StartNS, m.EndNS, m.Hostname = 1000, 1009, "box"
	m.WallNS, m.ClockNS = 1_700_000_000_000_000_000, 500
	m.Processes = []profile.Process{{PID: 20, Exe: "/tmp/minijit", BuildID: "5eed"}, {PID: 30, Exe: "/usr/bin/nodejs"}}
	return b.Profile()
}

// describe is a sample as one line: its resource, thread, values and
// times (less the first sample's wall time), and its stack, root first,
// each frame with its type and, for JIT code, handler and generation.
func describe(s otlptest.Sample, t0 uint64) string {
	var fs []string
	for _, f := range slices.Backward(s.Stack) {
		d := fmt.Sprintf("%s(%v", f.Name, f.Attrs["profile.frame.type"])
		if h, ok := f.Attrs[AttrHandler]; ok {
			d += fmt.Sprintf(" %v %v", h, f.Attrs[AttrGeneration])
		}
		fs = append(fs, d+")")
	}
	var ts []string
	for _, t := range s.Times {
		ts = append(ts, fmt.Sprint(t-t0))
	}
	return fmt.Sprintf("%v %v/%v %v@[%s] %s", s.Resource["process.pid"], s.Attrs["thread.id"], s.Attrs["thread.name"], s.Values, strings.Join(ts, " "), strings.Join(fs, ";"))
}

func TestEncode(t *testing.T) {
	p := jitProfile()
	b, err := Encode(p, Options{Version: "v1.2.3", Machine: Machine{"box", "0123abcd"}, Attributes: []Attribute{{"deployment.environment", "test"}, {"host.name", "renamed"}}})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := otlptest.DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	t0 := uint64(1_700_000_000_000_000_000 + 1000 - 500) // the wall time of the first sample
	var got []string
	for _, s := range ss {
		got = append(got, describe(s, t0))
	}
	want := []string{
		"20 20/minijit []@[0 1 3] main.main(native);fib [gen 3](jit jitlog 3)",
		"20 21/minijit []@[2] main.main(native);fib [gen 5](jit jitlog 5)",
		"20 20/minijit []@[4] main.main(native);__memset_avx2_unaligned_erms(native);asm_sysvec_apic_timer_interrupt(kernel)",
		"30 30/node []@[9] ", // an empty stack: the zero Stack
		"30 30/node []@[5 6 7] LazyCompile:*hot /app/x.js:3(v8js perfmap <nil>)",
		"30 30/node []@[8] anon (tgid:30 range:0x1000-0x2000)(v8js)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range ss {
		if s.SampleType != "samples/count" || s.PeriodType != "cpu/nanoseconds" || s.Period != 1_000_000 || s.Scope != "jitprof" {
			t.Errorf("types %s, %s, period %d, scope %q: want samples/count, cpu/nanoseconds, 1000000, jitprof", s.SampleType, s.PeriodType, s.Period, s.Scope)
		}
		if s.Time != t0 || s.Duration != 10 {
			t.Errorf("profile at %d for %d ns, want %d for 10", s.Time, s.Duration, t0)
		}
	}
	res := map[any]map[string]any{}
	for _, s := range ss {
		res[s.Resource["process.pid"]] = s.Resource
	}
	wantRes := map[int64]string{
		20: "deployment.environment=test host.id=0123abcd host.name=renamed process.executable.build_id.gnu=5eed process.executable.name=minijit process.executable.path=/tmp/minijit process.pid=20 service.name=minijit",
		30: "deployment.environment=test host.id=0123abcd host.name=renamed process.executable.name=nodejs process.executable.path=/usr/bin/nodejs process.pid=30 service.name=nodejs",
	}
	for pid, want := range wantRes {
		var kv []string
		for k, v := range res[pid] {
			kv = append(kv, fmt.Sprintf("%s=%v", k, v))
		}
		slices.Sort(kv)
		if got := strings.Join(kv, " "); got != want {
			t.Errorf("resource of %d: %s\nwant %s", pid, got, want)
		}
	}
	// The build-ids are on the mappings too, as Pyroscope reads them.
	for _, f := range ss[2].Stack {
		if f.Mapping == "/usr/lib/x86_64-linux-gnu/libc.so.6" && (f.MapAttrs["process.executable.build_id.gnu"] != "c0ffee" || f.Start != 0x7f0000000000) {
			t.Errorf("libc's mapping: %+v", f)
		}
	}
}

// TestEncodeOneCPU: a profile without CPUs, as the daemon's push, its
// entries unsorted and each of one stack and thread (the encoder does
// not group them), gives the samples of the same profile with CPUs.
func TestEncodeOneCPU(t *testing.T) {
	p := jitProfile()
	t0 := uint64(1_700_000_000_000_000_000 + 1000 - 500)
	var want []string
	b, err := Encode(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := otlptest.DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		want = append(want, describe(s, t0))
	}
	slices.Sort(want)
	// The entries of one stack and thread on several CPUs made one,
	// their times in no order, the entries backwards.
	var entries []profile.Entry
	for _, e := range slices.Backward(p.Entries) {
		k := e.Key
		k.CPU = -1
		if i := slices.IndexFunc(entries, func(x profile.Entry) bool { return x.Key == k }); i >= 0 {
			entries[i].Times = append(slices.Clone(e.Times), entries[i].Times...)
			entries[i].Count += e.Count
			entries[i].Period += e.Period
			continue
		}
		entries = append(entries, profile.Entry{Key: k, Value: e.Value, Times: e.Times})
	}
	p.Entries = entries
	if b, err = Encode(p, Options{}); err != nil {
		t.Fatal(err)
	}
	if ss, err = otlptest.DecodeRequest(b); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		got = append(got, describe(s, t0))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("samples without CPUs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEncodeHost: a recording made on another machine gets its own
// host.name and not this machine's host.id.
func TestEncodeHost(t *testing.T) {
	here := Machine{"here", "0123abcd"}
	for _, c := range []struct {
		recorded, want string
	}{{"here", "here 0123abcd"}, {"", "here 0123abcd"}, {"elsewhere", "elsewhere <nil>"}} {
		p := jitProfile()
		p.Hostname = c.recorded
		b, err := Encode(p, Options{Machine: here})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := otlptest.DecodeRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ss[0].Resource["host.name"], " ", ss[0].Resource["host.id"]); got != c.want {
			t.Errorf("recorded on %q: host.name and host.id %s, want %s", c.recorded, got, c.want)
		}
	}
}

// TestEncodeServiceName: the service name given wins over
// OTEL_RESOURCE_ATTRIBUTES', which wins over the executable's name.
func TestEncodeServiceName(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{}, "minijit"},
		{Options{Attributes: []Attribute{{"service.name", "attrs"}}}, "attrs"},
		{Options{ServiceName: "flag", Attributes: []Attribute{{"service.name", "attrs"}}}, "flag"},
	} {
		b, err := Encode(jitProfile(), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := otlptest.DecodeRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := ss[0].Resource["service.name"]; got != c.want {
			t.Errorf("%+v: service.name %v, want %s", c.opts, got, c.want)
		}
	}
}

// TestEncodeAggregated: a profile without times (a session's) gives each
// sample its count, and, without a wall clock, ends at Options.End.
func TestEncodeAggregated(t *testing.T) {
	p := profiletest.Sample()
	end := time.Unix(1_700_000_000, 0)
	b, err := Encode(p, Options{End: end})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := otlptest.DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range ss {
		if len(s.Times) != 0 || len(s.Values) != 1 {
			t.Errorf("a sample with values %v and times %v, want one value and no time", s.Values, s.Times)
		}
		total += s.Count()
		// 11 samples of 250,000 ns in frequency mode: their mean.
		if s.Period != 250_000 {
			t.Errorf("period %d, want the samples' mean, 250000", s.Period)
		}
		if want := uint64(end.UnixNano()) - (p.EndNS - p.StartNS); s.Time != want {
			t.Errorf("profile at %d, want %d: ending at Options.End", s.Time, want)
		}
	}
	if total != 11 {
		t.Errorf("%d samples, want 11", total)
	}
	// The anon bucket of a process no handler claimed is JIT code still,
	// of a runtime unknown here.
	for _, s := range ss {
		for _, f := range s.Stack {
			if strings.HasPrefix(f.Name, "anon ") && f.Attrs["profile.frame.type"] != FrameJIT {
				t.Errorf("%s: frame type %v, want %s", f.Name, f.Attrs["profile.frame.type"], FrameJIT)
			}
		}
	}
}

// TestEncodeIdentity: equal profiles get equal bytes and profile IDs (a
// batch sent again is the same batch); another process's do not.
func TestEncodeIdentity(t *testing.T) {
	a, _ := Encode(jitProfile(), Options{})
	b, _ := Encode(jitProfile(), Options{})
	if string(a) != string(b) {
		t.Fatal("two encodings of one profile differ")
	}
	ss, err := otlptest.DecodeRequest(a)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[[16]byte]any{}
	for _, s := range ss {
		if s.ProfileID == ([16]byte{}) {
			t.Fatal("a profile without an ID")
		}
		if pid, ok := ids[s.ProfileID]; ok && pid != s.Resource["process.pid"] {
			t.Errorf("processes %v and %v share a profile ID", pid, s.Resource["process.pid"])
		}
		ids[s.ProfileID] = s.Resource["process.pid"]
	}
}

func TestJITFrameType(t *testing.T) {
	for _, c := range []struct{ handler, exe, comm, want string }{
		{"perfmap", "/usr/bin/node", "node", "v8js"},
		{"jitdump", "", "node", "v8js"},
		{"perfmap", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "java", "jvm"},
		{"perfmap", "/usr/lib/erlang/erts-13.1.5/bin/beam.smp", "beam.smp", "beam"},
		{"perfmap", "/usr/bin/python3.12", "python3", "cpython"},
		{"perfmap", "/usr/share/dotnet/dotnet", "dotnet", "dotnet"},
		{"perfmap", "/usr/sbin/php-fpm8.2", "php-fpm8.2", "php"},
		{"pypy", "/usr/lib/pypy3.9/pypy3.9-c", "pypy3", FramePyPy},
		{"jitlog", "/tmp/minijit", "minijit", FrameJIT},
		{"", "", "app", FrameJIT},
	} {
		if got := jitFrameType(c.handler, c.exe, c.comm); got != c.want {
			t.Errorf("%s in %s (%s): %s, want %s", c.handler, c.exe, c.comm, got, c.want)
		}
	}
}

// TestAppend: Append writes what Encode writes after what the buffer
// holds, into a buffer used again as the push uses it, and leaves the
// profile's times as they were (a sample's times may be the entry's
// own).
func TestAppend(t *testing.T) {
	p := jitProfile()
	var times [][]uint64
	for _, e := range p.Entries {
		times = append(times, slices.Clone(e.Times))
	}
	want, err := Encode(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Append([]byte("x"), p, Options{})
	if err != nil || string(got) != "x"+string(want) {
		t.Fatalf("Append after a byte: %d bytes (%v), want that byte and Encode's %d", len(got), err, len(want))
	}
	got, err = Append(got[:0], p, Options{})
	if err != nil || string(got) != string(want) {
		t.Fatalf("Append into a buffer used again: %d bytes (%v), want Encode's %d", len(got), err, len(want))
	}
	for i, e := range p.Entries {
		if !slices.Equal(e.Times, times[i]) {
			t.Errorf("times of %+v: %v after encoding, %v before", e.Key, e.Times, times[i])
		}
	}
}

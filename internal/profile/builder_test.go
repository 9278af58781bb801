package profile

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// stackNames is the stack of e, leaf first, as image:function names.
func stackNames(p *Profile, e Entry) string {
	var names []string
	for _, fr := range p.Stack(nil, e.Stack) {
		f := p.FuncOf(fr)
		names = append(names, p.Images[f.Image].Name+":"+f.Name)
	}
	return strings.Join(names, " ") + " in " + p.Strings[p.Threads[e.Thread].Comm]
}

// TestRetain: Retain keeps the entries it is given, in order, with
// their values, stacks, threads and images as they were, and of the
// tables only what they reach.
func TestRetain(t *testing.T) {
	b := NewBuilder()
	b.Event(Event{Name: "cpu-clock", Freq: 4000})
	app := b.Image(Image{Name: "/app"})
	lib := b.Image(Image{Name: "/lib.so"})
	b.SetNoSymbols(lib, "no symbol table")
	fn := func(im int32, name string) int32 { return b.Frame(Frame{Func: b.Func(Func{Name: name, Image: im})}) }
	main := b.Push(-1, fn(app, "main"))
	work := b.Push(main, fn(app, "work"))
	copyFn := b.Push(main, fn(lib, "copy"))
	gone := b.Push(b.Push(-1, fn(app, "gone")), fn(app, "gone2"))
	t1 := b.Thread(Thread{PID: 1, TID: 1, Comm: b.String("one")})
	t2 := b.Thread(Thread{PID: 2, TID: 2, Comm: b.String("two")})
	b.Add(Key{Stack: work, Thread: t1, CPU: -1}, 3, 30)
	b.Add(Key{Stack: gone, Thread: t2, CPU: 1}, 5, 50)
	b.Add(Key{Stack: copyFn, Thread: t1, CPU: 0}, 7, 70)
	old := b.Meta()
	keep := []Entry{old.Entries[2], old.Entries[0]}
	keep[0].Value = Value{Count: 1, Period: 10}
	r := Retain(old, keep).Profile()
	if len(r.Events) != 1 || r.Events[0].Name != "cpu-clock" || r.Events[0].Freq != 4000 || r.Events[0].Count != 4 {
		t.Errorf("events %+v; want cpu-clock at 4000 Hz with the 4 samples kept", r.Events)
	}
	var got []string
	for _, e := range r.Entries {
		got = append(got, stackNames(r, e))
	}
	want := []string{"/app:work /app:main in one", "/lib.so:copy /app:main in one"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	if len(r.Funcs) != 3 || len(r.Nodes) != 3 || len(r.Threads) != 1 || len(r.Images) != 2 {
		t.Errorf("%d functions, %d nodes, %d threads, %d images; want what the two entries reach: 3, 3, 1, 2", len(r.Funcs), len(r.Nodes), len(r.Threads), len(r.Images))
	}
	for _, im := range r.Images {
		if im.Name == "/lib.so" && im.NoSymbols != "no symbol table" {
			t.Errorf("/lib.so lost why it has no symbols: %+v", im)
		}
	}
}

// TestBuilderInterns: equal images, functions, frames, stack nodes,
// strings and threads get one id each, in the order first met; different
// ones get their own.
func TestBuilderInterns(t *testing.T) {
	b := NewBuilder()
	libc := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "ab"})
	if again := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "ab", NoSymbols: "ignored: the first one gives the fields"}); again != libc {
		t.Errorf("the same image: ids %d and %d", libc, again)
	}
	if other := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "cd"}); other == libc {
		t.Error("another build-id: the same id")
	}
	f := b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x100})
	if b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x100}) != f || b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x200}) == f {
		t.Error("functions are interned by image, name and address")
	}
	fr := b.Frame(Frame{Func: f})
	root := b.Push(-1, fr)
	if b.Push(-1, fr) != root {
		t.Error("the same node: two ids")
	}
	child := b.Push(root, fr)
	if child == root || b.Push(root, fr) != child {
		t.Errorf("a node is its parent and frame: root %d, child %d", root, child)
	}
	x := b.String("x")
	if b.String("") != 0 || b.String("x") != x || b.String("y") == x {
		t.Error("strings: \"\" is 0, equal strings one id")
	}
	th := b.Thread(Thread{PID: 1, TID: 2})
	if b.Thread(Thread{PID: 1, TID: 2}) != th {
		t.Error("the same thread: two ids")
	}
	p := b.Meta()
	if len(p.Images) != 2 || len(p.Funcs) != 2 || len(p.Frames) != 1 || len(p.Nodes) != 2 || len(p.Strings) != 3 || len(p.Threads) != 1 {
		t.Errorf("tables: %d images, %d funcs, %d frames, %d nodes, %d strings, %d threads; want 2, 2, 1, 2, 3, 1",
			len(p.Images), len(p.Funcs), len(p.Frames), len(p.Nodes), len(p.Strings), len(p.Threads))
	}
	if p.Nodes[child] != (Node{root, fr}) || p.Images[libc].NoSymbols != "" {
		t.Errorf("node %+v, image %+v", p.Nodes[child], p.Images[libc])
	}
}

// TestAddTimes: samples added with their times at once make the entry,
// the event's totals and the times that adding them one by one makes,
// after what was added before.
func TestAddTimes(t *testing.T) {
	build := func(bulk bool) *Profile {
		b := NewBuilder()
		b.KeepTimes()
		ev := b.Event(Event{Name: "cpu-clock"})
		k := Key{Stack: -1, Thread: -1, CPU: 1, Event: ev}
		other := Key{Stack: -1, Thread: -1, CPU: 2, Event: ev}
		b.AddAt(k, 1, 10, 5)
		b.AddAt(other, 1, 3, 6)
		times := []uint64{7, 9, 8}
		if bulk {
			b.AddTimes(k, 30, times)
		} else {
			b.AddAt(k, 1, 30, times[0])
			b.AddAt(k, 1, 0, times[1])
			b.AddAt(k, 1, 0, times[2])
		}
		return b.Profile()
	}
	one, bulk := build(false), build(true)
	if !reflect.DeepEqual(one, bulk) {
		t.Errorf("AddTimes:\n%+v\nAddAt one by one:\n%+v", bulk, one)
	}
	if e := bulk.Events[0]; e.Count != 5 || e.Total != 43 {
		t.Errorf("event counts %d samples, period %d; want 5, 43", e.Count, e.Total)
	}
	if i := slices.IndexFunc(bulk.Entries, func(e Entry) bool { return e.Key == Key{Stack: -1, Thread: -1, CPU: 1} }); i < 0 || !slices.Equal(bulk.Entries[i].Times, []uint64{5, 7, 9, 8}) {
		t.Errorf("entries %+v, want one of CPU 1 at times [5 7 9 8]", bulk.Entries)
	}
}

// TestTakeEntries: the entries handed over are those added since the
// last time, with their times and counts alone; the Builder goes on
// with the same ids for its tables and counts the next interval from 0.
func TestTakeEntries(t *testing.T) {
	b := NewBuilder()
	b.KeepTimes()
	b.Event(Event{Name: "cpu-clock", Period: 10})
	im := b.Image(Image{Name: "/app"})
	main := b.Push(-1, b.Frame(Frame{Func: b.Func(Func{Name: "main", Image: im})}))
	th := b.Thread(Thread{PID: 1, TID: 1, Comm: b.String("app")})
	k := Key{Stack: main, Thread: th, CPU: -1}
	b.AddTimes(k, 20, []uint64{5, 6})
	es := b.TakeEntries()
	if want := []Entry{{k, Value{2, 20}, []uint64{5, 6}}}; !reflect.DeepEqual(es, want) {
		t.Fatalf("first interval: %v, want %v", es, want)
	}
	if ev := b.Meta().Events[0]; ev.Count != 0 || ev.Total != 0 {
		t.Errorf("the event's counts after TakeEntries: %+v, want 0", ev)
	}
	// The same place again: the same ids, a new entry of its own.
	if b.Push(-1, b.Frame(Frame{Func: b.Func(Func{Name: "main", Image: im})})) != main {
		t.Errorf("the stack got another id after TakeEntries")
	}
	b.AddAt(k, 1, 10, 7)
	other := b.Push(main, b.Frame(Frame{Func: b.Func(Func{Name: "work", Image: im})}))
	k2 := Key{Stack: other, Thread: th, CPU: -1}
	b.AddAt(k2, 1, 10, 8)
	es = b.TakeEntries()
	if want := []Entry{{k, Value{1, 10}, []uint64{7}}, {k2, Value{1, 10}, []uint64{8}}}; !reflect.DeepEqual(es, want) {
		t.Errorf("second interval: %v, want %v", es, want)
	}
	if es := b.TakeEntries(); len(es) != 0 {
		t.Errorf("an empty interval: %v", es)
	}
}

// TestTimesAsked: the times added show in the entries' Times whenever
// they are asked for (Meta, TakeEntries, Profile), each entry's in the
// order added, those added after an ask after the ones before it.
func TestTimesAsked(t *testing.T) {
	b := NewBuilder()
	b.KeepTimes()
	ev := b.Event(Event{Name: "cpu-clock"})
	k1 := Key{Stack: -1, Thread: -1, CPU: 1, Event: ev}
	k2 := Key{Stack: -1, Thread: -1, CPU: 2, Event: ev}
	want := func(what string, es []Entry, w1, w2 []uint64) {
		t.Helper()
		times := func(k Key) []uint64 {
			if i := slices.IndexFunc(es, func(e Entry) bool { return e.Key == k }); i >= 0 {
				return es[i].Times
			}
			return nil
		}
		if !slices.Equal(times(k1), w1) || !slices.Equal(times(k2), w2) {
			t.Errorf("%s: times %v and %v, want %v and %v", what, times(k1), times(k2), w1, w2)
		}
	}
	b.AddTimes(k1, 2, []uint64{1, 2})
	b.AddAt(k2, 2, 2, 3)
	b.AddTimes(k1, 1, []uint64{4})
	want("Meta", b.Meta().Entries, []uint64{1, 2, 4}, []uint64{3, 3})
	b.AddTimes(k1, 1, []uint64{5})
	b.AddTimes(k2, 0, nil)
	m := b.Meta()
	want("Meta again", m.Entries, []uint64{1, 2, 4, 5}, []uint64{3, 3})
	es := b.TakeEntries()
	want("TakeEntries", es, []uint64{1, 2, 4, 5}, []uint64{3, 3})
	if len(es) != 2 || es[0].Count != 4 || es[1].Count != 2 {
		t.Errorf("entries taken %+v, want k1's 4 samples and k2's 2", es)
	}
	b.AddAt(k2, 1, 1, 6)
	want("Profile after TakeEntries", b.Profile().Entries, nil, []uint64{6})
}

// TestEntryTable: samples of keys that differ in any field, added in a
// random order over intervals cut by TakeEntries, make one entry a key
// each with all of its samples, as a map of keys counts them, while the
// Builder's table of entries grows and empties.
func TestEntryTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder()
	b.Event(Event{Name: "a"})
	b.Event(Event{Name: "b"})
	for interval, n := range []int{10, 5000, 300, 0, 20000} {
		want := map[Key]uint64{}
		for range n {
			k := Key{Stack: int32(rng.IntN(50)) - 1, Thread: int32(rng.IntN(40)), CPU: int32(rng.IntN(3)) - 1, Event: int32(rng.IntN(2))}
			want[k]++
			b.Add(k, 1, 2)
		}
		es := b.TakeEntries()
		got := map[Key]uint64{}
		for _, e := range es {
			if _, dup := got[e.Key]; dup {
				t.Fatalf("interval %d: two entries of %+v", interval, e.Key)
			}
			got[e.Key] = e.Count
			if e.Period != 2*e.Count {
				t.Errorf("interval %d: %+v: period %d of %d samples", interval, e.Key, e.Period, e.Count)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("interval %d: %d entries, want %d", interval, len(got), len(want))
		}
	}
}

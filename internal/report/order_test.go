package report

import (
	"bytes"
	"testing"

	"github.com/jitprof/jitprof/internal/profile"
)

// TestRowsThatPrintAlike: two functions of one name (C++ overloads,
// named without their parameters) with the same samples make two rows
// that print alike; their order, and so the trees under them, must not
// follow the order of a map. With -g their trees differ: each is the
// other's caller.
func TestRowsThatPrintAlike(t *testing.T) {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock"})
	im := b.Image(profile.Image{Name: "/usr/bin/node"})
	fr := func(name string, addr uint64) int32 {
		return b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: im, Addr: addr})})
	}
	outer, inner, leaf := fr("node::StartExecution", 0x1000), fr("node::StartExecution", 0x2000), fr("work", 0x3000)
	th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("node")})
	n := b.Push(b.Push(b.Push(-1, outer), inner), leaf)
	b.Add(profile.Key{Stack: n, Thread: th, Event: ev}, 10, 10)
	p := b.Profile()
	opts := Options{Sort: []string{KeySym}, Children: true, Chains: Chains{Graph: true, Caller: true}}
	var first string
	for i := range 50 {
		var buf bytes.Buffer
		if err := Write(&buf, p, opts); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = buf.String()
		} else if buf.String() != first {
			t.Fatalf("run %d ordered the rows otherwise:\n%s\nrun 0:\n%s", i, buf.String(), first)
		}
	}
}

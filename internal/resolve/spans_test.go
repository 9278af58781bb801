package resolve

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// TestKernelSpans: kernel addresses resolved through the spans a
// Resolver keeps (kspans) are named as a Resolver that has met none
// names each: every address of a kernel of 40 functions, data between
// some and a module after them, asked in random order by several
// processes, with leaves alone and with callchains, and by address. The
// spans are the functions met, not the addresses.
func TestKernelSpans(t *testing.T) {
	const kernel = 0xffffffff81000000
	var text strings.Builder
	fmt.Fprintf(&text, "%x T _text\n", uint64(kernel))
	addr := uint64(kernel + 0x100)
	for i := range 40 {
		fmt.Fprintf(&text, "%x T f%d\n", addr, i)
		addr += 0x20 + uint64(i%5)*0x30
		if i%7 == 3 {
			fmt.Fprintf(&text, "%x D data%d\n", addr, i)
			addr += 0x40
		}
	}
	fmt.Fprintf(&text, "%x t modf [mod]\n", addr+0x1000)
	kallsyms := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(kallsyms, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{Kallsyms: kallsyms, DebugDirs: []string{}, BuildIDCaches: []string{}})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, opts := range []Options{{LeafOnly: true}, {}, {Addresses: true}} {
		opts.Symbolizer = sym
		name := func(r *Resolver, b *profile.Builder, s Sample) string {
			node := r.stack(&s, 0)
			p := b.Meta()
			var names []string
			for n := node; n >= 0; n = p.Nodes[n].Parent {
				fr := p.Frames[p.Nodes[n].Frame]
				f := p.FuncOf(p.Nodes[n].Frame)
				names = append(names, fmt.Sprintf("%s+%#x@%#x", f.Name, f.Addr, fr.Addr))
			}
			return strings.Join(names, ";")
		}
		b := profile.NewBuilder()
		b.Event(profile.Event{Name: "cpu-clock"})
		r := New(b, process.New(), opts)
		for i := range 3000 {
			ip := kernel - 0x10 + rng.Uint64N(addr+0x1100-kernel)
			s := Sample{PID: uint32(10 + i%4), TID: uint32(10 + i%4), Time: uint64(i), CPU: -1, Mode: ModeKernel, IP: ip, Count: 1, Period: 1}
			if !opts.LeafOnly {
				s.Callchain = []uint64{ContextKernel, ip, kernel + 0x100 + rng.Uint64N(0x800)}
			}
			fb := profile.NewBuilder()
			fb.Event(profile.Event{Name: "cpu-clock"})
			want := name(New(fb, process.New(), opts), fb, s)
			if got := name(r, b, s); got != want {
				t.Fatalf("%+v: %#x named %s, want %s (a Resolver of its own)", opts, ip, got, want)
			}
		}
		if opts.Addresses {
			if len(r.kspans) != 0 {
				t.Errorf("%+v: %d spans kept; frames by address keep none", opts, len(r.kspans))
			}
			continue
		}
		if len(r.kspans) == 0 || len(r.kspans) > 42 {
			t.Errorf("%+v: %d spans kept, want one for each function met (42 at most)", opts, len(r.kspans))
		}
		if len(r.cache) > 1000 {
			t.Errorf("%+v: %d addresses cached; those in functions are kept by span", opts, len(r.cache))
		}
	}
}

// TestFileLeafSpans: samples in files, leaves alone, are named through
// the spans of the functions a Resolver met (loadedImage.leaves) as a
// Resolver that has met none names each: 4,000 random offsets in the C
// library, mapped by two processes at different addresses, and past
// its end (most of the file is not code: those are kept by offset, as
// before, and those in functions are not); with addresses all are
// resolved by offset.
func TestFileLeafSpans(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	st, err := os.Stat(libc)
	if err != nil {
		t.Skipf("no system C library at %s: %v", libc, err)
	}
	size := uint64(st.Size())
	tr := process.New()
	maps := map[uint32]*process.Mapping{}
	for i, pid := range []uint32{10, 11} {
		start := uint64(0x7f0000000000 + i*0x10000000)
		tr.Map(process.Mapping{PID: pid, Start: start, End: start + size + 0x1000, Path: libc, Exec: true})
		maps[pid] = tr.Lookup(pid, start, 1, false)
	}
	sym := symbolize.New(symbolize.Options{DebugDirs: []string{}, BuildIDCaches: []string{}})
	rng := rand.New(rand.NewPCG(3, 4))
	for _, opts := range []Options{{LeafOnly: true}, {LeafOnly: true, SparseMappings: true}, {LeafOnly: true, Addresses: true}} {
		opts.Symbolizer = sym
		name := func(r *Resolver, b *profile.Builder, s Sample) string {
			node := r.stack(&s, 0)
			p := b.Meta()
			fr := p.Frames[p.Nodes[node].Frame]
			f := p.FuncOf(p.Nodes[node].Frame)
			return fmt.Sprintf("%s+%#x@%#x", f.Name, f.Addr, fr.Addr)
		}
		b := profile.NewBuilder()
		b.Event(profile.Event{Name: "cpu-clock"})
		r := New(b, tr, opts)
		for i := range 4000 {
			pid := uint32(10 + i%2)
			m := maps[pid]
			s := Sample{PID: pid, TID: pid, Time: 2, CPU: -1, Mode: ModeUser, IP: m.Start + rng.Uint64N(size+0x800), Count: 1, Period: 1, Mapping: m}
			fb := profile.NewBuilder()
			fb.Event(profile.Event{Name: "cpu-clock"})
			want := name(New(fb, tr, opts), fb, s)
			if got := name(r, b, s); got != want {
				t.Fatalf("%+v: offset %#x named %s, want %s (a Resolver of its own)", opts, s.IP-m.Start, got, want)
			}
		}
		var leaves int
		for _, li := range r.images {
			leaves += len(li.leaves)
		}
		if opts.Addresses != (leaves == 0) {
			t.Errorf("%+v: %d spans of leaves kept", opts, leaves)
		}
		if opts.Addresses {
			continue
		}
		for k := range r.byOffset {
			if s, ok := k.li.im.LookupFileOffset(k.off >> 1); ok {
				t.Fatalf("%+v: offset %#x of %s cached by offset; it is in a function's span", opts, k.off>>1, s.Name)
			}
		}
	}
}

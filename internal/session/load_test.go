package session

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// TestParallelLoadIsSequential loads recordings in one part and in many
// parts read by several workers: the merged profile must hold the same
// samples with the same stacks, frames and threads. (Ids may differ: on a
// busy machine parts meet frames in another order.)
func TestParallelLoadIsSequential(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) { sameInParts(t, synth(t, c.recs)) })
	}
	for name, args := range map[string][]string{
		"system":  {"-a", "-g", "-F", "4000", "--", "BUSY", "100", "2", "1"},
		"process": {"-g", "-F", "4000", "--", "BUSY", "100", "1", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			perftest.Perf(t)
			args[len(args)-4] = perftest.Busy(t)
			f, err := perfdata.Open(perftest.Record(t, name+".data", args...))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sameInParts(t, f)
		})
	}
}

func sameInParts(t *testing.T, f *perfdata.File) {
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{})
	for _, opts := range []Options{{}, {LeafOnly: true}, {Lines: true, Addresses: true}} {
		opts.Symbolizer = sym
		want, err := load(f, opts, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if parts := len(tl.chunks(f, 1000)); parts < 2 {
			t.Fatalf("1000 parts asked for, %d made", parts)
		}
		for _, n := range []int{2, 7, 1000} {
			got, err := load(f, opts, n, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(content(got), content(want)) {
				t.Errorf("%+v: the profile read in %d parts differs from the one read in one (%d entries, want %d): %s",
					opts, n, len(got.Entries), len(want.Entries), firstDifference(got, want))
			}
		}
	}
}

// firstDifference names the first table where two profiles differ.
func firstDifference(got, want *profile.Profile) string {
	for i := range min(len(got.Funcs), len(want.Funcs)) {
		if !reflect.DeepEqual(got.Funcs[i], want.Funcs[i]) {
			return fmt.Sprintf("func %d: %+v, want %+v", i, got.Funcs[i], want.Funcs[i])
		}
	}
	for i := range min(len(got.Frames), len(want.Frames)) {
		if got.Frames[i] != want.Frames[i] {
			g, w := got.Frames[i], want.Frames[i]
			return fmt.Sprintf("frame %d: %+v (%s:%d in %s), want %+v (%s:%d in %s)", i,
				g, got.Strings[g.File], g.Line, got.Funcs[g.Func].Name, w, want.Strings[w.File], w.Line, want.Funcs[w.Func].Name)
		}
	}
	for i := range min(len(got.Images), len(want.Images)) {
		if got.Images[i] != want.Images[i] {
			return fmt.Sprintf("image %d: %+v, want %+v", i, got.Images[i], want.Images[i])
		}
	}
	return fmt.Sprintf("%d/%d funcs, %d/%d frames, %d/%d nodes, %d/%d strings", len(got.Funcs), len(want.Funcs),
		len(got.Frames), len(want.Frames), len(got.Nodes), len(want.Nodes), len(got.Strings), len(want.Strings))
}

// content is a profile's samples by what they are, not by ids: the whole
// stack (function, image, file, line, address per frame), the thread, CPU
// and event, to the count and period.
func content(p *profile.Profile) map[string]profile.Value {
	m := map[string]profile.Value{}
	var stack []int32
	for _, e := range p.Entries {
		var b strings.Builder
		stack = p.Stack(stack[:0], e.Stack)
		for _, n := range stack {
			fr := p.Frames[p.Nodes[n].Frame]
			fn := p.Funcs[fr.Func]
			fmt.Fprintf(&b, "%s|%s|%s:%d|%#x;", fn.Name, p.Images[fn.Image].Name, p.Strings[fr.File], fr.Line, fr.Addr)
		}
		th := p.Threads[e.Thread]
		fmt.Fprintf(&b, " %d/%d %s cpu %d event %d", th.PID, th.TID, p.Strings[th.Comm], e.CPU, e.Event)
		v := m[b.String()]
		v.Count += e.Count
		v.Period += e.Period
		m[b.String()] = v
	}
	return m
}

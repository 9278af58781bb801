package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/termtext"
)

// ErrArcsFormat is Write's error for a call graph of arcs asked in CSV:
// its rows are blocks, which a table of rows cannot hold.
var ErrArcsFormat = errors.New("a call graph of caller-callee arcs (a session's {cg} files) is written as text or json")

// ArcFunc is one block of a call graph of arcs (Profile.Arcs), as
// OProfile's opreport --callgraph prints it: a function with its own
// samples, the functions it was called by and those it called.
type ArcFunc struct {
	Func int32 // index in Profile.Funcs
	// Samples and Self are the function's own samples and their period.
	Samples, Self uint64
	// Callers are the arcs into the function and Callees those out of
	// it, each summed by the function at its other end, most first.
	Callers, Callees []ArcEnd
}

// ArcEnd is the other end of a function's arcs, and their samples.
type ArcEnd struct {
	Func    int32
	Samples uint64
}

// EventArcs is the call graph of one event.
type EventArcs struct {
	Event profile.Event
	Funcs []ArcFunc
}

// ComputeArcs builds the call graph of p's arcs, per event: every
// function with samples of its own or an arc, in order of its own
// samples (then of its arcs' samples, then by name), without those under
// opts.PercentLimit of the event.
func ComputeArcs(p *profile.Profile, opts Options) []EventArcs {
	type acc struct {
		samples, self, arcs uint64
		callers, callees    map[int32]uint64
	}
	byEvent := make([]map[int32]*acc, len(p.Events))
	for i := range byEvent {
		byEvent[i] = map[int32]*acc{}
	}
	get := func(ev, fn int32) *acc {
		a := byEvent[ev][fn]
		if a == nil {
			a = &acc{callers: map[int32]uint64{}, callees: map[int32]uint64{}}
			byEvent[ev][fn] = a
		}
		return a
	}
	for _, e := range p.Entries {
		if e.Stack < 0 {
			continue
		}
		a := get(e.Event, p.Frames[p.Nodes[e.Stack].Frame].Func)
		a.samples += e.Count
		a.self += e.Period
	}
	for _, arc := range p.Arcs {
		from, to := p.Frames[arc.Caller].Func, p.Frames[arc.Callee].Func
		a, b := get(arc.Event, from), get(arc.Event, to)
		a.callees[to] += arc.Count
		b.callers[from] += arc.Count
		a.arcs += arc.Count
		b.arcs += arc.Count
	}
	ends := func(m map[int32]uint64) []ArcEnd {
		out := make([]ArcEnd, 0, len(m))
		for fn, n := range m {
			out = append(out, ArcEnd{fn, n})
		}
		slices.SortFunc(out, func(a, b ArcEnd) int {
			if a.Samples != b.Samples {
				return cmpDesc(a.Samples, b.Samples)
			}
			return cmpFuncs(p, a.Func, b.Func)
		})
		return out
	}
	var out []EventArcs
	for ev, m := range byEvent {
		e := p.Events[ev]
		if e.Count == 0 && len(m) == 0 {
			continue
		}
		ea := EventArcs{Event: e}
		for fn, a := range m {
			if opts.PercentLimit > 0 && pct(a.self, e.Total) < opts.PercentLimit {
				continue
			}
			ea.Funcs = append(ea.Funcs, ArcFunc{Func: fn, Samples: a.samples, Self: a.self, Callers: ends(a.callers), Callees: ends(a.callees)})
		}
		arcs := func(f *ArcFunc) uint64 { return byEvent[ev][f.Func].arcs }
		slices.SortFunc(ea.Funcs, func(a, b ArcFunc) int {
			switch {
			case a.Self != b.Self:
				return cmpDesc(a.Self, b.Self)
			case arcs(&a) != arcs(&b):
				return cmpDesc(arcs(&a), arcs(&b))
			}
			return cmpFuncs(p, a.Func, b.Func)
		})
		out = append(out, ea)
	}
	return out
}

func cmpDesc(a, b uint64) int { return cmp.Compare(b, a) }

// cmpFuncs orders functions by name, then image, then address, so that
// ties print the same every time.
func cmpFuncs(p *profile.Profile, a, b int32) int {
	fa, fb := &p.Funcs[a], &p.Funcs[b]
	return cmp.Or(cmp.Compare(fa.Name, fb.Name), cmp.Compare(p.Images[fa.Image].Name, p.Images[fb.Image].Name), cmp.Compare(fa.Addr, fb.Addr))
}

// arcsHelp says what the columns and the indentation of a call graph
// of arcs mean, in the report's header.
const arcsHelp = `call graph of caller-callee arcs (the session's {cg} files), as opreport --callgraph:
  one block per function, in order of its own samples; its line, not indented,
  has its own samples and their share of the event. Above it, indented, the
  functions that called it: the samples in which each did, and their share
  of all its callers'. Below it, its own samples as [self], then the
  functions it called: the samples in which it did, each a share of [self]
  and its callees' together. A sample counts once in each arc of its
  callchain: arcs are not calls, and callees' samples include theirs`

const arcsRule = "-------------------------------------------------------------------------------"

// writeArcs writes p's call graph of arcs as opts.Format says.
func writeArcs(w io.Writer, p *profile.Profile, opts Options) error {
	reps := ComputeArcs(p, opts)
	switch opts.Format {
	case JSON:
		return writeArcsJSON(w, p, reps, opts)
	case CSV:
		return ErrArcsFormat
	}
	WriteHeader(w, p, opts.Notes...)
	for _, line := range strings.Split(arcsHelp, "\n") {
		fmt.Fprintf(w, "# %s\n", line)
	}
	fmt.Fprintln(w, "#")
	for _, rep := range reps {
		if len(reps) > 1 {
			fmt.Fprintf(w, "# %s\n", termtext.Escape(rep.Event.Name))
		}
		// Rows of four cells, a nil row a rule; the columns are as wide
		// as their widest cell in the whole event, rules between blocks
		// and all (a tabwriter would realign each block).
		rows := [][]string{{"Samples", "%", "Shared Object", "Symbol"}, nil}
		line := func(indent string, samples uint64, share float64, fn int32, suffix string) {
			f := &p.Funcs[fn]
			rows = append(rows, []string{indent + strconv.FormatUint(samples, 10), fmt.Sprintf("%.2f%%", share),
				termtext.Escape(p.Images[f.Image].Name), termtext.Escape(keyString(p, KeySym, int64(fn))) + suffix})
		}
		for _, f := range rep.Funcs {
			in, out := arcSum(f.Callers), arcSum(f.Callees)
			for _, c := range f.Callers {
				line("  ", c.Samples, pct(c.Samples, in), c.Func, "")
			}
			line("", f.Samples, pct(f.Self, rep.Event.Total), f.Func, "")
			line("  ", f.Samples, pct(f.Samples, f.Samples+out), f.Func, " [self]")
			for _, c := range f.Callees {
				line("  ", c.Samples, pct(c.Samples, f.Samples+out), c.Func, "")
			}
			rows = append(rows, nil)
		}
		var width [3]int
		for _, r := range rows {
			for i := range width {
				if r != nil {
					width[i] = max(width[i], len(r[i]))
				}
			}
		}
		for _, r := range rows {
			if r == nil {
				fmt.Fprintln(w, arcsRule)
				continue
			}
			fmt.Fprintf(w, "%-*s  %*s  %-*s  %s\n", width[0], r[0], width[1], r[1], width[2], r[2], r[3])
		}
	}
	return nil
}

// arcSum is the samples of a function's arcs into or out of it.
func arcSum(ends []ArcEnd) uint64 {
	var n uint64
	for _, e := range ends {
		n += e.Samples
	}
	return n
}

type jsonArcEnd struct {
	Symbol  string  `json:"symbol"`
	Level   string  `json:"level,omitempty"`
	Image   string  `json:"image"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"`
}

type jsonArcFunc struct {
	Symbol      string       `json:"symbol"`
	Level       string       `json:"level,omitempty"`
	Image       string       `json:"image"`
	Samples     uint64       `json:"samples"`
	Self        uint64       `json:"self"`
	SelfPercent float64      `json:"self_percent"`
	Callers     []jsonArcEnd `json:"callers"`
	Callees     []jsonArcEnd `json:"callees"`
}

type jsonArcEvent struct {
	profile.Event
	Functions []jsonArcFunc `json:"functions"`
}

// writeArcsJSON writes the call graph as JSON: the header's fields as
// the flat report's, and per event its functions, each with its callers
// (percent: of all its callers' samples) and callees (percent: of its
// own samples and its callees' together, as the text's [self] line).
func writeArcsJSON(w io.Writer, p *profile.Profile, reps []EventArcs, opts Options) error {
	out := struct {
		Cmdline   []string       `json:"cmdline,omitempty"`
		Lost      uint64         `json:"lost"`
		Images    []jsonImage    `json:"images"`
		Notes     []string       `json:"notes,omitempty"`
		Hints     []string       `json:"hints,omitempty"`
		CallGraph string         `json:"call_graph"`
		Events    []jsonArcEvent `json:"events"`
	}{Cmdline: p.Cmdline, Lost: p.Lost, Images: []jsonImage{}, Notes: opts.Notes, Hints: Hints(p), CallGraph: "arcs", Events: []jsonArcEvent{}}
	for _, im := range p.Images {
		out.Images = append(out.Images, jsonImage{im.Name, im.BuildID, im.NoSymbols})
	}
	end := func(fn int32, samples uint64, total uint64) jsonArcEnd {
		e := jsonArcEnd{Image: p.Images[p.Funcs[fn].Image].Name, Samples: samples, Percent: round(pct(samples, total))}
		e.Level, e.Symbol = SplitLevel(keyString(p, KeySym, int64(fn)))
		return e
	}
	for _, rep := range reps {
		je := jsonArcEvent{Event: rep.Event, Functions: []jsonArcFunc{}}
		for _, f := range rep.Funcs {
			in, outN := arcSum(f.Callers), arcSum(f.Callees)
			jf := jsonArcFunc{Image: p.Images[p.Funcs[f.Func].Image].Name, Samples: f.Samples, Self: f.Self,
				SelfPercent: round(pct(f.Self, rep.Event.Total)), Callers: []jsonArcEnd{}, Callees: []jsonArcEnd{}}
			jf.Level, jf.Symbol = SplitLevel(keyString(p, KeySym, int64(f.Func)))
			for _, c := range f.Callers {
				jf.Callers = append(jf.Callers, end(c.Func, c.Samples, in))
			}
			for _, c := range f.Callees {
				jf.Callees = append(jf.Callees, end(c.Func, c.Samples, f.Samples+outN))
			}
			je.Functions = append(je.Functions, jf)
		}
		out.Events = append(out.Events, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// excludeAnonArcs drops the arcs with an end in anonymous executable
// memory, whose samples ExcludeAnon left out.
func excludeAnonArcs(p *profile.Profile) {
	if p.Arcs == nil {
		return
	}
	anon := func(frame int32) bool { return p.Images[p.FuncOf(frame).Image].Kind == profile.ImageAnon }
	p.Arcs = slices.DeleteFunc(p.Arcs, func(a profile.Arc) bool { return anon(a.Caller) || anon(a.Callee) })
}

package web

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// Code chooses samples by where they were taken: in JIT code or not.
type Code uint8

const (
	// AllCode keeps every sample.
	AllCode Code = iota
	// JITCode keeps the samples taken in JIT code: anonymous executable
	// memory, named by a handler or not.
	JITCode
	// NativeCode keeps the others: files, the kernel, unknown addresses.
	NativeCode
)

// Selection is the part of a recording a view shows: the samples of one
// event, of one process or thread or all, in JIT code, native code or
// both. Its String is the path segment that names its view.
type Selection struct {
	PID, TID int64 // -1: every process, every thread of it
	Code     Code
	Event    int
}

// all is the whole recording's first event.
var all = Selection{PID: -1, TID: -1}

// String is "all", "p123" or "p123.t124", then "-jit" or "-native"
// unless both, then "-eN" for events after the first.
func (s Selection) String() string {
	var b strings.Builder
	switch {
	case s.PID < 0:
		b.WriteString("all")
	case s.TID < 0:
		fmt.Fprintf(&b, "p%d", s.PID)
	default:
		fmt.Fprintf(&b, "p%d.t%d", s.PID, s.TID)
	}
	switch s.Code {
	case JITCode:
		b.WriteString("-jit")
	case NativeCode:
		b.WriteString("-native")
	}
	if s.Event > 0 {
		fmt.Fprintf(&b, "-e%d", s.Event)
	}
	return b.String()
}

// parseSelection parses what String writes.
func parseSelection(s string) (Selection, error) {
	sel := all
	parts := strings.Split(s, "-")
	who, rest := parts[0], parts[1:]
	if who != "all" {
		pid, tid, hasTID := strings.Cut(who, ".")
		var err error
		if sel.PID, err = parseID(pid, "p"); err != nil {
			return sel, fmt.Errorf("selection %q: %w", s, err)
		}
		if hasTID {
			if sel.TID, err = parseID(tid, "t"); err != nil {
				return sel, fmt.Errorf("selection %q: %w", s, err)
			}
		}
	}
	for _, p := range rest {
		switch {
		case p == "jit" && sel.Code == AllCode:
			sel.Code = JITCode
		case p == "native" && sel.Code == AllCode:
			sel.Code = NativeCode
		case strings.HasPrefix(p, "e") && sel.Event == 0:
			n, err := strconv.ParseUint(p[1:], 10, 16)
			if err != nil || n == 0 {
				return sel, fmt.Errorf("selection %q: bad event %q", s, p)
			}
			sel.Event = int(n)
		default:
			return sel, fmt.Errorf("selection %q: unknown part %q", s, p)
		}
	}
	return sel, nil
}

func parseID(s, prefix string) (int64, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, prefix), 10, 32)
	if err != nil || !strings.HasPrefix(s, prefix) {
		return 0, fmt.Errorf("bad id %q", s)
	}
	return int64(n), nil
}

// isJIT reports whether image im holds JIT code.
func isJIT(im *profile.Image) bool { return im.Kind == profile.ImageAnon }

// apply returns the part of p the selection keeps: a copy of p sharing
// its tables, with the entries of the selection's threads and event
// whose leaf is in the selection's code, and event totals of those. A
// sample's code is its leaf's, as --anon-samples decides.
func (s Selection) apply(p *profile.Profile) *profile.Profile {
	q := *p
	q.Events = slices.Clone(p.Events)
	for i := range q.Events {
		q.Events[i].Count, q.Events[i].Total = 0, 0
	}
	q.Entries = nil
	for _, e := range p.Entries {
		if s.keeps(p, &e) {
			q.Entries = append(q.Entries, e)
			q.Events[e.Event].Count += e.Count
			q.Events[e.Event].Total += e.Period
		}
	}
	return &q
}

func (s Selection) keeps(p *profile.Profile, e *profile.Entry) bool {
	th := &p.Threads[e.Thread]
	if int(e.Event) != s.Event || s.PID >= 0 && int64(th.PID) != s.PID || s.TID >= 0 && int64(th.TID) != s.TID {
		return false
	}
	if s.Code == AllCode {
		return true
	}
	jit := e.Stack >= 0 && isJIT(&p.Images[p.FuncOf(p.Nodes[e.Stack].Frame).Image])
	return jit == (s.Code == JITCode)
}

// process is one process of a recording, with the threads that have
// samples, for the selector.
type process struct {
	PID     uint32
	Comm    string
	Samples uint64 // of the first event
	JIT     uint64 // of them, in JIT code
	Threads []thread
}

type thread struct {
	TID     uint32
	Comm    string
	Samples uint64
}

// processes lists p's processes with samples of event, most first.
func processes(p *profile.Profile, event int) []process {
	byPID := map[uint32]*process{}
	byTID := map[[2]uint32]*thread{}
	for i := range p.Entries {
		e := &p.Entries[i]
		if int(e.Event) != event {
			continue
		}
		th := &p.Threads[e.Thread]
		pr := byPID[th.PID]
		if pr == nil {
			pr = &process{PID: th.PID}
			byPID[th.PID] = pr
		}
		pr.Samples += e.Count
		if e.Stack >= 0 && isJIT(&p.Images[p.FuncOf(p.Nodes[e.Stack].Frame).Image]) {
			pr.JIT += e.Count
		}
		k := [2]uint32{th.PID, th.TID}
		t := byTID[k]
		if t == nil {
			t = &thread{TID: th.TID, Comm: p.Strings[th.Comm]}
			byTID[k] = t
		}
		t.Samples += e.Count
		// A process is named by its main thread, or else the first
		// thread met.
		if th.TID == th.PID || pr.Comm == "" {
			pr.Comm = t.Comm
		}
	}
	for k, t := range byTID {
		byPID[k[0]].Threads = append(byPID[k[0]].Threads, *t)
	}
	out := make([]process, 0, len(byPID))
	for _, pr := range byPID {
		slices.SortFunc(pr.Threads, func(a, b thread) int { return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.TID, b.TID)) })
		out = append(out, *pr)
	}
	slices.SortFunc(out, func(a, b process) int { return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.PID, b.PID)) })
	return out
}

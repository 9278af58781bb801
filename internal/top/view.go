package top

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// Code chooses samples by where they were taken.
type Code uint8

// The choices.
const (
	AllCode    Code = iota
	JITCode         // in JIT code: anonymous executable memory, named or not
	NativeCode      // elsewhere: files, the kernel, unknown addresses
)

func (c Code) String() string {
	switch c {
	case JITCode:
		return "JIT code only"
	case NativeCode:
		return "native code only"
	}
	return "JIT and native code"
}

// View is what a live view shows of its samples: rows by sort keys,
// filtered as a report's are, and zoomed by the keys of the UI.
type View struct {
	Keys   []string      // sort keys, checked (report.SortKeys)
	Filter report.Filter // the command line's filters
	PID    int64         // only this process; -1 for all
	DSO    string        // only samples whose leaf is in this image; "" for all
	Code   Code
	// Children adds the children (inclusive) column from the
	// callchains and orders rows by it, as report's -g; Chains says how
	// callchains are read, and with Graph, that a plain report prints
	// their trees under each row, as report's text does.
	Children bool
	Chains   report.Chains
}

// Callchains reports whether the view needs the samples' callchains.
func (v *View) Callchains() bool { return v.Children || v.Chains.Graph }

// Row is a row of the view.
type Row struct {
	report.Row
	Percent float64 // of the view's samples' period
	// ChildPercent is the row's children's, with View.Children.
	ChildPercent float64
	PID          uint32 // the process with most of the row's samples
	Comm         string
}

// rows computes the rows of p, a snapshot the view owns and may
// change: it is left holding the entries the view shows (filter).
func (v *View) rows(p *profile.Profile) ([]Row, error) {
	if err := v.filter(p); err != nil {
		return nil, err
	}
	opts := v.report()
	opts.Chains.Graph = false // trees are made where they are printed (plain)
	reps, err := report.Compute(p, opts)
	if err != nil || len(reps) == 0 {
		return nil, err
	}
	// The process of each row: the rows again with the pid as a key.
	withPID, err := report.Compute(p, report.Options{Sort: append(slices.Clone(v.Keys), report.KeyPID)})
	if err != nil {
		return nil, err
	}
	type owner struct {
		pid     uint32
		samples uint64
	}
	owners := map[string]owner{}
	for _, r := range withPID[0].Rows {
		k := strings.Join(r.Keys[:len(v.Keys)], "\x00")
		pid, _ := strconv.ParseUint(r.Keys[len(v.Keys)], 10, 32)
		if o := owners[k]; r.Samples > o.samples {
			owners[k] = owner{uint32(pid), r.Samples}
		}
	}
	comms := map[uint32]string{}
	for _, th := range p.Threads {
		if th.PID == th.TID || comms[th.PID] == "" {
			comms[th.PID] = p.Strings[th.Comm]
		}
	}
	rep := reps[0]
	total := float64(max(rep.Event.Total, 1))
	out := make([]Row, len(rep.Rows))
	for i, r := range rep.Rows {
		pid := owners[strings.Join(r.Keys, "\x00")].pid
		out[i] = Row{Row: r, Percent: 100 * float64(r.Self) / total, ChildPercent: 100 * float64(r.Children) / total, PID: pid, Comm: comms[pid]}
	}
	return out, nil
}

// report is the report's options for the view's rows.
func (v *View) report() report.Options {
	return report.Options{Sort: v.Keys, Children: v.Children, Chains: v.Chains}
}

// filter leaves in p the entries the view shows, and the counts of its
// events theirs: percentages are of what the view shows, as perf top's
// of a zoom.
func (v *View) filter(p *profile.Profile) error {
	f := v.Filter
	if v.PID >= 0 {
		f.PIDs = []uint32{uint32(v.PID)}
	}
	if v.DSO != "" {
		f.DSOs = []string{v.DSO}
	}
	if err := f.Apply(p); err != nil {
		return err
	}
	if v.Code != AllCode {
		p.Entries = slices.DeleteFunc(p.Entries, func(e profile.Entry) bool { return isJIT(p, &e) != (v.Code == JITCode) })
	}
	for i := range p.Events {
		p.Events[i].Count, p.Events[i].Total = 0, 0
	}
	for _, e := range p.Entries {
		p.Events[e.Event].Count += e.Count
		p.Events[e.Event].Total += e.Period
	}
	return nil
}

// isJIT reports whether e's leaf is in JIT code.
func isJIT(p *profile.Profile, e *profile.Entry) bool {
	if e.Stack < 0 {
		return false
	}
	return p.Images[p.FuncOf(p.Nodes[e.Stack].Frame).Image].Kind == profile.ImageAnon
}

// describe says what the view is zoomed into, "" when nothing.
func (v *View) describe(comm string) string {
	var parts []string
	if v.PID >= 0 {
		parts = append(parts, fmt.Sprintf("pid %d (%s)", v.PID, comm))
	}
	if v.DSO != "" {
		parts = append(parts, "image "+v.DSO)
	}
	if v.Code != AllCode {
		parts = append(parts, v.Code.String())
	}
	return strings.Join(parts, ", ")
}

// keyColumn is the index of key in the view's keys, or -1.
func (v *View) keyColumn(key string) int { return slices.Index(v.Keys, key) }

// sortPresets are the sort keys the UI's s key cycles through, after
// the command line's.
var sortPresets = [][]string{
	{report.KeyDSO, report.KeySym},
	{report.KeySym},
	{report.KeyComm, report.KeyDSO, report.KeySym},
	{report.KeyPID, report.KeyComm, report.KeySym},
	{report.KeyDSO},
	{report.KeyComm},
}

// nextKeys are the keys after keys in the cycle.
func nextKeys(keys []string) []string {
	for i, p := range sortPresets {
		if slices.Equal(p, keys) {
			return sortPresets[(i+1)%len(sortPresets)]
		}
	}
	return sortPresets[0]
}

// titles are the column titles of the keys.
func (v *View) titles() []string {
	t := make([]string, len(v.Keys))
	for i, k := range v.Keys {
		t[i] = report.KeyTitle(k)
	}
	return t
}

package report

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/termtext"
)

// Format is an output format of Write.
type Format int

// Formats of Write.
const (
	Text Format = iota
	JSON
	CSV
)

// Sort keys, as perf names them.
const (
	KeyComm    = "comm"
	KeyPID     = "pid"
	KeyTID     = "tid"
	KeyDSO     = "dso"
	KeySym     = "sym"
	KeySrcline = "srcline"
	KeyCPU     = "cpu"
)

var keyTitles = map[string]string{
	KeyComm: "Command", KeyPID: "Pid", KeyTID: "Tid", KeyDSO: "Shared Object",
	KeySym: "Symbol", KeySrcline: "Source:Line", KeyCPU: "CPU",
	KeyApp: "Application", KeyUserApp: "Application",
}

// KeyTitle is a sort key's column title, as perf's ("Shared Object"
// for dso).
func KeyTitle(key string) string { return keyTitles[key] }

// ErrBadKey is returned for a sort key Write does not know.
var ErrBadKey = errors.New("unknown sort key")

// Options control Write.
type Options struct {
	// Sort lists the keys rows are made of, in column order, as SortKey
	// takes them; empty means dso (OProfile's per-image view).
	Sort []string
	// Children adds the inclusive (children) column from the callchains
	// and orders rows by it, as perf report --children.
	Children bool
	// PercentLimit hides rows below this percent (of the sorting column).
	PercentLimit float64
	Format       Format
	// Notes are lines the header adds for what the caller knows and the
	// profile does not say, such as samples it left out.
	Notes []string
	// Chains says how callchains are read, and whether the text report
	// prints their trees.
	Chains Chains
	// Rows keeps of each event's rows the first Rows (perf top's -E); 0
	// keeps all.
	Rows int
}

// Row is one line of a report.
type Row struct {
	Keys     []string // one per sort key
	Samples  uint64
	Self     uint64 // period of the samples whose leaf the row is
	Children uint64 // period of the samples whose stack holds the row

	tree *callNode // the row's callchains, with Chains.Graph
	key  rowKey    // what the row is of: orders rows that print alike
}

// EventReport is the report of one event.
type EventReport struct {
	Event profile.Event
	Rows  []Row
}

const nkeys = 9

type rowKey [nkeys]int64

// Compute builds the rows of every event, in named steps: each entry
// counted into its row (entries), the chains' inclusive periods
// (children), the rows' call-graph trees (trees), and the rows sorted
// (rows).
func Compute(p *profile.Profile, opts Options) ([]EventReport, error) {
	keys, err := SortKeys(opts.Sort)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	c := &computer{p: p, opts: opts, keys: keys, apps: &appIndex{p: p}, rows: make([]map[rowKey]*rowAcc, len(p.Events))}
	for i := range c.rows {
		c.rows[i] = map[rowKey]*rowAcc{}
	}
	for _, k := range keys {
		c.needThread = c.needThread || k != KeyDSO && k != KeySym && k != KeySrcline && k != KeyCPU
		c.needCPU = c.needCPU || k == KeyCPU
	}
	c.entries()
	if opts.Children {
		c.children()
	}
	if opts.Chains.Graph {
		c.trees()
	}
	out := make([]EventReport, len(p.Events))
	for ev := range out {
		out[ev].Event = p.Events[ev]
		if p.Events[ev].Count != 0 {
			out[ev].Rows = c.sorted(ev)
		}
	}
	// Events without samples (perf's dummy event) make no report.
	return slices.DeleteFunc(out, func(e EventReport) bool { return e.Event.Count == 0 }), nil
}

// computer is Compute's state between its steps.
type computer struct {
	p    *profile.Profile
	opts Options
	keys []string
	apps *appIndex
	rows []map[rowKey]*rowAcc // by event
	// chains are the entries' chains, with Children or a call graph:
	// entries that differ only in what no key shows (the thread, the
	// CPU) add the same, so they are added once, summed; order is the
	// order they were met in.
	chains              map[chainKey]uint64
	order               []chainKey
	needThread, needCPU bool
	// byFrame finds the row of a frame without hashing its key, when
	// the keys depend on nothing else.
	byFrame [][]*rowAcc
	stack   []int32
	walks   int
}

// rowAcc is a row being counted.
type rowAcc struct {
	samples, self, children uint64
	tree                    *callNode // with Chains.Graph
	walked                  int       // the last walk that met the row
}

type chainKey struct{ event, stack, thread, cpu int32 }

// key is the row key of entry e at frame (-1: none).
func (c *computer) key(e *profile.Entry, frame int32) rowKey {
	p := c.p
	var k rowKey
	th := &p.Threads[e.Thread]
	for i, name := range c.keys {
		switch name {
		case KeyComm:
			k[i] = int64(th.Comm)
		case KeyPID:
			k[i] = int64(th.PID)
		case KeyTID:
			k[i] = int64(th.TID)
		case KeyCPU:
			k[i] = int64(e.CPU)
		case KeyApp, KeyUserApp:
			k[i] = c.apps.key(e, frame, name == KeyApp)
		case KeyDSO:
			k[i] = -1
			if frame >= 0 {
				k[i] = int64(p.FuncOf(frame).Image)
			}
		case KeySym:
			k[i] = -1
			if frame >= 0 {
				k[i] = int64(p.Frames[frame].Func)
			}
		case KeySrcline:
			k[i] = -1
			if frame >= 0 {
				fr := &p.Frames[frame]
				k[i] = int64(fr.File)<<32 | int64(uint32(fr.Line))
			}
		}
	}
	return k
}

// rowAt returns the row of k in m, made when missing.
func rowAt(m map[rowKey]*rowAcc, k rowKey) *rowAcc {
	a := m[k]
	if a == nil {
		a = &rowAcc{}
		m[k] = a
	}
	return a
}

// leaf is the frame of stack node n, -1 for none.
func (c *computer) leaf(n int32) int32 {
	if n < 0 {
		return -1
	}
	return c.p.Nodes[n].Frame
}

// entries counts each entry into the row of its leaf, and gathers the
// chains when the report needs them.
func (c *computer) entries() {
	if c.opts.Children || c.opts.Chains.Graph {
		c.chains = map[chainKey]uint64{}
	}
	for i := range c.p.Entries {
		e := &c.p.Entries[i]
		a := rowAt(c.rows[e.Event], c.key(e, c.leaf(e.Stack)))
		a.samples += e.Count
		a.self += e.Period
		if c.chains != nil {
			ck := chainKey{e.Event, e.Stack, 0, -1}
			if c.needThread {
				ck.thread = e.Thread
			}
			if c.needCPU {
				ck.cpu = e.CPU
			}
			if _, ok := c.chains[ck]; !ok {
				c.order = append(c.order, ck)
			}
			c.chains[ck] += e.Period
		}
	}
	if !c.needThread && !c.needCPU {
		c.byFrame = make([][]*rowAcc, len(c.p.Events))
		for i := range c.byFrame {
			c.byFrame[i] = make([]*rowAcc, len(c.p.Frames))
		}
	}
}

// walk calls fn for each row of the chain of ck in order, the leaf's
// first, each once, with the chain from there on: as perf, the leaf's
// row has the whole chain, and every other row in it the chain from its
// function on.
func (c *computer) walk(ck chainKey, fn func(a *rowAcc, chain []int32)) {
	e := &profile.Entry{Key: profile.Key{Stack: ck.stack, Thread: ck.thread, CPU: ck.cpu, Event: ck.event}}
	m := c.rows[e.Event]
	c.walks++
	a := m[c.key(e, c.leaf(e.Stack))]
	a.walked = c.walks
	c.stack = c.opts.Chains.chain(c.p, c.stack, e.Stack)
	fn(a, c.stack)
	if !c.opts.Children {
		return
	}
	for j, fr := range c.stack {
		var b *rowAcc
		if c.byFrame != nil {
			b = c.byFrame[e.Event][fr]
		}
		if b == nil {
			b = rowAt(m, c.key(e, fr))
			if c.byFrame != nil {
				c.byFrame[e.Event][fr] = b
			}
		}
		if b.walked == c.walks {
			continue // a recursive stack counts once
		}
		b.walked = c.walks
		fn(b, c.stack[j:])
	}
}

// children adds each chain's period to every row in it (perf report
// --children).
func (c *computer) children() {
	for _, ck := range c.order {
		period := c.chains[ck]
		c.walk(ck, func(a *rowAcc, _ []int32) { a.children += period })
	}
}

// trees adds each chain to the call-graph trees of the rows in it. A
// row under the threshold shows no branch: its tree is not made.
func (c *computer) trees() {
	p, opts := c.p, c.opts
	minHit := make([]uint64, len(p.Events))
	for i, ev := range p.Events {
		minHit[i] = uint64(float64(ev.Total) * opts.Chains.Threshold / 100)
	}
	var nodes callNodes
	var fns []int32
	for _, ck := range c.order {
		period, min := c.chains[ck], minHit[ck.event]
		fns = fns[:0]
		c.walk(ck, func(a *rowAcc, chain []int32) {
			if len(fns) == 0 {
				for _, fr := range chain { // the whole chain, met first
					fns = append(fns, p.Frames[fr].Func)
				}
			}
			v := a.self
			if opts.Children {
				v = a.children
			}
			if v < min {
				return
			}
			if a.tree == nil {
				a.tree = nodes.new(-1)
			}
			a.tree.add(&nodes, fns[len(fns)-len(chain):], period)
		})
	}
}

// sorted returns event ev's rows above the percent limit, by the sorting
// column, the first opts.Rows of them when that is set.
func (c *computer) sorted(ev int) []Row {
	p, opts, m := c.p, c.opts, c.rows[ev]
	total := p.Events[ev].Total
	r := make([]Row, 0, len(m))
	for k, a := range m {
		sortBy := a.self
		if opts.Children {
			sortBy = a.children
		}
		if total > 0 && float64(sortBy)*100/float64(total) < opts.PercentLimit {
			continue
		}
		row := Row{Samples: a.samples, Self: a.self, Children: a.children, tree: a.tree, key: k}
		for i, name := range c.keys {
			row.Keys = append(row.Keys, keyString(p, name, k[i]))
		}
		r = append(r, row)
	}
	// Ties, common among rows of a sample or two, go by the keys in
	// order: as comparing them joined by NUL would, without building a
	// string per comparison. Rows that print alike (two C++ overloads,
	// named without their parameters) go by what they are of, not by
	// the map's order.
	slices.SortFunc(r, func(a, b Row) int {
		if opts.Children && a.Children != b.Children {
			return cmp.Compare(b.Children, a.Children)
		}
		if a.Self != b.Self {
			return cmp.Compare(b.Self, a.Self)
		}
		if c := slices.Compare(a.Keys, b.Keys); c != 0 {
			return c
		}
		return slices.Compare(a.key[:], b.key[:])
	})
	if opts.Rows > 0 && len(r) > opts.Rows {
		r = r[:opts.Rows]
	}
	return r
}

func keyString(p *profile.Profile, name string, v int64) string {
	switch name {
	case KeyComm:
		return p.Strings[v]
	case KeyPID, KeyTID:
		return strconv.FormatInt(v, 10)
	case KeyCPU:
		if v < 0 {
			return "-"
		}
		return strconv.FormatInt(v, 10)
	case KeyApp, KeyUserApp:
		return appName(p, v)
	case KeyDSO:
		if v < 0 {
			return "[unknown]"
		}
		return p.Images[v].Name
	case KeySym:
		if v < 0 {
			return "[unknown]"
		}
		f := &p.Funcs[v]
		if f.Kernel {
			return "[k] " + f.Name
		}
		return "[.] " + f.Name
	case KeySrcline:
		file, line := p.Strings[v>>32], int32(v)
		if v < 0 || file == "" {
			return "??:0"
		}
		return fmt.Sprintf("%s:%d", file, line)
	}
	return ""
}

// Write writes the report of p to w: with Chains.Graph, of a profile
// of arcs (Profile.Arcs), its call graph (writeArcs).
func Write(w io.Writer, p *profile.Profile, opts Options) error {
	if p.Arcs != nil && opts.Chains.Graph {
		bw := bufio.NewWriterSize(w, 64<<10)
		err := writeArcs(bw, p, opts)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	reps, err := Compute(p, opts)
	if err != nil {
		return err
	}
	keys, _ := SortKeys(opts.Sort) // Compute checked them
	// The writers write a cell at a time (tabwriter, csv); a report of
	// 1400 rows made 15000 write system calls to a terminal or pipe.
	bw := bufio.NewWriterSize(w, 64<<10)
	switch opts.Format {
	case JSON:
		err = writeJSON(bw, p, keys, reps, opts)
	case CSV:
		err = writeCSV(bw, keys, reps, opts)
	default:
		err = writeText(bw, p, keys, reps, opts)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func pct(v, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(v) * 100 / float64(total)
}

// WriteHeader writes the lines a person needs to trust a report: the
// event, period or frequency, samples, lost samples, time span, command,
// a note for every image without symbols, the caller's notes and hints
// on how to learn more (Hints).
func WriteHeader(w io.Writer, p *profile.Profile, notes ...string) {
	for _, e := range p.Events {
		rate := fmt.Sprintf("period %d", e.Period)
		if e.Freq != 0 {
			rate = fmt.Sprintf("frequency %d Hz", e.Freq)
		}
		fmt.Fprintf(w, "# event: %s (%s): %d samples, event count %d\n", termtext.Escape(e.Name), rate, e.Count, e.Total)
	}
	fmt.Fprintf(w, "# lost samples: %d\n", p.Lost)
	if u := p.Unwound; u.Chains > 0 {
		fmt.Fprintf(w, "# DWARF call chains: %d unwound from user stacks, %d stopped in JIT code without unwinding information or a frame pointer\n", u.Chains, u.JITStops)
	}
	if p.EndNS > p.StartNS {
		fmt.Fprintf(w, "# time span: %v (%.6f to %.6f)\n", time.Duration(p.EndNS-p.StartNS).Round(time.Microsecond),
			float64(p.StartNS)/1e9, float64(p.EndNS)/1e9)
	}
	if len(p.Cmdline) > 0 {
		fmt.Fprintf(w, "# command: %s\n", commandLine(p.Cmdline))
	}
	for _, im := range p.Images {
		if im.NoSymbols != "" {
			fmt.Fprintf(w, "# note: no symbols for %s: %s\n", termtext.Escape(im.Name), termtext.Escape(im.NoSymbols))
		}
		if im.Stripped != "" {
			fmt.Fprintf(w, "# note: %s has %s\n", termtext.Escape(im.Name), termtext.Escape(im.Stripped))
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "# note: %s\n", termtext.Escape(n))
	}
	for _, h := range Hints(p) {
		fmt.Fprintf(w, "# hint: %s\n", termtext.Escape(h))
	}
	fmt.Fprintln(w, "#")
}

// commandLine joins args, quoting those a reader could not tell apart
// otherwise: with spaces, newlines (which would end the header's comment
// line) or other characters that do not print.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r == '"' || r == '\\' || !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
			q[i] = strconv.Quote(a)
		}
	}
	return strings.Join(q, " ")
}

func writeText(w io.Writer, p *profile.Profile, keys []string, reps []EventReport, opts Options) error {
	WriteHeader(w, p, opts.Notes...)
	tw := newTable(w, opts)
	for _, rep := range reps {
		if len(reps) > 1 {
			fmt.Fprintf(tw, "# %s\n", termtext.Escape(rep.Event.Name))
		}
		if opts.Children {
			fmt.Fprint(tw, "Children\t")
		}
		fmt.Fprint(tw, "Self\tSamples\t")
		for i, k := range keys {
			if i == len(keys)-1 {
				fmt.Fprintf(tw, " %s\n", keyTitles[k])
			} else {
				fmt.Fprintf(tw, "%s\t", keyTitles[k])
			}
		}
		for _, r := range rep.Rows {
			tw.tree(p, &rep, &r, keys, opts)
			if opts.Children {
				fmt.Fprintf(tw, "%.2f%%\t", pct(r.Children, rep.Event.Total))
			}
			fmt.Fprintf(tw, "%.2f%%\t%d\t", pct(r.Self, rep.Event.Total), r.Samples)
			for i, k := range r.Keys {
				// A name's tab or newline would forge a column or a row.
				if i == len(r.Keys)-1 {
					fmt.Fprintf(tw, " %s\n", termtext.Escape(k))
				} else {
					fmt.Fprintf(tw, "%s\t", termtext.Escape(k))
				}
			}
		}
	}
	return tw.Flush()
}

type jsonRow struct {
	Keys map[string]string `json:"keys"`
	// Level is the sym key's marker, [.] or [k], which machine outputs
	// keep out of the name.
	Level           string   `json:"level,omitempty"`
	Samples         uint64   `json:"samples"`
	Self            uint64   `json:"self"`
	SelfPercent     float64  `json:"self_percent"`
	Children        *uint64  `json:"children,omitempty"`
	ChildrenPercent *float64 `json:"children_percent,omitempty"`
}

type jsonEvent struct {
	profile.Event
	Rows []jsonRow `json:"rows"`
}

type jsonImage struct {
	Name      string `json:"name"`
	BuildID   string `json:"build_id,omitempty"`
	NoSymbols string `json:"no_symbols,omitempty"`
}

func writeJSON(w io.Writer, p *profile.Profile, keys []string, reps []EventReport, opts Options) error {
	out := struct {
		Cmdline []string    `json:"cmdline,omitempty"`
		Lost    uint64      `json:"lost"`
		StartNS uint64      `json:"start_ns"`
		EndNS   uint64      `json:"end_ns"`
		Images  []jsonImage `json:"images"`
		Sort    []string    `json:"sort"`
		Notes   []string    `json:"notes,omitempty"`
		Hints   []string    `json:"hints,omitempty"`
		Events  []jsonEvent `json:"events"`
	}{Cmdline: p.Cmdline, Lost: p.Lost, StartNS: p.StartNS, EndNS: p.EndNS, Sort: keys, Images: []jsonImage{},
		Notes: opts.Notes, Hints: Hints(p)}
	for _, im := range p.Images {
		out.Images = append(out.Images, jsonImage{im.Name, im.BuildID, im.NoSymbols})
	}
	for _, rep := range reps {
		je := jsonEvent{Event: rep.Event, Rows: []jsonRow{}}
		for _, r := range rep.Rows {
			jr := jsonRow{Keys: map[string]string{}, Samples: r.Samples, Self: r.Self, SelfPercent: round(pct(r.Self, rep.Event.Total))}
			for i, k := range keys {
				jr.Keys[k] = r.Keys[i]
				if k == KeySym {
					jr.Level, jr.Keys[k] = SplitLevel(r.Keys[i])
				}
			}
			if opts.Children {
				c, cp := r.Children, round(pct(r.Children, rep.Event.Total))
				jr.Children, jr.ChildrenPercent = &c, &cp
			}
			je.Rows = append(je.Rows, jr)
		}
		out.Events = append(out.Events, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// round keeps percentages to 4 decimals so outputs stay stable.
func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return v
}

// SplitLevel splits a sym key's text into perf's marker, [.] or [k], and
// the name; the text of no symbol, [unknown], has no marker.
func SplitLevel(sym string) (level, name string) {
	for _, l := range []string{"[.]", "[k]"} {
		if n, ok := strings.CutPrefix(sym, l+" "); ok {
			return l, n
		}
	}
	return "", sym
}

// csvCell is a cell of text that processes named (a command, a path, a
// function's name): escaped for a terminal, and, when it begins with
// what a spreadsheet takes for a formula (=, +, -, @, a tab or a
// carriage return), prefixed with a quote as OWASP advises, so that a
// name such as =HYPERLINK(...) stays text when the CSV is opened.
func csvCell(s string) string {
	s = termtext.Escape(s)
	// A lone "-" (no CPU) is no formula.
	if s != "" && s != "-" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

func writeCSV(w io.Writer, keys []string, reps []EventReport, opts Options) error {
	cw := csv.NewWriter(w)
	head := []string{"event"}
	sym := slices.Index(keys, KeySym)
	for _, k := range keys {
		head = append(head, k)
		if k == KeySym {
			head = append(head, "level") // sym's [.] or [k], in its own column
		}
	}
	head = append(head, "samples", "self", "self_percent")
	if opts.Children {
		head = append(head, "children", "children_percent")
	}
	cw.Write(head)
	for _, rep := range reps {
		for _, r := range rep.Rows {
			rec := []string{csvCell(rep.Event.Name)}
			for _, k := range r.Keys {
				rec = append(rec, csvCell(k))
			}
			if sym >= 0 {
				level, name := SplitLevel(r.Keys[sym])
				rec = slices.Insert(rec, 2+sym, level)
				rec[1+sym] = csvCell(name)
			}
			rec = append(rec, strconv.FormatUint(r.Samples, 10), strconv.FormatUint(r.Self, 10),
				strconv.FormatFloat(pct(r.Self, rep.Event.Total), 'f', 4, 64))
			if opts.Children {
				rec = append(rec, strconv.FormatUint(r.Children, 10), strconv.FormatFloat(pct(r.Children, rep.Event.Total), 'f', 4, 64))
			}
			cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

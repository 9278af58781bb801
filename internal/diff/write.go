package diff

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jitprof/jitprof/internal/report"
)

// WriteOptions say how to write a comparison.
type WriteOptions struct {
	// Files name the profiles, the baseline's first.
	Files []string
	// Period adds each profile's period, as perf diff -p.
	Period bool
	// Notes are lines for the text header that the caller knows: JIT
	// samples left out of an input, say.
	Notes []string
}

// ruleHelp says what each rule removed, for the header.
var ruleHelp = map[Rule]string{
	Gen:         "generations ([gen N])",
	Address:     "addresses",
	PyPyLoop:    "PyPy's loop and bridge numbers",
	V8Tier:      "V8's tier marks (~ ^ + *) and kinds (JS:, LazyCompile:)",
	HotSpotTier: "HotSpot's frame annotations (_[j] _[1] _[0] _[i])",
}

// WriteText writes res as perf diff does: per event, the data files, the
// baseline's share and each newer profile's computed change per row,
// and, where JIT code was matched by a normalized name, the rules that
// matched it.
func WriteText(w io.Writer, res *Result, opts WriteOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	n := len(opts.Files)
	for ei := range res.Events {
		ev := &res.Events[ei]
		if ei > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "# Event '%s'\n#\n# Data files:\n", ev.Name)
		for i, f := range opts.Files {
			role := ""
			if i == 0 {
				role = " (Baseline)"
			}
			fmt.Fprintf(bw, "#  [%d] %s%s: %d samples\n", i, f, role, ev.Samples[i])
		}
		for _, n := range opts.Notes {
			fmt.Fprintf(bw, "# note: %s\n", n)
		}
		fmt.Fprintln(bw, "#")
		if res.Rules != 0 {
			var what []string
			for r := Gen; r <= HotSpotTier; r <<= 1 {
				if res.Rules&r != 0 {
					what = append(what, r.String()+": "+ruleHelp[r])
				}
			}
			fmt.Fprintf(bw, "# JIT code matched by names without what differs between runs (--exact-names keeps them): %s\n#\n", strings.Join(what, "; "))
		}
		cols := columns(res, ev, n, opts.Period)
		writeTable(bw, cols, len(ev.Rows))
	}
	return bw.Flush()
}

// column is one column of the text table.
type column struct {
	title string
	right bool // numbers are right-aligned
	cell  func(row int) string
}

func columns(res *Result, ev *Event, n int, period bool) []column {
	suffix := func(i int) string {
		if n > 2 {
			return "/" + strconv.Itoa(i)
		}
		return ""
	}
	cols := []column{{title: "Baseline" + suffix(0), right: true, cell: func(j int) string {
		r := &ev.Rows[j]
		if !r.Cells[0].Present {
			return ""
		}
		return fmt.Sprintf("%.2f%%", ev.Percent(r, 0))
	}}}
	if period {
		cols = append(cols, column{title: "Base period" + suffix(0), right: true, cell: func(j int) string {
			return strconv.FormatUint(ev.Rows[j].Cells[0].Period, 10)
		}})
	}
	for i := 1; i < n; i++ {
		cols = append(cols, column{title: res.Compute.title() + suffix(i), right: true, cell: func(j int) string {
			r := &ev.Rows[j]
			v, ok := ev.Value(r, i, res.Compute)
			return formatValue(v, ok, res.Compute)
		}})
		if period {
			cols = append(cols, column{title: "Period" + suffix(i), right: true, cell: func(j int) string {
				return strconv.FormatUint(ev.Rows[j].Cells[i].Period, 10)
			}})
		}
	}
	if res.Rules != 0 {
		cols = append(cols, column{title: "Matched by", cell: func(j int) string { return ev.Rows[j].Matched.String() }})
	}
	for k, key := range res.Keys {
		cols = append(cols, column{title: report.KeyTitle(key), cell: func(j int) string { return ev.Rows[j].Keys[k] }})
	}
	return cols
}

// formatValue writes a computed value as perf diff does.
func formatValue(v float64, ok bool, c Compute) string {
	if !ok {
		return "N/A"
	}
	switch c.Kind {
	case Ratio:
		return strconv.FormatFloat(v, 'f', 6, 64)
	case WDiff:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return fmt.Sprintf("%+.2f%%", v)
}

// writeTable writes perf's table: a commented title line and a line of
// dots, then the rows, columns two spaces apart, the last unpadded.
func writeTable(w io.Writer, cols []column, rows int) {
	width := make([]int, len(cols))
	cells := make([][]string, rows)
	for c, col := range cols {
		width[c] = utf8.RuneCountInString(col.title)
	}
	for j := range rows {
		cells[j] = make([]string, len(cols))
		for c, col := range cols {
			s := col.cell(j)
			cells[j][c] = s
			width[c] = max(width[c], utf8.RuneCountInString(s))
		}
	}
	// The first column's width leaves room for the comment mark of the
	// title lines.
	width[0] = max(width[0], utf8.RuneCountInString(cols[0].title)+2)
	line := func(get func(c int) string, dots bool) {
		var b strings.Builder
		for c, col := range cols {
			s := get(c)
			pad := width[c] - utf8.RuneCountInString(s)
			if c > 0 {
				b.WriteString("  ")
			}
			switch {
			case c == len(cols)-1 && !col.right:
				b.WriteString(s)
			case col.right && !dots:
				b.WriteString(strings.Repeat(" ", pad) + s)
			default:
				b.WriteString(s + strings.Repeat(" ", pad))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(func(c int) string {
		if c == 0 {
			return "# " + cols[0].title
		}
		return cols[c].title
	}, true)
	line(func(c int) string {
		if c == 0 {
			return "# " + strings.Repeat(".", width[0]-2)
		}
		n := width[c]
		if c == len(cols)-1 {
			// A JIT function's name can be long; the last column's
			// dots need not be.
			n = min(n, max(utf8.RuneCountInString(cols[c].title), 60))
		}
		return strings.Repeat(".", n)
	}, true)
	fmt.Fprintln(w, "#")
	for j := range rows {
		line(func(c int) string { return cells[j][c] }, false)
	}
}

type jsonCell struct {
	File    int      `json:"file"`
	Present bool     `json:"present"`
	Samples uint64   `json:"samples"`
	Period  uint64   `json:"period"`
	Percent float64  `json:"percent"`
	Value   *float64 `json:"value,omitempty"` // the computation; absent for the baseline and for N/A
	Names   []string `json:"names,omitempty"` // the symbol's names in this file, where normalized
}

type jsonRow struct {
	Keys      map[string]string `json:"keys"`
	Level     string            `json:"level,omitempty"`
	MatchedBy []string          `json:"matched_by,omitempty"`
	Files     []jsonCell        `json:"files"`
}

type jsonEvent struct {
	Name    string    `json:"name"`
	Totals  []uint64  `json:"totals"`
	Samples []uint64  `json:"samples"`
	Rows    []jsonRow `json:"rows"`
}

// WriteJSON writes res as JSON: the files, the computation and, per
// event and row, every file's samples, period, share and computed value,
// with the rules that matched the row and the names it had.
func WriteJSON(w io.Writer, res *Result, opts WriteOptions) error {
	out := struct {
		Files   []string    `json:"files"`
		Compute string      `json:"compute"`
		Order   int         `json:"order"`
		Sort    []string    `json:"sort"`
		Exact   bool        `json:"exact_names"`
		Rules   []string    `json:"rules,omitempty"`
		Notes   []string    `json:"notes,omitempty"`
		Events  []jsonEvent `json:"events"`
	}{Files: opts.Files, Notes: opts.Notes, Compute: res.Compute.String(), Order: res.Order, Sort: res.Keys, Exact: res.Exact, Rules: res.Rules.Names(), Events: []jsonEvent{}}
	for ei := range res.Events {
		ev := &res.Events[ei]
		je := jsonEvent{Name: ev.Name, Totals: ev.Totals, Samples: ev.Samples, Rows: []jsonRow{}}
		for ri := range ev.Rows {
			r := &ev.Rows[ri]
			jr := jsonRow{Keys: map[string]string{}, MatchedBy: r.Matched.Names()}
			for k, key := range res.Keys {
				jr.Keys[key] = r.Keys[k]
				if key == "sym" {
					jr.Level, jr.Keys[key] = report.SplitLevel(r.Keys[k])
				}
			}
			for i := range r.Cells {
				c := jsonCell{File: i, Present: r.Cells[i].Present, Samples: r.Cells[i].Samples, Period: r.Cells[i].Period,
					Percent: round(ev.Percent(r, i)), Names: r.Names[i]}
				if i > 0 {
					if v, ok := ev.Value(r, i, res.Compute); ok {
						v = round(v)
						c.Value = &v
					}
				}
				jr.Files = append(jr.Files, c)
			}
			je.Rows = append(je.Rows, jr)
		}
		out.Events = append(out.Events, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteCSV writes res as CSV: a row per event and row, the keys (sym's
// level in a column of its own), the rules that matched it, then per
// file its samples, period and share and, for the newer ones, the
// computed value ("" for N/A).
func WriteCSV(w io.Writer, res *Result, opts WriteOptions) error {
	cw := csv.NewWriter(w)
	head := []string{"event"}
	for _, k := range res.Keys {
		head = append(head, k)
		if k == "sym" {
			head = append(head, "level")
		}
	}
	head = append(head, "matched_by")
	for i := range opts.Files {
		head = append(head, fmt.Sprintf("samples_%d", i), fmt.Sprintf("period_%d", i), fmt.Sprintf("percent_%d", i))
		if i > 0 {
			head = append(head, fmt.Sprintf("%s_%d", strings.ReplaceAll(res.Compute.String(), ",", ":"), i))
		}
	}
	cw.Write(head)
	for ei := range res.Events {
		ev := &res.Events[ei]
		for ri := range ev.Rows {
			r := &ev.Rows[ri]
			rec := []string{ev.Name}
			for k, key := range res.Keys {
				if key == "sym" {
					level, name := report.SplitLevel(r.Keys[k])
					rec = append(rec, name, level)
					continue
				}
				rec = append(rec, r.Keys[k])
			}
			rec = append(rec, r.Matched.String())
			for i, c := range r.Cells {
				rec = append(rec, strconv.FormatUint(c.Samples, 10), strconv.FormatUint(c.Period, 10),
					strconv.FormatFloat(ev.Percent(r, i), 'f', 4, 64))
				if i > 0 {
					v, ok := ev.Value(r, i, res.Compute)
					s := ""
					if ok {
						s = strconv.FormatFloat(v, 'f', 4, 64)
					}
					rec = append(rec, s)
				}
			}
			cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

// round keeps 4 decimals, so outputs stay stable.
func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return v
}

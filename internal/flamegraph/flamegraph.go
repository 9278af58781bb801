package flamegraph

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/jitprof/jitprof/internal/profile"
)

// Options control Write.
type Options struct {
	// Event is the event whose samples are drawn.
	Event int
	// Title names what was profiled, such as the recording's path.
	Title string
	// Notes are shown above the graph: what the caller knows that the
	// profile does not say (JIT samples left out, say).
	Notes []string
	// Functions is the number of functions the table under the graph
	// lists; 0 means 50.
	Functions int
}

// Kinds of frames, which the page colours apart.
const (
	kindNative  = iota // code in a file: an executable, a library
	kindJIT            // JIT code, named by a handler or not
	kindKernel         // the kernel and its modules
	kindCommand        // the command a stack ran in, its root
	kindUnknown        // an address in no known mapping
)

var (
	//go:embed flamegraph.js
	script string
	//go:embed flamegraph.css
	style string
	// page is parsed at the first Write, not at start-up: every
	// jitprof command links this package, few of them write a page.
	page = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("flamegraph").Parse(pageHTML))
	})
)

// frame is one kind of frame the graph draws: a function or a command.
type frame struct {
	Name string
	Kind int
	Info string // its image, and for JIT code what named it
}

// node is a node of the merged stacks.
type node struct {
	frame    int32 // index in the frames table
	value    uint64
	children map[int32]*node
}

func (n *node) child(f int32) *node {
	c := n.children[f]
	if c == nil {
		c = &node{frame: f, children: map[int32]*node{}}
		n.children[f] = c
	}
	return c
}

// row is a line of the table of functions.
type row struct {
	frame
	Self, Total uint64
	SelfPct     string
}

// Write writes the flame graph of p's samples of opts.Event as an HTML
// page to w.
func Write(w io.Writer, p *profile.Profile, opts Options) error {
	if opts.Event < 0 || opts.Event >= len(p.Events) {
		return fmt.Errorf("flamegraph: no event %d", opts.Event)
	}
	if opts.Functions == 0 {
		opts.Functions = 50
	}
	var frames []frame
	ofFunc := map[int32]int32{} // function -> its frame
	ofComm := map[int32]int32{} // command (string id) -> its frame
	intern := func(m map[int32]int32, k int32, f func() frame) int32 {
		id, ok := m[k]
		if !ok {
			id = int32(len(frames))
			frames = append(frames, f())
			m[k] = id
		}
		return id
	}
	root := &node{frame: -1, children: map[int32]*node{}}
	var self, total []uint64 // per frame
	seen := map[int32]int{}  // frame -> entry index+1 that last counted it
	var stack []int32
	for i, e := range p.Entries {
		if int(e.Event) != opts.Event {
			continue
		}
		comm := p.Threads[e.Thread].Comm
		n := root.child(intern(ofComm, comm, func() frame { return frame{Name: p.Strings[comm], Kind: kindCommand} }))
		n.value += e.Count
		stack = p.Stack(stack[:0], e.Stack)
		for j := len(stack) - 1; j >= 0; j-- {
			fn := p.Frames[stack[j]].Func
			f := intern(ofFunc, fn, func() frame { return describe(p, fn) })
			n = n.child(f)
			n.value += e.Count
			for len(self) < len(frames) {
				self, total = append(self, 0), append(total, 0)
			}
			if j == 0 {
				self[f] += e.Count
			}
			if seen[f] != i+1 {
				seen[f] = i + 1
				total[f] += e.Count
			}
		}
		root.value += e.Count
	}

	names := make([][]any, len(frames))
	for i, f := range frames {
		names[i] = []any{f.Name, f.Kind, f.Info}
	}
	data, err := json.Marshal(map[string]any{"frames": names, "root": encode(root, frames)})
	if err != nil {
		return err
	}

	var rows []row
	for i, f := range frames {
		if i < len(self) && self[i] > 0 {
			rows = append(rows, row{frame: f, Self: self[i], Total: total[i], SelfPct: percent(self[i], root.value)})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(a.Name, b.Name)) })
	rows = rows[:min(len(rows), opts.Functions)]

	ev := p.Events[opts.Event]
	return page().Execute(w, map[string]any{
		"Title":   opts.Title,
		"Event":   ev.Name,
		"Samples": root.value,
		"Notes":   opts.Notes,
		"Rows":    rows,
		"Data":    template.JS(data), // json.Marshal escapes <, > and &: no </script> in it
		"Script":  template.JS(script),
		"Style":   template.CSS(style),
	})
}

// describe returns the frame of function fn.
func describe(p *profile.Profile, fn int32) frame {
	f := &p.Funcs[fn]
	im := &p.Images[f.Image]
	fr := frame{Name: f.Name, Info: im.Name}
	switch {
	case im.Kind == profile.ImageAnon && im.Name == f.Name:
		fr.Kind, fr.Info = kindJIT, "JIT code no anon handler named (anonymous executable memory)"
	case im.Kind == profile.ImageAnon:
		fr.Kind, fr.Info = kindJIT, "JIT code: "+im.Name
		if f.Gen != 0 {
			fr.Info += ", generation " + strconv.FormatUint(f.Gen, 10)
		}
	case im.Kind == profile.ImageKernel:
		fr.Kind = kindKernel
	case im.Kind == profile.ImageUnknown:
		fr.Kind = kindUnknown
	}
	return fr
}

// encode writes n as [frame, value, [children...]], children in name
// order as flame graphs draw them.
func encode(n *node, frames []frame) []any {
	kids := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		kids = append(kids, c)
	}
	slices.SortFunc(kids, func(a, b *node) int {
		return cmp.Or(cmp.Compare(frames[a.frame].Name, frames[b.frame].Name), cmp.Compare(a.frame, b.frame))
	})
	enc := make([]any, len(kids))
	for i, c := range kids {
		enc[i] = encode(c, frames)
	}
	return []any{n.frame, n.value, enc}
}

func percent(v, total uint64) string {
	return strconv.FormatFloat(100*float64(v)/float64(max(total, 1)), 'f', 2, 64) + "%"
}

const pageHTML = `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{{.Title}} · {{.Event}} · jitprof flame graph</title>
<style>{{.Style}}</style>
</head>
<body>
<header>
  <h1>{{.Title}}</h1>
  <div class="fg-sub">{{.Event}}: {{.Samples}} samples · <span class="fg-legend"><span class="fg-swatch k1"></span>JIT code <span class="fg-swatch k0"></span>native <span class="fg-swatch k2"></span>kernel</span>
    · click a frame to zoom, Esc to zoom out
    <input id="fg-search" type="search" placeholder="search (regexp)" size="24"> <span id="fg-matched"></span></div>
  {{range .Notes}}<div class="fg-note">{{.}}</div>{{end}}
</header>
<div id="fg-details">&nbsp;</div>
<div id="fg-chart"></div>
<h2>Functions with the most samples of their own</h2>
<table id="fg-table">
<tr><th>own samples</th><th></th><th>with callees</th><th>function</th><th>in</th></tr>
{{range .Rows}}<tr class="k{{.Kind}}"><td class="n">{{.Self}}</td><td class="n">{{.SelfPct}}</td><td class="n">{{.Total}}</td><td class="name">{{.Name}}</td><td>{{.Info}}</td></tr>
{{end}}</table>
<script>const flameData = {{.Data}};
{{.Script}}</script>
</body>
</html>
`

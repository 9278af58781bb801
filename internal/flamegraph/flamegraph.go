package flamegraph

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
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
	// Base, when set, makes the graph differential: p's stacks, each
	// frame coloured by how its share changed from Base's samples of
	// BaseEvent (red more, blue less), functions matched by name, kind
	// and image (normalize the names first where they differ between
	// runs: internal/diff). BaseTitle names it.
	Base      *profile.Profile
	BaseEvent int
	BaseTitle string
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
	// In a differential graph: the base's own samples and share, and
	// the change of the share in points.
	BaseSelf       uint64
	BasePct, Delta string
	delta          float64
}

// Write writes the flame graph of p's samples of opts.Event as an HTML
// page to w; with opts.Base, the differential one.
func Write(w io.Writer, p *profile.Profile, opts Options) error {
	if opts.Event < 0 || opts.Event >= len(p.Events) {
		return fmt.Errorf("flamegraph: no event %d", opts.Event)
	}
	if opts.Base != nil && (opts.BaseEvent < 0 || opts.BaseEvent >= len(opts.Base.Events)) {
		return fmt.Errorf("flamegraph: no base event %d", opts.BaseEvent)
	}
	if opts.Functions == 0 {
		opts.Functions = 50
	}
	g := &graph{byFunc: map[int32]int32{}, byComm: map[int32]int32{}, byName: map[frame]int32{}, diff: opts.Base != nil}
	cur := g.tree(p, opts.Event)
	data := map[string]any{}
	var rows []row
	if opts.Base == nil {
		for i, f := range g.frames {
			if i < len(cur.self) && cur.self[i] > 0 {
				rows = append(rows, row{frame: f, Self: cur.self[i], Total: cur.total[i], SelfPct: percent(cur.self[i], cur.root.value)})
			}
		}
		slices.SortStableFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(a.Name, b.Name)) })
		data["root"] = encode(cur.root, nil, g.frames)
	} else {
		g.byFunc, g.byComm = map[int32]int32{}, map[int32]int32{} // the base's ids are its own
		base := g.tree(opts.Base, opts.BaseEvent)
		share := func(v, total uint64) float64 { return float64(v) / float64(max(total, 1)) }
		for i, f := range g.frames {
			var s, bs uint64
			if i < len(cur.self) {
				s = cur.self[i]
			}
			if i < len(base.self) {
				bs = base.self[i]
			}
			if s == 0 && bs == 0 {
				continue
			}
			d := 100 * (share(s, cur.root.value) - share(bs, base.root.value))
			rows = append(rows, row{frame: f, Self: s, SelfPct: percent(s, cur.root.value), BaseSelf: bs, BasePct: percent(bs, base.root.value),
				Delta: strconv.FormatFloat(d, 'f', 2, 64), delta: d})
		}
		slices.SortStableFunc(rows, func(a, b row) int {
			return cmp.Or(cmp.Compare(math.Abs(b.delta), math.Abs(a.delta)), cmp.Compare(a.Name, b.Name))
		})
		data["root"] = encode(cur.root, base.root, g.frames)
		data["base"] = base.root.value
	}
	rows = rows[:min(len(rows), opts.Functions)]
	names := make([][]any, len(g.frames))
	for i, f := range g.frames {
		names[i] = []any{f.Name, f.Kind, f.Info}
	}
	data["frames"] = names
	js, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ev := p.Events[opts.Event]
	return page().Execute(w, map[string]any{
		"Title":    opts.Title,
		"Event":    ev.Name,
		"Samples":  cur.root.value,
		"Base":     opts.Base != nil,
		"BaseName": opts.BaseTitle,
		"Notes":    opts.Notes,
		"Rows":     rows,
		"Data":     template.JS(js), // json.Marshal escapes <, > and &: no </script> in it
		"Script":   template.JS(script),
		"Style":    template.CSS(style),
	})
}

// graph interns the frames of one graph, of one profile or, in a
// differential graph, of two, whose functions are then one frame when
// they have one name, kind and image.
type graph struct {
	frames []frame
	byFunc map[int32]int32 // function -> its frame
	byComm map[int32]int32 // command (string id) -> its frame
	byName map[frame]int32 // in a differential graph: a frame by what it shows
	diff   bool
}

// stacks is one profile's merged stacks, and per frame the samples it
// is the leaf of (self) and in (total).
type stacks struct {
	root        *node
	self, total []uint64
}

func (g *graph) intern(m map[int32]int32, k int32, f func() frame) int32 {
	if id, ok := m[k]; ok {
		return id
	}
	fr := f()
	id, ok := g.byName[fr]
	if !ok || !g.diff {
		id = int32(len(g.frames))
		g.frames = append(g.frames, fr)
		g.byName[fr] = id
	}
	m[k] = id
	return id
}

// tree merges the stacks of p's samples of event.
func (g *graph) tree(p *profile.Profile, event int) *stacks {
	s := &stacks{root: &node{frame: -1, children: map[int32]*node{}}}
	seen := map[int32]int{} // frame -> entry index+1 that last counted it
	var stack []int32
	for i, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		comm := p.Threads[e.Thread].Comm
		n := s.root.child(g.intern(g.byComm, comm, func() frame { return frame{Name: p.Strings[comm], Kind: kindCommand} }))
		n.value += e.Count
		stack = p.Stack(stack[:0], e.Stack)
		for j := len(stack) - 1; j >= 0; j-- {
			fn := p.Frames[stack[j]].Func
			f := g.intern(g.byFunc, fn, func() frame { return describe(p, fn, g.diff) })
			n = n.child(f)
			n.value += e.Count
			for len(s.self) < len(g.frames) {
				s.self, s.total = append(s.self, 0), append(s.total, 0)
			}
			if j == 0 {
				s.self[f] += e.Count
			}
			if seen[f] != i+1 {
				seen[f] = i + 1
				s.total[f] += e.Count
			}
		}
		s.root.value += e.Count
	}
	return s
}

// describe returns the frame of function fn; in a differential graph
// without its generation, which the other profile's code of the same
// function does not share.
func describe(p *profile.Profile, fn int32, diff bool) frame {
	f := &p.Funcs[fn]
	im := &p.Images[f.Image]
	fr := frame{Name: f.Name, Info: im.Name}
	switch {
	case im.Kind == profile.ImageAnon && im.Name == f.Name:
		fr.Kind, fr.Info = kindJIT, "JIT code no anon handler named (anonymous executable memory)"
	case im.Kind == profile.ImageAnon:
		fr.Kind, fr.Info = kindJIT, "JIT code: "+im.Name
		if f.Gen != 0 && !diff {
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
// order as flame graphs draw them; with base, the node of the same
// frames in the base's graph (nil: none), its value follows:
// [frame, value, [children...], base value].
func encode(n, base *node, frames []frame) []any {
	kids := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		kids = append(kids, c)
	}
	slices.SortFunc(kids, func(a, b *node) int {
		return cmp.Or(cmp.Compare(frames[a.frame].Name, frames[b.frame].Name), cmp.Compare(a.frame, b.frame))
	})
	enc := make([]any, len(kids))
	for i, c := range kids {
		var b *node
		if base != nil {
			b = base.children[c.frame]
		}
		enc[i] = encode(c, b, frames)
	}
	if base == nil {
		return []any{n.frame, n.value, enc}
	}
	return []any{n.frame, n.value, enc, base.value}
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
  {{if .Base}}<div class="fg-sub">compared with {{.BaseName}}: widths are this profile's samples, colours the change of each frame's share from the base (<span class="fg-legend"><span class="fg-swatch up"></span>more <span class="fg-swatch down"></span>less</span>); frames only in the base are not drawn, the table lists them</div>{{end}}
  <div class="fg-sub">{{.Event}}: {{.Samples}} samples · {{if not .Base}}<span class="fg-legend"><span class="fg-swatch k1"></span>JIT code <span class="fg-swatch k0"></span>native <span class="fg-swatch k2"></span>kernel</span>{{end}}
    · click a frame to zoom, Esc to zoom out
    <input id="fg-search" type="search" placeholder="search (regexp)" size="24"> <span id="fg-matched"></span></div>
  {{range .Notes}}<div class="fg-note">{{.}}</div>{{end}}
</header>
<div id="fg-details">&nbsp;</div>
<div id="fg-chart"></div>
{{if .Base}}<h2>Functions whose own share changed most</h2>
<table id="fg-table">
<tr><th>base</th><th></th><th>own samples</th><th></th><th>change (points)</th><th>function</th><th>in</th></tr>
{{range .Rows}}<tr class="k{{.Kind}}"><td class="n">{{.BaseSelf}}</td><td class="n">{{.BasePct}}</td><td class="n">{{.Self}}</td><td class="n">{{.SelfPct}}</td><td class="n">{{.Delta}}</td><td class="name">{{.Name}}</td><td>{{.Info}}</td></tr>
{{end}}</table>{{else}}<h2>Functions with the most samples of their own</h2>
<table id="fg-table">
<tr><th>own samples</th><th></th><th>with callees</th><th>function</th><th>in</th></tr>
{{range .Rows}}<tr class="k{{.Kind}}"><td class="n">{{.Self}}</td><td class="n">{{.SelfPct}}</td><td class="n">{{.Total}}</td><td class="name">{{.Name}}</td><td>{{.Info}}</td></tr>
{{end}}</table>{{end}}
<script>const flameData = {{.Data}};
{{.Script}}</script>
</body>
</html>
`

package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/termtext"
)

// Chains says how callchains are read and shown, as perf report's
// --call-graph, -G and --max-stack do.
type Chains struct {
	// Graph prints under each row of the text report the tree of the
	// callchains of its samples (perf's graph print type): with
	// Children, of every sample the row is in, from the row's function
	// on, and of those it is the leaf of, whole; without, of those it
	// is the leaf of.
	Graph bool
	// Caller orders the chains from the outermost caller to the
	// sampled function (perf's caller order, -G); otherwise from the
	// sampled function out (callee order).
	Caller bool
	// Threshold hides the branches of the trees under this per cent of
	// the event's total (perf's 0.5 by default).
	Threshold float64
	// MaxStack keeps of each callchain its first MaxStack functions in
	// its order, for the trees and the children column: the nearest the
	// sample in callee order, the outermost in caller order, as perf's
	// --max-stack (whose default, 127, is the kernel's). 0 keeps all.
	// Chains unwound from user stacks (DWARF call graphs) are cut as
	// perf cuts them: the kernel's part so, and the user part, which
	// perf unwinds at most MaxStack frames from the sample, to its
	// MaxStack frames nearest the sample in either order.
	MaxStack int
}

// chain returns the functions of the stack ending at node in the order
// of c, cut to c.MaxStack, reusing dst.
func (c *Chains) chain(p *profile.Profile, dst []int32, node int32) []int32 {
	dst = p.Stack(dst[:0], node)
	n := c.MaxStack
	if n > 0 && p.Unwound.Chains > 0 {
		// Leaf first: the kernel's frames, then the user's.
		k := 0
		for k < len(dst) && p.Funcs[p.Frames[dst[k]].Func].Kernel {
			k++
		}
		from, to := 0, min(n, k) // of the kernel's part
		if c.Caller && k > n {
			from, to = k-n, k
		}
		users := min(n, len(dst)-k)
		m := copy(dst, dst[from:to])
		m += copy(dst[m:], dst[k:k+users])
		dst = dst[:m]
		n = 0
	}
	if c.Caller {
		slices.Reverse(dst)
	}
	if n > 0 && len(dst) > n {
		dst = dst[:n]
	}
	return dst
}

// callNode is a node of a row's call tree: a function on the paths of
// the chains added, and the period of those that pass through it. Its
// children are a list (child, then each one's sibling): most nodes have
// one, and a tree of deep stacks has millions of nodes.
type callNode struct {
	fn             int32 // index in Profile.Funcs
	cumul          uint64
	self           uint64 // of the chains that end here
	child, sibling *callNode
}

// callNodes allocates the nodes of the trees of a report, in slabs.
type callNodes struct{ slab []callNode }

func (a *callNodes) new(fn int32) *callNode {
	if len(a.slab) == 0 {
		a.slab = make([]callNode, 4096)
	}
	n := &a.slab[0]
	a.slab = a.slab[1:]
	n.fn = fn
	return n
}

// add adds a chain of functions, with the samples' period, under n.
func (n *callNode) add(a *callNodes, fns []int32, period uint64) {
	n.cumul += period
	for _, fn := range fns {
		// Found children move to the front: a node's next chains
		// mostly take the way its last one took.
		var prev *callNode
		c := n.child
		for c != nil && c.fn != fn {
			prev, c = c, c.sibling
		}
		switch {
		case c == nil:
			c = a.new(fn)
			c.sibling, n.child = n.child, c
		case prev != nil:
			prev.sibling = c.sibling
			c.sibling, n.child = n.child, c
		}
		c.cumul += period
		n = c
	}
	n.self += period
}

// onlyChild returns n's child when it has exactly one, or nil.
func (n *callNode) onlyChild() *callNode {
	if n.child != nil && n.child.sibling == nil {
		return n.child
	}
	return nil
}

// treePrinter prints call trees as perf report --stdio prints its graph:
// perf merges the functions of a path where no chain leaves or ends into
// one node, prints each node's first function with the node's share of
// the event's total ("--12.34%--") and the others below it, and hides
// the nodes under the threshold.
type treePrinter struct {
	p         *profile.Profile
	total     uint64 // the event's, which percentages are of
	minHit    uint64 // the period a node needs to be shown
	skipFirst bool   // the rows are named by their function first
	w         *bytes.Buffer
}

// path returns the functions of the node that starts at n: n and its
// only children, up to a fork or the end of a chain.
func path(n *callNode) ([]int32, *callNode) {
	fns := []int32{n.fn}
	for n.self == 0 && n.onlyChild() != nil {
		n = n.child
		fns = append(fns, n.fn)
	}
	return fns, n
}

// shown returns the children of n a tree shows, biggest first.
func (tp *treePrinter) shown(n *callNode) []*callNode {
	var l []*callNode
	for c := n.child; c != nil; c = c.sibling {
		if c.cumul >= tp.minHit {
			l = append(l, c)
		}
	}
	slices.SortStableFunc(l, func(a, b *callNode) int {
		if a.cumul != b.cumul {
			if a.cumul > b.cumul {
				return -1
			}
			return 1
		}
		return strings.Compare(tp.name(a.fn), tp.name(b.fn))
	})
	return l
}

func (tp *treePrinter) name(fn int32) string { return termtext.Escape(tp.p.Funcs[fn].Name) }

const treeMargin = "            "

// print prints the tree of root, a row's, whose value (self or children
// period) is rowValue, after the row.
func (tp *treePrinter) print(root *callNode, rowValue uint64) {
	start := tp.w.Len()
	margin := treeMargin
	top := tp.shown(root)
	if len(top) == 1 && top[0].cumul == rowValue {
		// One path from the row: without a percentage, which would
		// be the row's.
		fns, last := path(top[0])
		printed := false
		for i, fn := range fns {
			if i == 0 && tp.skipFirst {
				continue // the row's own function
			}
			if !printed {
				fmt.Fprintf(tp.w, "%s|\n%s---", margin, margin)
				margin += "   "
				printed = true
			} else {
				tp.w.WriteString(margin)
			}
			fmt.Fprintln(tp.w, tp.name(fn))
		}
		top = tp.shown(last)
	}
	tp.level(top, []bool{true}, margin)
	if tp.w.Len() > start {
		tp.w.WriteByte('\n')
	}
}

// level prints nodes, the children shown of a node at depth-1;
// lines[d] says whether a line goes on down at depth d.
func (tp *treePrinter) level(nodes []*callNode, lines []bool, margin string) {
	depth := len(lines)
	next := slices.Clone(lines)
	for i, n := range nodes {
		if i == len(nodes)-1 {
			next[depth-1] = false
		}
		tp.w.WriteString(margin)
		for _, line := range lines {
			if line {
				tp.w.WriteString("|          ")
			} else {
				tp.w.WriteString("           ")
			}
		}
		tp.w.WriteByte('\n')
		fns, last := path(n)
		for j, fn := range fns {
			tp.w.WriteString(margin)
			for d, line := range next {
				if line {
					tp.w.WriteByte('|')
				} else {
					tp.w.WriteByte(' ')
				}
				if j == 0 && d == depth-1 {
					fmt.Fprintf(tp.w, "--%.2f%%--", pct(n.cumul, tp.total))
				} else {
					tp.w.WriteString("          ")
				}
			}
			fmt.Fprintln(tp.w, tp.name(fn))
		}
		tp.level(tp.shown(last), append(slices.Clone(next), true), margin)
	}
}

// table is what writeText writes its rows to: a tabwriter, which
// aligns the columns, and with trees something that puts each row's
// tree after it.
type table interface {
	io.Writer
	Flush() error
	// tree notes the tree of row r of rep, written next.
	tree(p *profile.Profile, rep *EventReport, r *Row, keys []string, opts Options)
}

// newTable returns the table writeText writes to w with opts.
func newTable(w io.Writer, opts Options) table {
	if !opts.Chains.Graph {
		return plainTable{tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)}
	}
	t := &treeWriter{out: w, buf: &bytes.Buffer{}, after: map[int][]byte{}}
	t.tw = tabwriter.NewWriter(t.buf, 0, 8, 2, ' ', tabwriter.AlignRight)
	return t
}

type plainTable struct{ *tabwriter.Writer }

func (plainTable) tree(*profile.Profile, *EventReport, *Row, []string, Options) {}

// treeWriter counts the lines written to its tabwriter, so that once
// the columns are aligned (into buf) each tree follows its row.
type treeWriter struct {
	tw    *tabwriter.Writer
	out   io.Writer
	buf   *bytes.Buffer
	lines int
	after map[int][]byte // tree text to print after the line
}

func (t *treeWriter) Write(b []byte) (int, error) {
	t.lines += bytes.Count(b, []byte{'\n'})
	return t.tw.Write(b)
}

func (t *treeWriter) tree(p *profile.Profile, rep *EventReport, r *Row, keys []string, opts Options) {
	if tree := treeText(p, rep, r, keys, opts); len(tree) > 0 {
		t.after[t.lines] = tree
	}
}

// treeText is the tree of row r of rep as the text report prints it,
// nil when it has none.
func treeText(p *profile.Profile, rep *EventReport, r *Row, keys []string, opts Options) []byte {
	if r.tree == nil {
		return nil
	}
	tp := treePrinter{
		p:         p,
		total:     rep.Event.Total,
		minHit:    uint64(float64(rep.Event.Total) * opts.Chains.Threshold / 100),
		skipFirst: keys[0] == KeySym,
		w:         &bytes.Buffer{},
	}
	v := r.Self
	if opts.Children {
		v = r.Children
	}
	tp.print(r.tree, v)
	return tp.w.Bytes()
}

// WriteTree writes the tree of the callchains of row r of rep, which
// Compute made from p with opts, as the text report prints it under the
// row (a live view's, for the selected row); nothing when the row has
// none (opts without Chains.Graph, or the row under its threshold).
func WriteTree(w io.Writer, p *profile.Profile, rep *EventReport, r *Row, opts Options) error {
	keys, err := SortKeys(opts.Sort)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(treeText(p, rep, r, keys, opts))
	return err
}

// Flush aligns the table and writes it, with the trees, to out.
func (t *treeWriter) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for i, line := range bytes.SplitAfter(t.buf.Bytes(), []byte{'\n'}) {
		if _, err := t.out.Write(line); err != nil {
			return err
		}
		if tree := t.after[i]; tree != nil {
			if _, err := t.out.Write(tree); err != nil {
				return err
			}
		}
	}
	return nil
}

// HasCallchains reports whether any sample of p has a caller: whether
// the recording has callchains to draw trees of.
func HasCallchains(p *profile.Profile) bool {
	for _, e := range p.Entries {
		if e.Stack >= 0 && p.Nodes[e.Stack].Parent >= 0 {
			return true
		}
	}
	return false
}

package pypylog

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/jitname"
)

// Section names Read understands.
const (
	SectionAddr         = "jit-backend-addr"
	SectionOptLoop      = "jit-log-opt-loop"
	SectionOptBridge    = "jit-log-opt-bridge"
	SectionProfileEnter = "jit-profile-enter"
	SectionProfileExit  = "jit-profile-exit"
)

// MaxCode bounds the machine code of one loop or bridge; PyPy allocates
// code in blocks of a few MiB.
const MaxCode = 1 << 30

// MaxTraceLines bounds the operations and merge points of one trace;
// PyPy cuts traces at trace_limit, 6000 operations by default.
const MaxTraceLines = 1 << 24

// Options choose what Read keeps.
type Options struct {
	// Ops keeps the text of every operation of every trace, which a loop
	// view shows; without it a trace keeps each operation's offset, guard
	// and source position only, a few bytes instead of a line.
	Ops bool
}

// Code is one loop or bridge the backend assembled: a jit-backend-addr
// section.
//
//	Loop 1 (f;/tmp/x.py:2-4~#12 FOR_ITER) has address 0x...a5b to 0x...c10 (bootstrap 0x...9d0)
//	       gc table: 0x...950
//	       function: 0x...9d0
//	         resops: 0x...a5b
//	       failures: 0x...c10
//	            end: 0x...dc7
//
// A bridge's header is "bridge out of Guard 0x... has address A to B",
// and "jump target" takes the place of "function".
type Code struct {
	Bridge bool
	// Loop is a loop's number, unique in the process, but for the -1 of
	// every stub that calls the interpreter until the code it stands for
	// is compiled (compile_tmp_callback, "Loop -1 ()"); 0 for bridges.
	Loop int
	// Name is a loop's name, its Python position in PyPy3's form; Loc is
	// Name parsed. Bridges have neither in this section.
	Name string
	Loc  Location
	// Guard is the guard a bridge leaves (its descr's address, which
	// the parent trace's operations name as descr=<Guard0x...>).
	Guard uint64
	// Start and End bound all of the machine code: from "function" (a
	// bridge's "jump target") up to "end"; where the log lacks those
	// lines, from the header's addresses.
	Start, End uint64
	// Block is the start of the block the code lives in ("gc table"),
	// which the +OFF offsets of the trace count from; Start when absent.
	Block uint64
	// Ops and Failures are where the operations and the failure
	// recovery code begin ("resops", "failures"), Bootstrap a loop's
	// entry from the interpreter; 0 when the log lacks them.
	Ops, Failures, Bootstrap uint64
	// Time is the timestamp of the section: the code is complete then
	// and has not yet run.
	Time uint64
	// Line is the line of the section's header.
	Line int64
	// Trace is the index in Log.Traces of the code's optimised trace, -1
	// when the log has none (no jit-log-opt).
	Trace int
	// Parent is, for a bridge, the index in Log.Traces of the trace whose
	// guard it leaves, -1 when unknown.
	Parent int
}

// Trace is one optimised trace: a jit-log-opt-loop or jit-log-opt-bridge
// section.
//
//	# Loop 1 (f;/tmp/x.py:2-4~#12 FOR_ITER) : loop with 89 ops
//	[p0, p1]
//	+267: p2 = getfield_gc_r(p0, descr=<FieldP ...>)
//	debug_merge_point(0, 0, 'f;/tmp/x.py:2-4~#12 FOR_ITER')
//	+384: guard_value(i5, 4, descr=<Guard0x7f7f2d1e0d40>) [p0, ...]
//	+704: --end of the loop--
type Trace struct {
	Bridge bool
	Loop   int    // a loop's number
	Name   string // a loop's name
	Kind   string // what the header says it is: "loop", "entry bridge"; "bridge"
	Guard  uint64 // a bridge's guard
	NumOps int    // the operation count the header gives
	Inputs string // the input arguments, "[p0, p1]"
	Ops    []Op
	// Text holds each operation's text, without its offset, with
	// Options.Ops (apart from Ops, which then hold no pointers the
	// garbage collector must follow).
	Text   []string
	Points []MergePoint
	// Labels are the TargetTokens of the trace's label operations: where
	// a jump can enter it. Jump is the TargetToken its final jump goes to
	// (0 when it ends otherwise, in a finish or a guard): a bridge whose
	// Jump is one of its own loop's Labels is an inner bridge (seed 002).
	Labels []uint64
	Jump   uint64
	// Calls are the loops the trace calls with call_assembler (their
	// numbers), whose time seed 002 charges to the caller.
	Calls []int
	// Code is the index in Log.Codes of the trace's machine code, -1
	// when no jit-backend-addr section named it.
	Code int
	Time uint64
	Line int64 // the section's first line
}

// Op is one operation of a trace.
type Op struct {
	// Offset is the operation's +OFF: where its machine code starts,
	// counted from the code's Block; -1 when it has none.
	Offset int32
	// Guard is the guard descr the operation names, 0 for none.
	Guard uint64
	// Point is the index in Trace.Points of the merge point the
	// operation follows, -1 before the first.
	Point int32
}

// MergePoint is a debug_merge_point(depth, call_id, 'location'): the
// operations after it come from this Python bytecode; depth counts
// inlined calls.
type MergePoint struct {
	Op     int // index in Trace.Ops of the operation that follows it
	Depth  int
	CallID int
	// Loc is the index in Log.Locations of the location, which every
	// trace through the same bytecode shares.
	Loc int
}

// ProfileEvent is a jit-profile-enter or jit-profile-exit section, the
// event seed 002 proposes: its body names the loop or bridge entered or
// left. Released PyPys do not write them.
type ProfileEvent struct {
	Time uint64 // the section's timestamp
	// Thread is the section's "N# " thread prefix, -1 without one.
	Thread int
	Exit   bool
	Name   string // the body, without a trailing "# comment"
	Line   int64
}

// Log is what Read keeps of a log.
type Log struct {
	Codes   []Code // in the order the log gives them, which is time order
	Traces  []Trace
	Profile []ProfileEvent
	// Locations are the distinct locations of the merge points.
	Locations []Location
	// Warnings say where a cut log lost data; see Reader.Warnings.
	Warnings []string
	// Cut reports that the log ends mid-line or inside sections.
	Cut bool
	// Lines counts the lines read; First and Last are the first and last
	// timestamps (HasTime false when the log has no section lines).
	Lines       int64
	First, Last uint64
	HasTime     bool
}

// Read reads a log: the machine code of loops and bridges, their
// optimised traces and the profile events. It streams: memory grows with
// what it keeps, not with the log. Other sections are skipped.
func Read(r io.Reader, opts Options) (*Log, error) {
	b := &builder{
		opts:    opts,
		log:     &Log{},
		strs:    map[string]string{},
		loops:   map[int]int{},
		bridges: map[uint64]int{},
		guards:  map[uint64]int{},
		locs:    map[string]int{},
	}
	rd := NewReader(r)
	for rd.Next() {
		if err := b.event(rd.Event()); err != nil {
			return nil, err
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	l := b.log
	l.Warnings = append(l.Warnings, rd.Warnings()...)
	l.Cut = rd.Cut()
	if b.addr != nil {
		l.Warnings = append(l.Warnings, fmt.Sprintf("the log ends inside the %s section of line %d: the code it names is left out", SectionAddr, b.addr.line))
	}
	if b.trace != nil {
		l.Warnings = append(l.Warnings, fmt.Sprintf("the log ends inside the trace of line %d: it is left out", b.trace.Line))
	}
	l.Lines = rd.Lines()
	l.First, l.Last, l.HasTime = rd.Span()
	return l, nil
}

type addrState struct {
	line   int64 // of the section start, then of the header
	time   uint64
	header bool
	code   Code
	// The header's "has address A to B": the operations to the failures.
	a, b uint64
}

type builder struct {
	opts Options
	// slim keeps of a trace only what naming bridges needs (a Follower's
	// builder): the guards its operations name, up to guardRoom of them
	// in all, and none of its operations, merge points, labels or calls.
	slim      bool
	guardRoom int
	// lines counts the trace's operations and merge points read;
	// inputs says its input arguments' line was read.
	lines  int
	inputs bool
	log    *Log
	strs   map[string]string
	// strBytes is about what strs holds: its strings and entries.
	strBytes int
	addr     *addrState
	trace    *Trace
	prof     *ProfileEvent

	loops   map[int]int    // loop number -> index in Codes of its latest code
	bridges map[uint64]int // guard -> index in Codes of its latest bridge
	guards  map[uint64]int // guard -> index in Traces of the latest trace with it
	locs    map[string]int
}

// maxLocations bounds the location cache: a program has as many as it
// has bytecodes the JIT traced.
const maxLocations = 1 << 20

func (b *builder) intern(s string) string {
	if v, ok := b.strs[s]; ok {
		return v
	}
	b.strs[s] = s
	b.strBytes += len(s) + mapEntry
	return s
}

func bad(line int64, format string, args ...any) error {
	return fmt.Errorf("pypylog: line %d: %s: %w", line, fmt.Sprintf(format, args...), ErrFormat)
}

func (b *builder) event(e *Event) error {
	switch e.Kind {
	case Start:
		switch e.Section {
		case SectionAddr:
			b.addr = &addrState{line: e.Line, time: e.Time}
		case SectionOptLoop, SectionOptBridge:
			b.trace = &Trace{Bridge: e.Section == SectionOptBridge, Code: -1, Time: e.Time, Line: e.Line}
			b.lines, b.inputs = 0, false
		case SectionProfileEnter, SectionProfileExit:
			if b.slim {
				break // a Follower names code: the events are not kept
			}
			b.prof = &ProfileEvent{Time: e.Time, Thread: e.Thread, Exit: e.Section == SectionProfileExit, Line: e.Line}
		}
	case End:
		switch e.Section {
		case SectionAddr:
			if b.addr != nil {
				err := b.commitAddr()
				b.addr = nil
				return err
			}
		case SectionOptLoop, SectionOptBridge:
			if b.trace != nil {
				b.commitTrace()
				b.trace = nil
			}
		case SectionProfileEnter, SectionProfileExit:
			if b.prof != nil {
				if b.prof.Name == "" {
					return bad(b.prof.Line, "%s names no loop or bridge", e.Section)
				}
				b.log.Profile = append(b.log.Profile, *b.prof)
				b.prof = nil
			}
		}
	case Text:
		switch e.Section {
		case SectionAddr:
			if b.addr != nil {
				return b.addrLine(e.Text, e.Line)
			}
		case SectionOptLoop, SectionOptBridge:
			if b.trace != nil {
				return b.traceLine(e.Text, e.Line)
			}
		case SectionProfileEnter, SectionProfileExit:
			if b.prof != nil && b.prof.Name == "" {
				b.prof.Name = b.intern(profileName(e.Text))
			}
		}
	}
	return nil
}

// profileName is the loop or bridge a profile event's body names: the
// text before a " # comment" (seed 002 annotates its example so).
func profileName(t []byte) string {
	s := string(bytes.TrimSpace(t))
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') && (s[i+1] == ' ' || s[i+1] == '\t') {
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

var (
	hasAddress    = []byte(") has address ")
	bridgeOut     = []byte("bridge out of Guard ")
	loopPrefix    = []byte("Loop ")
	guardOp       = []byte("guard_")
	guardDescr    = []byte("descr=<Guard")
	mergePoint    = []byte("debug_merge_point(")
	traceLoop     = []byte("# Loop ")
	traceBridge   = []byte("# bridge out of Guard ")
	labelOp       = []byte("label(")
	jumpOp        = []byte("jump(")
	targetToken   = []byte("descr=TargetToken(")
	callAssembler = []byte("call_assembler")
	loopDescr     = []byte("descr=<Loop")
)

// addrLine parses one line of a jit-backend-addr section.
func (b *builder) addrLine(t []byte, line int64) error {
	st := b.addr
	switch {
	case bytes.HasPrefix(t, loopPrefix):
		// Loop N (name) has address A to B (bootstrap C); the name may
		// hold parentheses, so it ends at the last ") has address ".
		rest := t[len(loopPrefix):]
		sp := bytes.IndexByte(rest, ' ')
		ha := bytes.LastIndex(rest, hasAddress)
		if sp < 0 || ha < sp || rest[sp+1] != '(' {
			return bad(line, "a Loop line not in the form \"Loop N (name) has address A to B\"")
		}
		n, err := strconv.Atoi(string(rest[:sp]))
		if err != nil {
			return bad(line, "a Loop line with a bad loop number")
		}
		a, bb, tail, err := addressRange(rest[ha+len(hasAddress):])
		if err != nil {
			return bad(line, "%v", err)
		}
		var boot uint64
		if tail = bytes.TrimSpace(tail); len(tail) > 0 {
			v, ok := bytes.CutPrefix(tail, []byte("(bootstrap "))
			if !ok || !bytes.HasSuffix(v, []byte(")")) {
				return bad(line, "a Loop line with a bad bootstrap address")
			}
			if boot, err = hexAddr(v[:len(v)-1]); err != nil {
				return bad(line, "a Loop line with a bad bootstrap address")
			}
		}
		// A name is a Python position, short: one longer than a
		// name is kept is cut, as every reader of JIT names cuts.
		name := jitname.Cap(rest[sp+2 : ha])
		st.header, st.line, st.a, st.b = true, line, a, bb
		st.code = Code{Loop: n, Loc: ParseLocation(name, b.intern), Bootstrap: boot}
		if !b.slim {
			st.code.Name = b.intern(name) // a Follower's names need Loc only
		}
	case bytes.HasPrefix(t, bridgeOut):
		rest := t[len(bridgeOut):]
		sp := bytes.IndexByte(rest, ' ')
		if sp < 0 || !bytes.HasPrefix(rest[sp:], hasAddress[1:]) {
			return bad(line, "a bridge line not in the form \"bridge out of Guard G has address A to B\"")
		}
		g, err := hexAddr(rest[:sp])
		if err != nil {
			return bad(line, "a bridge line with a bad guard")
		}
		a, bb, _, err := addressRange(rest[sp+len(hasAddress)-1:])
		if err != nil {
			return bad(line, "%v", err)
		}
		st.header, st.line, st.a, st.b = true, line, a, bb
		st.code = Code{Bridge: true, Guard: g}
	default:
		key, val, ok := bytes.Cut(bytes.TrimSpace(t), []byte(": "))
		if !ok {
			return nil
		}
		var field *uint64
		switch string(key) {
		case "gc table":
			field = &st.code.Block
		case "function", "jump target":
			field = &st.code.Start
		case "resops":
			field = &st.code.Ops
		case "failures":
			field = &st.code.Failures
		case "end":
			field = &st.code.End
		default:
			return nil // fields a later PyPy may add
		}
		v, err := hexAddr(val)
		if err != nil {
			return bad(line, "a bad %s address", key)
		}
		*field = v
	}
	return nil
}

// addressRange parses "0xA to 0xB" and returns what follows.
func addressRange(t []byte) (a, b uint64, rest []byte, err error) {
	as, after, ok := bytes.Cut(t, []byte(" to "))
	if !ok {
		return 0, 0, nil, fmt.Errorf("an address range without \" to \"")
	}
	if a, err = hexAddr(as); err != nil {
		return 0, 0, nil, fmt.Errorf("a bad start address")
	}
	bs, rest, _ := bytes.Cut(after, []byte(" "))
	if b, err = hexAddr(bs); err != nil {
		return 0, 0, nil, fmt.Errorf("a bad end address")
	}
	return a, b, rest, nil
}

// hexAddr parses "0x" and 1 to 16 hexadecimal digits.
func hexAddr(t []byte) (uint64, error) {
	if len(t) < 3 || t[0] != '0' || t[1] != 'x' && t[1] != 'X' {
		return 0, ErrFormat
	}
	v, n := hexDigits(t[2:])
	if n == 0 || n > 16 || n != len(t)-2 {
		return 0, ErrFormat
	}
	return v, nil
}

func (b *builder) commitAddr() error {
	st := b.addr
	if !st.header {
		return nil // a section of some other shape: nothing to name
	}
	c := st.code
	c.Time, c.Line, c.Trace, c.Parent = st.time, st.line, -1, -1
	if c.Start == 0 {
		c.Start = st.a
		if !c.Bridge && c.Bootstrap != 0 && c.Bootstrap < c.Start {
			c.Start = c.Bootstrap
		}
	}
	if c.End == 0 {
		c.End = st.b
	}
	if c.Block == 0 || c.Block > c.Start {
		c.Block = c.Start
	}
	what := "loop " + strconv.Itoa(c.Loop)
	if c.Bridge {
		what = fmt.Sprintf("the bridge out of guard %#x", c.Guard)
	}
	if c.End <= c.Start || c.End-c.Start > MaxCode {
		return bad(c.Line, "%s's code runs from %#x to %#x", what, c.Start, c.End)
	}
	i := len(b.log.Codes)
	if c.Bridge {
		if p, ok := b.guards[c.Guard]; ok {
			c.Parent = p
		}
		b.bridges[c.Guard] = i
	} else {
		b.loops[c.Loop] = i
	}
	b.log.Codes = append(grow(b.log.Codes), c)
	return nil
}

// traceLine parses one line of a jit-log-opt section.
func (b *builder) traceLine(t []byte, line int64) error {
	tr := b.trace
	if b.lines == 0 && !b.inputs {
		switch {
		case tr.Kind == "" && bytes.HasPrefix(t, traceLoop):
			return b.traceHeader(t[len(traceLoop):], line)
		case tr.Kind == "" && bytes.HasPrefix(t, traceBridge):
			rest := t[len(traceBridge):]
			gs, after, _ := bytes.Cut(rest, []byte(" "))
			g, err := hexAddr(gs)
			if err != nil {
				return bad(line, "a bridge trace header with a bad guard")
			}
			tr.Guard, tr.Kind = g, "bridge"
			tr.NumOps = opCount(after)
			b.reserve()
			return nil
		case len(t) > 0 && t[0] == '[':
			b.inputs = true
			if !b.slim {
				tr.Inputs = string(t)
			}
			return nil
		}
	}
	if b.lines >= MaxTraceLines {
		return bad(line, "a trace of more than %d lines", MaxTraceLines)
	}
	b.lines++
	off := -1
	if len(t) > 1 && t[0] == '+' {
		v, n := decDigits(t[1:])
		if n > 0 && n+2 < len(t) && t[n+1] == ':' && t[n+2] == ' ' {
			off, t = v, t[n+3:]
		}
	}
	if bytes.HasPrefix(t, mergePoint) {
		if b.slim {
			return nil
		}
		mp, err := b.mergePoint(t[len(mergePoint):])
		if err != nil {
			return bad(line, "%v", err)
		}
		mp.Op = len(tr.Ops)
		tr.Points = append(tr.Points, mp)
		return nil
	}
	op := Op{Offset: int32(off), Point: int32(len(tr.Points) - 1)}
	if !b.slim {
		b.flow(t)
	}
	// Only guards name guard descrs.
	if bytes.HasPrefix(t, guardOp) {
		if i := bytes.Index(t, guardDescr); i >= 0 {
			rest := t[i+len(guardDescr):]
			if j := bytes.IndexByte(rest, '>'); j > 0 {
				if g, err := hexAddr(rest[:j]); err == nil {
					op.Guard = g
				}
			}
		}
	}
	if b.slim {
		if op.Guard != 0 && len(tr.Ops) < b.guardRoom {
			tr.Ops = append(tr.Ops, op)
		}
		return nil
	}
	if b.opts.Ops {
		tr.Text = append(tr.Text, string(t))
	}
	tr.Ops = append(tr.Ops, op)
	return nil
}

// flow notes where an operation lets control go: a label's and a jump's
// TargetToken(N), a call_assembler's descr=<LoopN>. Calls are the text
// after "= " ("p72 = call_assembler_r(p48, p33, descr=<Loop1>)").
func (b *builder) flow(t []byte) {
	tr := b.trace
	switch {
	case bytes.HasPrefix(t, labelOp), bytes.HasPrefix(t, jumpOp):
		i := bytes.Index(t, targetToken)
		if i < 0 {
			return
		}
		v, n := decDigits64(t[i+len(targetToken):])
		if n == 0 {
			return
		}
		if t[0] == 'l' {
			if len(tr.Labels) < maxLabels {
				tr.Labels = append(tr.Labels, v)
			}
		} else {
			tr.Jump = v
		}
	default:
		_, call, ok := bytes.Cut(t, []byte(" = "))
		if !ok {
			call = t
		}
		if !bytes.HasPrefix(call, callAssembler) {
			return
		}
		i := bytes.Index(call, loopDescr)
		if i < 0 {
			return
		}
		if v, n := decDigits(call[i+len(loopDescr):]); n > 0 && len(tr.Calls) < maxLabels && !slices.Contains(tr.Calls, v) {
			tr.Calls = append(tr.Calls, v)
		}
	}
}

// maxLabels bounds a trace's labels and calls: PyPy's have a few.
const maxLabels = 1024

// decDigits64 parses the decimal digits t starts with (at most 19).
func decDigits64(t []byte) (v uint64, n int) {
	for ; n < len(t) && n < 19 && t[n] >= '0' && t[n] <= '9'; n++ {
		v = v*10 + uint64(t[n]-'0')
	}
	return v, n
}

// traceHeader parses "N (name) : kind with K ops" (the name is optional).
func (b *builder) traceHeader(t []byte, line int64) error {
	tr := b.trace
	ns, rest, _ := bytes.Cut(t, []byte(" "))
	n, err := strconv.Atoi(string(ns))
	if err != nil {
		return bad(line, "a loop trace header with a bad loop number")
	}
	tr.Loop = n
	if len(rest) > 0 && rest[0] == '(' {
		i := bytes.LastIndex(rest, []byte(") : "))
		if i < 0 {
			return bad(line, "a loop trace header whose name does not end")
		}
		if !b.slim {
			tr.Name = b.intern(string(rest[1:i]))
		}
		rest = rest[i+2:]
	}
	rest = bytes.TrimPrefix(rest, []byte(": "))
	kind, _, _ := bytes.Cut(rest, []byte(" with "))
	tr.Kind = "loop"
	if len(kind) > 0 && !b.slim {
		tr.Kind = b.intern(string(kind))
	}
	tr.NumOps = opCount(rest)
	b.reserve()
	return nil
}

// reserve sizes the trace's operations by its header's count, bounded,
// since a log may say anything.
func (b *builder) reserve() {
	tr := b.trace
	if b.slim {
		return
	}
	n := min(tr.NumOps, 1<<10)
	tr.Ops = make([]Op, 0, n)
	tr.Points = make([]MergePoint, 0, n/2)
	if b.opts.Ops {
		tr.Text = make([]string, 0, n)
	}
}

// opCount returns K of "... with K ops", or 0.
func opCount(t []byte) int {
	_, after, ok := bytes.Cut(t, []byte("with "))
	if !ok {
		return 0
	}
	v, n := decDigits(after)
	if n == 0 {
		return 0
	}
	return v
}

// mergePoint parses "depth, call_id, 'location')".
func (b *builder) mergePoint(t []byte) (MergePoint, error) {
	ds, rest, ok1 := bytes.Cut(t, []byte(", "))
	cs, rest, ok2 := bytes.Cut(rest, []byte(", "))
	d, err1 := strconv.Atoi(string(ds))
	c, err2 := strconv.Atoi(string(cs))
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(rest) < 3 || rest[0] != '\'' || !bytes.HasSuffix(rest, []byte("')")) {
		return MergePoint{}, fmt.Errorf("a debug_merge_point not in the form (depth, call_id, 'location')")
	}
	return MergePoint{Depth: d, CallID: c, Loc: b.location(rest[1 : len(rest)-2])}, nil
}

// location parses a merge point's location once for all the traces that
// repeat it and returns its index in Log.Locations.
func (b *builder) location(t []byte) int {
	if i, ok := b.locs[string(t)]; ok {
		return i
	}
	i := len(b.log.Locations)
	b.log.Locations = append(b.log.Locations, ParseLocation(string(t), b.intern))
	if len(b.locs) < maxLocations {
		b.locs[string(t)] = i
	}
	return i
}

// decDigits parses the decimal digits t starts with (at most 9).
func decDigits(t []byte) (v, n int) {
	for ; n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9'; n++ {
		v = v*10 + int(t[n]-'0')
	}
	return v, n
}

func (b *builder) commitTrace() {
	tr := *b.trace
	if tr.Kind == "" {
		return // no header: a log of section lines only (PYPYLOG=FILE)
	}
	i := len(b.log.Traces)
	var code int
	var ok bool
	if tr.Bridge {
		code, ok = b.bridges[tr.Guard]
	} else {
		code, ok = b.loops[tr.Loop]
	}
	if ok && b.log.Codes[code].Trace < 0 {
		tr.Code = code
		b.log.Codes[code].Trace = i
	}
	for _, op := range tr.Ops {
		if op.Guard != 0 {
			if _, ok := b.guards[op.Guard]; !ok && b.slim {
				if b.guardRoom == 0 {
					continue
				}
				b.guardRoom--
			}
			b.guards[op.Guard] = i
		}
	}
	if b.slim {
		// Naming needs of a trace only its code: its guards are in
		// b.guards.
		tr = Trace{Bridge: tr.Bridge, Loop: tr.Loop, Guard: tr.Guard, Code: tr.Code, Time: tr.Time, Line: tr.Line}
	}
	b.log.Traces = append(grow(b.log.Traces), tr)
}

// grow doubles a full slice: append grows big slices by a quarter, which
// copies a log's many large Code and Trace values over and over.
func grow[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(len(s), 64))
}

// Root returns the index in l.Codes of the loop that code i (a loop or
// a bridge) belongs to, following bridges to the traces whose guards they
// leave; false when a bridge's chain leaves the log.
func (l *Log) Root(i int) (int, bool) {
	for range len(l.Codes) + 1 {
		if i < 0 || i >= len(l.Codes) {
			return 0, false
		}
		c := &l.Codes[i]
		if !c.Bridge {
			return i, true
		}
		if c.Parent < 0 || c.Parent >= len(l.Traces) {
			return 0, false
		}
		i = l.Traces[c.Parent].Code
	}
	return 0, false
}

// Names names every code, as reports show them: a loop by its Python function and number,
// "f [loop 3]"; a bridge by the loop it belongs to and its place among
// that loop's bridges, "f [bridge 2 of loop 3]"; a bridge whose loop the log
// does not say (no jit-log-opt) as PyPy does, "bridge out of guard 0x...".
func (l *Log) Names() []string {
	names := make([]string, len(l.Codes))
	var n namer
	for i := range l.Codes {
		names[i] = n.name(l, i)
	}
	return names
}

// namer names codes in log order, counting each loop's bridges.
type namer struct {
	bridges map[int]int // root code -> bridges seen
}

// name names code i, the codes before it named already. A code's name
// depends only on the codes and traces before it (the trace whose guard
// a bridge leaves is logged before the bridge), so a log named as it is
// read (Follower) gets the names of the whole log.
func (n *namer) name(l *Log, i int) string {
	c := &l.Codes[i]
	if !c.Bridge {
		fn := c.Loc.Func
		if fn == "" {
			// compile_tmp_callback's stubs have no name.
			fn = "call to the interpreter"
		}
		return fmt.Sprintf("%s [loop %d]", fn, c.Loop)
	}
	root, ok := l.Root(i)
	if !ok {
		return fmt.Sprintf("bridge out of guard %#x", c.Guard)
	}
	if n.bridges == nil {
		n.bridges = map[int]int{}
	}
	n.bridges[root]++
	r := &l.Codes[root]
	return fmt.Sprintf("%s [bridge %d of loop %d]", r.Loc.Func, n.bridges[root], r.Loop)
}

// Inner reports whether code i is an inner bridge, one that jumps back
// to the loop it leaves (seed 002): its trace's final jump goes to a label
// of its root loop's trace.
func (l *Log) Inner(i int) bool {
	if i < 0 || i >= len(l.Codes) || !l.Codes[i].Bridge || l.Codes[i].Trace < 0 {
		return false
	}
	jump := l.Traces[l.Codes[i].Trace].Jump
	root, ok := l.Root(i)
	if !ok || jump == 0 || l.Codes[root].Trace < 0 {
		return false
	}
	return slices.Contains(l.Traces[l.Codes[root].Trace].Labels, jump)
}

// PositionAt returns the merge point that the machine code at off (bytes
// from the code's Block) was generated for: that of the last operation
// starting at or before off. False before the first merge point.
func (t *Trace) PositionAt(off int) (MergePoint, bool) {
	// Operations are logged in code order; those without an offset
	// generated no code.
	for i := len(t.Ops) - 1; i >= 0; i-- {
		if op := t.Ops[i]; op.Offset >= 0 && int(op.Offset) <= off {
			if op.Point < 0 || int(op.Point) >= len(t.Points) {
				return MergePoint{}, false
			}
			return t.Points[op.Point], true
		}
	}
	return MergePoint{}, false
}

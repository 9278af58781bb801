package pypylog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Kind is the kind of an Event.
type Kind uint8

const (
	// Start is a section opening: "[TICKS] {name".
	Start Kind = iota + 1
	// End is a section closing: "[TICKS] name}".
	End
	// Text is any other line: what PyPy printed inside (or outside) a
	// section.
	Text
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "start"
	case End:
		return "end"
	case Text:
		return "text"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one line of a log. The Reader reuses it, and Text points into
// the Reader's buffer: both are valid until the next call to Next.
type Event struct {
	Kind Kind
	// Line is the line's number, from 1.
	Line int64
	// Time is the timestamp of a Start or End: TSC ticks on x86-64.
	Time uint64
	// Thread is the "N# " prefix newer PyPys put before section lines,
	// -1 where there is none (PyPy 7.3.11). A Text line belongs to the
	// thread of the last section line.
	Thread int
	// Section names the section that starts or ends, or, for Text, the
	// innermost open section ("" outside any).
	Section string
	// Depth is the depth of the section that starts or ends (1 at the top
	// level) or, for Text, how many sections are open around the line.
	Depth int
	// Text is a Text line without its newline.
	Text []byte
}

// Limits on what a Reader accepts. PyPy nests sections at most 63 deep
// (a bit per level in a machine word) and names them with short
// identifiers; a line of more than MaxLine bytes is not a log's. Its
// threads open sections one at a time, under the GIL, and a section left
// open while others run is a thread's between two GC or JIT steps: a log
// with sections open in more than MaxThreads threads at once is not a
// PyPy's.
const (
	MaxLine    = 64 << 20
	MaxDepth   = 64
	MaxName    = 128
	MaxThreads = 4096
)

// ErrFormat is wrapped by every error about a malformed log.
var ErrFormat = errors.New("malformed PYPYLOG")

// A Reader's buffer starts at firstBuf and grows to bufSize while reads
// fill it: big reads keep the line scan at memory speed on a big log, and
// a small one (an embedded copy, a fuzz input) costs no MiB to clear.
const (
	firstBuf = 64 << 10
	bufSize  = 1 << 20
)

// internLimit bounds the distinct section names a Reader keeps one copy
// of; past it names are allocated per line, which only a hostile log pays.
const internLimit = 1024

type open struct {
	name string
	line int64
}

// stack is one thread's open sections. A Reader keeps the stacks of the
// threads with sections open, by thread (PyPy numbers its threads as
// they start, so a long run has many): a thread's stack goes when its
// last section ends.
type stack struct {
	thread int
	open   []open
}

// Reader reads a PYPYLOG stream event by event, in bounded memory, as
// Scanner does: for r.Next() { e := r.Event() ... }; r.Err().
type Reader struct {
	r       io.Reader
	buf     []byte
	pos, n  int  // unread bytes are buf[pos:n]
	scanned int  // buf[pos:scanned] is known to hold no newline
	eof     bool // r has no more bytes
	line    int64
	ev      Event
	err     error
	done    bool

	stacks   map[int]*stack
	cur      *stack // the thread of the last section line
	names    map[string]string
	warnings []string
	cut      bool
	first    uint64
	last     uint64
	stamped  bool
	full     bool // the last read filled the buffer: the log is big
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: make([]byte, firstBuf), stacks: map[int]*stack{}, cur: &stack{thread: -1}, names: map[string]string{}}
}

// Event returns the event Next read.
func (r *Reader) Event() *Event { return &r.ev }

// Err returns the error that stopped Next, nil at the end of the log. A
// log that ends mid-line or inside sections is not an error: see
// Warnings.
func (r *Reader) Err() error { return r.err }

// Warnings says what the end of the log lacked: a last line cut short,
// sections never closed. A program killed while logging, or still
// running, leaves such a log; everything before the cut was read.
func (r *Reader) Warnings() []string { return r.warnings }

// Cut reports whether the log ended mid-line or inside open sections.
func (r *Reader) Cut() bool { return r.cut }

// Lines returns the number of lines read so far.
func (r *Reader) Lines() int64 { return r.line }

// Span returns the timestamps of the first and last section lines read,
// and whether there were any.
func (r *Reader) Span() (first, last uint64, ok bool) { return r.first, r.last, r.stamped }

// Next reads the next event, reporting false at the end of the log or on
// an error.
func (r *Reader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	for {
		if i := bytes.IndexByte(r.buf[r.scanned:r.n], '\n'); i >= 0 {
			end := r.scanned + i
			line := r.buf[r.pos:end]
			r.pos, r.scanned = end+1, end+1
			r.line++
			return r.parse(line)
		}
		r.scanned = r.n
		if r.eof {
			r.finish()
			return false
		}
		if err := r.fill(); err != nil {
			r.err = err
			return false
		}
	}
}

// fill reads more bytes, first moving the unread ones to the front and
// growing the buffer when one line fills it.
func (r *Reader) fill() error {
	if r.pos > 0 {
		k := copy(r.buf, r.buf[r.pos:r.n])
		r.scanned -= r.pos
		r.pos, r.n = 0, k
	}
	if r.n == len(r.buf) {
		if len(r.buf) > MaxLine {
			return fmt.Errorf("pypylog: line %d: longer than %d bytes: %w", r.line+1, MaxLine, ErrFormat)
		}
		nb := make([]byte, min(2*len(r.buf), MaxLine+1))
		copy(nb, r.buf[:r.n])
		r.buf = nb
	}
	if r.n > 0 && len(r.buf) < bufSize && r.full {
		nb := make([]byte, 2*len(r.buf))
		copy(nb, r.buf[:r.n])
		r.buf = nb
	}
	k, err := r.r.Read(r.buf[r.n:])
	r.full = r.n+k == len(r.buf)
	r.n += k
	switch {
	case err == io.EOF:
		r.eof = true
	case err != nil:
		return fmt.Errorf("pypylog: reading line %d: %w", r.line+1, err)
	}
	return nil
}

// finish notes what a cut log lacks.
func (r *Reader) finish() {
	r.done = true
	if r.pos < r.n {
		r.cut = true
		r.warnings = append(r.warnings, fmt.Sprintf("line %d is cut short after %d bytes and is ignored: the program was killed, or is still writing", r.line+1, r.n-r.pos))
	}
	for _, id := range slices.Sorted(maps.Keys(r.stacks)) {
		if s := r.stacks[id]; len(s.open) > 0 {
			r.cut = true
			o := s.open[0]
			r.warnings = append(r.warnings, fmt.Sprintf("the log ends inside %d open sections, the outermost %s from line %d: the program was killed, or is still writing", len(s.open), o.name, o.line))
		}
	}
}

// parse turns one line into r.ev; false means a bad line (r.err).
func (r *Reader) parse(line []byte) bool {
	thread, t, name, kind := marker(line)
	if kind == Text {
		s := r.cur
		r.ev = Event{Kind: Text, Line: r.line, Thread: s.thread, Depth: len(s.open), Text: line}
		if len(s.open) > 0 {
			r.ev.Section = s.open[len(s.open)-1].name
		}
		return true
	}
	if !r.stamped {
		r.first, r.stamped = t, true
	}
	r.last = t
	s := r.stacks[thread]
	if s == nil {
		if kind == End {
			r.err = fmt.Errorf("pypylog: line %d: a section ends, but none is open: %w", r.line, ErrFormat)
			return false
		}
		if len(r.stacks) >= MaxThreads {
			r.err = fmt.Errorf("pypylog: line %d: sections open in more than %d threads: %w", r.line, MaxThreads, ErrFormat)
			return false
		}
		s = &stack{thread: thread}
		r.stacks[thread] = s
	}
	r.cur = s
	switch kind {
	case Start:
		if len(s.open) >= MaxDepth {
			r.err = fmt.Errorf("pypylog: line %d: sections nested more than %d deep: %w", r.line, MaxDepth, ErrFormat)
			return false
		}
		n := r.intern(name)
		s.open = append(s.open, open{name: n, line: r.line})
		r.ev = Event{Kind: Start, Line: r.line, Time: t, Thread: thread, Section: n, Depth: len(s.open)}
	case End:
		top := s.open[len(s.open)-1]
		if top.name != string(name) {
			r.err = fmt.Errorf("pypylog: line %d: a section ends that is not the one open, from line %d: %w", r.line, top.line, ErrFormat)
			return false
		}
		r.ev = Event{Kind: End, Line: r.line, Time: t, Thread: thread, Section: top.name, Depth: len(s.open)}
		s.open = s.open[:len(s.open)-1]
		if len(s.open) == 0 {
			delete(r.stacks, thread)
		}
	}
	return true
}

func (r *Reader) intern(b []byte) string {
	if s, ok := r.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.names) < internLimit {
		r.names[s] = s
	}
	return s
}

// marker parses a section line, "[HEX] {name" or "[HEX] name}", with
// the optional "N# " thread prefix. Anything else is Text: PyPy writes
// section lines only in this form, and text of any shape.
func marker(b []byte) (thread int, t uint64, name []byte, kind Kind) {
	thread = -1
	if len(b) < 5 {
		return 0, 0, nil, Text
	}
	if c := b[0]; c >= '0' && c <= '9' {
		i, n := 0, 0
		for ; i < len(b) && i < 9 && b[i] >= '0' && b[i] <= '9'; i++ {
			n = n*10 + int(b[i]-'0')
		}
		if i+2 >= len(b) || b[i] != '#' || b[i+1] != ' ' {
			return 0, 0, nil, Text
		}
		thread, b = n, b[i+2:]
	}
	if len(b) < 5 || b[0] != '[' {
		return 0, 0, nil, Text
	}
	t, i := hexDigits(b[1:])
	i++
	if i == 1 || i > 17 || i+2 >= len(b) || b[i] != ']' || b[i+1] != ' ' {
		return 0, 0, nil, Text
	}
	rest := b[i+2:]
	switch {
	case rest[0] == '{':
		name, kind = rest[1:], Start
	case rest[len(rest)-1] == '}':
		name, kind = rest[:len(rest)-1], End
	default:
		return 0, 0, nil, Text
	}
	if !validName(name) {
		return 0, 0, nil, Text
	}
	return thread, t, name, kind
}

// hexDigits parses the hexadecimal digits b starts with, at most 17 (one
// more than a timestamp has, so that a longer run is seen), and returns
// their value and count.
func hexDigits(b []byte) (v uint64, n int) {
	for ; n < len(b) && n < 17; n++ {
		c := b[n]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return v, n
		}
		v = v<<4 | uint64(c)
	}
	return v, n
}

// validName accepts what RPython names sections with: short, printable,
// no spaces or braces.
func validName(b []byte) bool {
	if len(b) == 0 || len(b) > MaxName {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '{' || c == '}' {
			return false
		}
	}
	return true
}

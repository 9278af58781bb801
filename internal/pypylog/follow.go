package pypylog

import (
	"bytes"
	"unsafe"
)

// MaxFollowGuards bounds the guards a Follower keeps (about 40 bytes
// each): a trace has tens of them, so this is thousands of loops'. The
// bridges out of guards past it are named as PyPy names them, "bridge
// out of guard 0x...", for their loop is not known.
const MaxFollowGuards = 1 << 18

// Follower reads a log its program is still writing, a piece at a time,
// as the daemon follows it: Feed takes the log's next bytes, whole lines
// of them, and Codes returns the loops and bridges assembled since, named
// as Log.Names names them in the whole log. It parses as Read does, with
// the same Reader and the same handling of each section, but keeps only
// what the names need: the codes, the traces without their operations,
// merge points, labels or calls, and the guards (at most MaxFollowGuards)
// whose bridges belong to a trace's loop. Held says how much that is; the
// caller bounds it.
type Follower struct {
	rd    Reader
	b     builder
	namer namer
	done  int // the codes Codes returned
	names []string
}

// NewFollower returns a Follower at the start of a log.
func NewFollower() *Follower {
	return &Follower{
		rd: Reader{stacks: map[int]*stack{}, cur: &stack{thread: -1}, names: map[string]string{}},
		b: builder{
			slim:      true,
			guardRoom: MaxFollowGuards,
			log:       &Log{},
			strs:      map[string]string{},
			loops:     map[int]int{},
			bridges:   map[uint64]int{},
			guards:    map[uint64]int{},
			locs:      map[string]int{},
		},
	}
}

// Feed reads the whole lines at the start of p, the log's bytes after
// those it read before, and returns how many bytes they take: a last line
// without its newline is left for the next call, with what followed it.
// An error (a malformed log, as Read's) stops the Follower; the lines
// before it were read.
func (f *Follower) Feed(p []byte) (int, error) {
	used := 0
	for {
		i := bytes.IndexByte(p[used:], '\n')
		if i < 0 {
			return used, nil
		}
		line := p[used : used+i]
		used += i + 1
		f.rd.line++
		if !f.rd.parse(line) {
			return used, f.rd.err
		}
		if err := f.b.event(&f.rd.ev); err != nil {
			return used, err
		}
	}
}

// SkipLine counts a line the caller did not feed (one longer than it
// reads at once): PyPy writes none, and only text lines can be long.
func (f *Follower) SkipLine() { f.rd.line++ }

// Lines returns the number of lines read and skipped.
func (f *Follower) Lines() int64 { return f.rd.line }

// Codes returns the loops and bridges whose jit-backend-addr sections
// ended since the last call, in log order, and their names; both are
// valid until the next Feed.
func (f *Follower) Codes() ([]Code, []string) {
	l := f.b.log
	f.names = f.names[:0]
	for i := f.done; i < len(l.Codes); i++ {
		f.names = append(f.names, f.namer.name(l, i))
	}
	codes := l.Codes[f.done:]
	f.done = len(l.Codes)
	return codes, f.names
}

// HeldUnit is the bytes of memory a unit of Held stands for: about what
// an entry of the daemon's code table takes, whose bound counts both.
const HeldUnit = 100

// Sizes of what a Follower keeps, as Go lays it out: an entry of a small
// map (key, value, and its share of buckets and their spare room), a
// section open.
const (
	mapEntry  = 48
	codeSize  = int(unsafe.Sizeof(Code{}))
	traceSize = int(unsafe.Sizeof(Trace{}))
	openSize  = int(unsafe.Sizeof(open{}))
	stackSize = int(unsafe.Sizeof(stack{})) + mapEntry
)

// Held says how much memory the Follower keeps, in units of HeldUnit
// bytes: its codes and traces (the slices' room, which doubles as they
// grow), the guards, loops and bridges by which bridges are named, the
// strings of loops' names, the names Codes gave last, and the sections
// open. The caller bounds it.
func (f *Follower) Held() int {
	b := &f.b
	n := cap(b.log.Codes)*codeSize + cap(b.log.Traces)*traceSize +
		(len(b.guards)+len(b.loops)+len(b.bridges)+len(f.namer.bridges))*mapEntry +
		b.strBytes + cap(f.names)*16
	for _, s := range f.names[:cap(f.names)] {
		n += len(s) // the last names Codes gave, kept until it gives more
	}
	for _, s := range f.rd.stacks {
		n += stackSize + cap(s.open)*openSize
	}
	return (n + HeldUnit - 1) / HeldUnit
}

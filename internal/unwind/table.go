package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"unsafe"
)

// Table is an image's call frame information compiled once into rows
// sorted by address, as the OpenTelemetry eBPF profiler compiles
// .eh_frame into "stack deltas": finding a caller's registers is then a
// binary search and the rules of one row, where evaluating the CFI at
// each step (as delve's pkg/dwarf/frame does) runs a CFA program from
// its FDE's start every time. Addresses are those of the image's ELF
// file (or of JIT code, for a JIT's unwinding information). A Table is
// read-only once built, and safe for concurrent use.
type Table struct {
	addrs []uint64 // row i holds from addrs[i] to addrs[i+1]
	sets  []uint32 // its ruleset, or noRules where no FDE covers it
	rules []ruleset
	exprs []byte // expressions: a u16 length, then the bytes
}

// noRules marks a row no FDE covers.
const noRules = ^uint32(0)

// maxRows bounds a table: 16 million rows is a few times the largest
// binaries' (a browser's) and 200 MB of memory.
const maxRows = 1 << 24

// errTooBig is returned for call frame data that would make a table
// past maxRows.
var errTooBig = errors.New("call frame information too large")

// NumRows is the number of rows, for tests and statistics.
func (t *Table) NumRows() int { return len(t.addrs) }

// Size is the table's memory in bytes.
func (t *Table) Size() int64 {
	return int64(cap(t.addrs))*8 + int64(cap(t.sets))*4 + int64(cap(t.rules))*int64(unsafe.Sizeof(ruleset{})) + int64(cap(t.exprs))
}

// Build compiles the call frame information of an image: its .eh_frame
// and, for code that .eh_frame does not cover, its .debug_frame (which
// a separate debug file may hold instead). Either may be empty. An FDE
// that cannot be read is left out (its code then has no rows) and the
// first such error is returned with the table, which is still good for
// the rest.
func Build(ehFrame, debugFrame Section) (*Table, error) {
	b := &builder{index: map[rulesetKey]uint32{}}
	var errs []error
	var fdes []fdeOf
	for i, sec := range []Section{ehFrame, debugFrame} {
		if len(sec.Data) == 0 {
			continue
		}
		fs, err := parseFrames(sec, i == 0)
		if err != nil {
			errs = append(errs, err)
		}
		for j := range fs {
			fdes = append(fdes, fdeOf{&fs[j], sec, i == 0})
		}
	}
	// By start; .eh_frame's first where both cover an address, since
	// that is what the code itself unwinds with.
	sort.SliceStable(fdes, func(i, j int) bool {
		if fdes[i].start != fdes[j].start {
			return fdes[i].start < fdes[j].start
		}
		return fdes[i].eh && !fdes[j].eh
	})
	var end uint64 // of the last FDE added
	for _, f := range fdes {
		if f.start < end && !f.eh {
			continue // .debug_frame under .eh_frame's rows
		}
		if err := b.add(f); err != nil {
			if errors.Is(err, errTooBig) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		end = max(end, f.end)
	}
	return &b.t, errors.Join(firstOf(errs)...)
}

func firstOf(errs []error) []error {
	if len(errs) > 1 {
		return errs[:1]
	}
	return errs
}

// fdeOf is an FDE and the section it came from.
type fdeOf struct {
	*fde
	sec Section
	eh  bool
}

type builder struct {
	t     Table
	index map[rulesetKey]uint32
	m     machine
}

// rulesetKey is a ruleset packed in words, which a map hashes as one
// block of memory, where it hashes a ruleset field by field (which took
// most of a build).
type rulesetKey [numRegs + 1]uint64

func (rs *ruleset) key() rulesetKey {
	var k rulesetKey
	pack := func(r rule) uint64 { return uint64(r.kind)<<40 | uint64(r.reg)<<32 | uint64(uint32(r.off)) }
	k[0] = pack(rs.cfa)
	if rs.signal {
		k[0] |= 1 << 48
	}
	for i, r := range rs.regs {
		k[i+1] = pack(r)
	}
	return k
}

// add appends the rows of f, which starts at or after every earlier
// FDE's start; where the earlier ones reach past f.start, f wins.
func (b *builder) add(f fdeOf) error {
	t := &b.t
	// Rows at or past f.start, of an earlier FDE that overlaps f, go.
	n := len(t.addrs)
	for n > 0 && t.addrs[n-1] >= f.start {
		n--
	}
	t.addrs, t.sets = t.addrs[:n], t.sets[:n]
	mark := len(t.addrs)
	b.m = machine{sec: f.sec, eh: f.eh, exprs: &t.exprs, stack: b.m.stack}
	err := b.m.run(f.fde, func(addr uint64, rs *ruleset) {
		k := rs.key()
		id, ok := b.index[k]
		if !ok {
			id = uint32(len(t.rules))
			t.rules = append(t.rules, *rs)
			t.rules[id].setLive()
			b.index[k] = id
		}
		if k := len(t.addrs); k > mark && t.sets[k-1] == id {
			return // the same rules as the row before
		}
		t.addrs = append(t.addrs, addr)
		t.sets = append(t.sets, id)
	})
	if err != nil {
		// The FDE's rows are not to be trusted: none of them. (Its
		// rulesets and expressions stay: others may share them.)
		t.addrs, t.sets = t.addrs[:mark], t.sets[:mark]
		return err
	}
	if len(t.addrs) > maxRows {
		return errTooBig
	}
	t.addrs = append(t.addrs, f.end)
	t.sets = append(t.sets, noRules)
	return nil
}

// lookup returns the rules at addr, or nil where no FDE covers it.
func (t *Table) lookup(addr uint64) *ruleset {
	// The row of the last address at or below addr.
	i, found := slices.BinarySearch(t.addrs, addr)
	if !found {
		i--
	}
	if i < 0 || t.sets[i] == noRules {
		return nil
	}
	return &t.rules[t.sets[i]]
}

// expr returns expression at of the table's pool.
func (t *Table) expr(at int32) []byte {
	i := int(at)
	if i < 0 || i+2 > len(t.exprs) {
		return nil
	}
	n := int(binary.LittleEndian.Uint16(t.exprs[i:]))
	if i+2+n > len(t.exprs) {
		return nil
	}
	return t.exprs[i+2 : i+2+n]
}

// The encoding of a Table for the cache (cache.go): tableMagic, then
// the numbers of rows, rulesets and expression bytes (u32 each), the
// rows (address u64, ruleset u32), the rulesets (a flag byte, then the
// CFA's and each column's rule as kind, register u8 and offset i32),
// and the expressions. Little-endian throughout.
const tableMagic = "jitprof unwind table 1\n"

const ruleSize = 6
const rulesetSize = 1 + ruleSize*(numRegs+1)

// MarshalBinary encodes t for the cache.
func (t *Table) MarshalBinary() ([]byte, error) {
	le := binary.LittleEndian
	b := make([]byte, 0, len(tableMagic)+12+12*len(t.addrs)+rulesetSize*len(t.rules)+len(t.exprs))
	b = append(b, tableMagic...)
	b = le.AppendUint32(b, uint32(len(t.addrs)))
	b = le.AppendUint32(b, uint32(len(t.rules)))
	b = le.AppendUint32(b, uint32(len(t.exprs)))
	for i, a := range t.addrs {
		b = le.AppendUint64(b, a)
		b = le.AppendUint32(b, t.sets[i])
	}
	putRule := func(r rule) {
		b = append(b, byte(r.kind), r.reg)
		b = le.AppendUint32(b, uint32(r.off))
	}
	for _, rs := range t.rules {
		flag := byte(0)
		if rs.signal {
			flag = 1
		}
		b = append(b, flag)
		putRule(rs.cfa)
		for _, r := range rs.regs {
			putRule(r)
		}
	}
	return append(b, t.exprs...), nil
}

// UnmarshalBinary decodes a table MarshalBinary encoded, checking all of
// it: rows in order, rulesets and expressions where they point, rules
// of known kinds. A cache file is jitprof's own, but a damaged one must
// not make an unwinder read outside a table.
func (t *Table) UnmarshalBinary(data []byte) error {
	bad := func(what string) error { return fmt.Errorf("unwind table: %w: %s", errCFI, what) }
	rest, ok := cutPrefix(data, tableMagic)
	if !ok || len(rest) < 12 {
		return bad("no header")
	}
	le := binary.LittleEndian
	nrows, nsets, nexpr := uint64(le.Uint32(rest)), uint64(le.Uint32(rest[4:])), uint64(le.Uint32(rest[8:]))
	rest = rest[12:]
	if uint64(len(rest)) != nrows*12+nsets*rulesetSize+nexpr {
		return bad("sizes do not add up")
	}
	*t = Table{
		addrs: make([]uint64, nrows), sets: make([]uint32, nrows),
		rules: make([]ruleset, nsets), exprs: slices.Clone(rest[nrows*12+nsets*rulesetSize:]),
	}
	for i := range t.addrs {
		t.addrs[i], t.sets[i] = le.Uint64(rest[12*i:]), le.Uint32(rest[12*i+8:])
		if i > 0 && t.addrs[i] <= t.addrs[i-1] || t.sets[i] != noRules && uint64(t.sets[i]) >= nsets {
			return bad("rows out of order")
		}
	}
	rest = rest[nrows*12:]
	getRule := func(b []byte, cfa bool) (rule, bool) {
		r := rule{kind: ruleKind(b[0]), reg: b[1], off: int32(le.Uint32(b[2:]))}
		switch {
		case r.kind == cfaReg || r.kind == cfaExpr:
			if !cfa {
				return r, false
			}
		case r.kind == ruleUndefined && cfa:
			// A CIE that never defines the CFA: a row that stops.
		default:
			if cfa || r.kind > ruleValExpr {
				return r, false
			}
		}
		if r.reg >= numRegs {
			return r, false
		}
		if (r.kind == cfaExpr || r.kind == ruleExpr || r.kind == ruleValExpr) && t.expr(r.off) == nil {
			return r, false
		}
		return r, true
	}
	for i := range t.rules {
		b := rest[rulesetSize*i:]
		rs := &t.rules[i]
		rs.signal = b[0] == 1
		var ok bool
		if rs.cfa, ok = getRule(b[1:], true); !ok {
			return bad("bad CFA rule")
		}
		for j := range rs.regs {
			if rs.regs[j], ok = getRule(b[1+ruleSize*(j+1):], false); !ok {
				return bad("bad register rule")
			}
		}
		rs.setLive()
	}
	return nil
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return nil, false
	}
	return b[len(p):], true
}

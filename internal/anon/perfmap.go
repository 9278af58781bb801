package anon

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/perfmap"
)

// perfmapHandler reads /tmp/perf-PID.map, the map V8's --perf-basic-prof,
// the JVM's perf-map-agent, .NET and LuaJIT write. A perf map has no
// times, so where code was re-generated under another name the resolver
// reports every name (Symbol.Ambiguous) instead of picking one.
type perfmapHandler struct{}

func (perfmapHandler) Name() string { return "perfmap" }

// PerfmapSeq is the kind of the data the daemon keeps of a perf map in
// its session: a jitdump of every range the map gained or changed, each
// with the sequence number the daemon gave it (its code_index), which is
// what the process's sample files keep.
const PerfmapSeq = "perfmap-seq"

func (perfmapHandler) Claim(p *Process) (Resolver, error) {
	for path, kind := range p.Kinds {
		if kind != PerfmapSeq {
			continue
		}
		b := p.Embedded[path]
		d := &data{path: path, embedded: true, r: bytes.NewReader(b), size: int64(len(b))}
		m, _, err := readJitdump(d, p, false)
		if err != nil {
			return nil, err
		}
		return &mapResolver{m: m, source: "perfmap " + strings.TrimSuffix(path, ".seq") + " (snapshots the daemon numbered)"}, nil
	}
	d, err := findData(p, filePaths(p, func(pid int) string { return "/tmp/perf-" + itoa(pid) + ".map" }))
	if err != nil {
		return nil, err
	}
	defer d.close()
	// Lenient: the JIT may still be appending, leaving a torn last line.
	m, err := perfmap.Options{Lenient: true}.Parse(d.reader())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	// Those that name no address (V8 writes some) are left out.
	syms := slices.DeleteFunc(m.Symbols, func(s perfmap.Symbol) bool { return s.Size == 0 })
	t, line, err := newPerfmapTable(syms, addrNamed(syms))
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", d.path, line, err)
	}
	src := d.describe("perfmap")
	if m.BadLines > 0 {
		src += fmt.Sprintf(", %d bad lines skipped, first: %v", m.BadLines, m.Errors[0])
	}
	mr := &mapResolver{m: t, source: src, timeless: true}
	// What was skipped, a layer read alone would not say; but a last
	// line the JIT was writing is read with the lines after it.
	if m.BadLines > 1 || m.BadLines == 1 && !errors.Is(m.Errors[0], perfmap.ErrTorn) {
		return mr, nil
	}
	return growable(mr, d, syms), nil
}

// addrNamed returns the names a perf map's lines (none of size 0) give
// code at several addresses. Each such copy would make report rows that
// read the same (a JVM's tiers of one method, a function V8 optimized
// again), so each is named with its address, as the map tells them
// apart. Not with a generation number: a perf map has no times, and its
// order need not be the order of compiles (the JVM's exit dump lists
// its code cache).
func addrNamed(syms []perfmap.Symbol) map[string]bool {
	first, several := map[string]uint64{}, map[string]bool{}
	for _, s := range syms {
		if start, ok := first[s.Name]; !ok {
			first[s.Name] = s.Start
		} else if start != s.Start {
			several[s.Name] = true
		}
	}
	return several
}

package anon

import (
	"fmt"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/perfmap"
)

func init() { Register(perfmapHandler{}) }

// perfmapHandler reads /tmp/perf-PID.map, the map V8's --perf-basic-prof,
// the JVM's perf-map-agent, .NET and LuaJIT write. A perf map has no
// times, so where code was re-generated under another name the resolver
// reports every name (Symbol.Ambiguous) instead of picking one.
type perfmapHandler struct{}

func (perfmapHandler) Name() string { return "perfmap" }

func (perfmapHandler) Claim(p *Process) (Resolver, error) {
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
	b := codemap.NewBuilder()
	for _, s := range m.Symbols {
		if s.Size == 0 {
			continue // names no address; V8 writes some
		}
		if err := b.Load(0, s.Start, s.Size, s.Name, 0, nil); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", d.path, s.Line, err)
		}
	}
	src := d.describe("perfmap")
	if m.BadLines > 0 {
		src += fmt.Sprintf(", %d bad lines skipped, first: %v", m.BadLines, m.Errors[0])
	}
	return &mapResolver{m: b.Build(), source: src, timeless: true}, nil
}

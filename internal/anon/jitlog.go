package anon

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/jitlog"
)

// jitlogHandler reads jitprof's own JIT database, anon.PID (package
// jitlog). Every generation of code has a sequence number, which is the
// codemap's generation, so the resolver also serves lookups by sequence
// number (SeqResolver) for the sample database.
type jitlogHandler struct{}

func (jitlogHandler) Name() string { return "jitlog" }

func jitlogPaths(p *Process) []string {
	// DefaultDir is per user: the report may run as root while the JIT
	// ran as p.UID.
	dirs := []string{jitlog.DefaultDir()}
	if p.UID != trust.UnknownOwner {
		dirs = uniq(append(dirs, fmt.Sprintf("/tmp/jitprof-%d", p.UID)))
	}
	var paths []string
	for _, dir := range dirs {
		paths = append(paths, filePaths(p, func(pid int) string { return jitlog.DatabasePath(dir, pid) })...)
	}
	return uniq(paths)
}

func (jitlogHandler) Claim(p *Process) (Resolver, error) {
	d, err := findData(p, jitlogPaths(p))
	if err != nil {
		return nil, err
	}
	defer d.close()
	r, err := jitlog.NewReader(d.r, d.size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	r.Want(jitlog.CodeKinds...)
	if h := r.Header(); !slices.Contains(pids(p), uint64(h.PID)) {
		return nil, fmt.Errorf("%s: written by pid %d, not %d: %w", d.path, h.PID, p.PID, ErrNoData)
	}
	type code struct{ addr, size uint64 }
	live := map[uint64]code{} // seq -> where its code is now
	infos := map[uint64]*codeInfo{}
	b := codemap.NewBuilder()
	for r.Next() {
		switch rec := r.Record().(type) {
		case *jitlog.LoadRecord:
			if rec.Size == 0 {
				continue
			}
			var lt lineTable
			if len(rec.Lines) > 0 {
				t := make(lineTable, 0, len(rec.Lines))
				for _, l := range rec.Lines {
					if int(l.File) < len(rec.Files) {
						t = append(t, lineRow{off: uint64(l.CodeOffset), file: rec.Files[l.File], line: int(l.Line)})
					}
				}
				lt = sortLines(t)
			}
			// Every load gets a payload of its own here: its unwinding
			// information comes in a record after it.
			ci := &codeInfo{lines: lt, code: rec.Code}
			if err := b.Load(rec.Time, rec.Addr, rec.Size, rec.Name, rec.Seq, ci); err != nil {
				return nil, fmt.Errorf("%s: load seq %d: %w", d.path, rec.Seq, err)
			}
			live[rec.Seq] = code{rec.Addr, rec.Size}
			infos[rec.Seq] = ci
		case *jitlog.UnwindRecord:
			if ci, ok := infos[rec.Seq]; ok {
				ci.unwind = unwind.JITTable(rec.EHFrame, live[rec.Seq].size)
			}
		case *jitlog.MoveRecord:
			c, ok := live[rec.Seq]
			if !ok {
				continue // a move of code never loaded names nothing
			}
			if err := b.Move(rec.Time, rec.Seq, rec.OldAddr, rec.NewAddr, c.size); err != nil {
				return nil, fmt.Errorf("%s: move seq %d: %w", d.path, rec.Seq, err)
			}
			live[rec.Seq] = code{rec.NewAddr, c.size}
		case *jitlog.UnloadRecord:
			if c, ok := live[rec.Seq]; ok {
				if err := b.Unload(rec.Time, c.addr, c.size); err != nil {
					return nil, fmt.Errorf("%s: unload seq %d: %w", d.path, rec.Seq, err)
				}
				delete(live, rec.Seq)
			}
		}
	}
	// A torn record is a writer that died mid-record, or one not done
	// yet, which a later look may find whole; the rest is good.
	if err := r.Err(); errors.Is(err, jitlog.ErrTorn) {
		p.Reads.refused()
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	} else {
		p.Reads.until(d.path, r.Offset())
	}
	return &mapResolver{m: b.Build(), source: d.describe("jitlog")}, nil
}

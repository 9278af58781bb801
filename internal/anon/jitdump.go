package anon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/unwind"
)

// jitdumpHandler reads perf's jitdump, jit-PID.dump, which V8's --perf-prof,
// the JVM's perf agent, .NET and wasmtime write. Every CODE_LOAD carries a
// time and a code_index, so a sample resolves to the code live at its
// address at its time, even where code was re-generated at that address.
//
// Times are compared with the samples' times as they are: right when the
// JIT stamps CLOCK_MONOTONIC (V8 does, and perf's JVMTI agent unless told
// otherwise) and the recording uses it too (jitprof record, perf record
// -k mono). With another sample clock the loads are offset from the
// samples and a sample near a re-generation can be charged to the
// neighbouring generation; the handler cannot detect that. A dump stamped
// with an architecture counter (FlagArchTimestamp, the TSC) is resolved
// without times, like a perf map: ambiguous addresses report every name.
type jitdumpHandler struct{}

func (jitdumpHandler) Name() string { return "jitdump" }

var dumpName = regexp.MustCompile(`^jit-[0-9]+\.dump$`)

// jitdumpPaths lists where p's dump may be: first the marker mappings (the
// JIT maps its dump executable so that perf record sees its path), then
// where JITs write it by default.
func jitdumpPaths(p *Process) []string {
	var paths []string
	for _, path := range markerPaths(p) {
		// The kernel names the file as the process sees it.
		if p.Root != "" && p.Root != "/" {
			paths = append(paths, filepath.Join(p.Root, path))
		}
		paths = append(paths, path)
	}
	paths = append(paths, filePaths(p, func(pid int) string { return "/tmp/jit-" + itoa(pid) + ".dump" })...)
	name := func(pid int) string { return "jit-" + itoa(pid) + ".dump" }
	// perf's JVMTI agent writes $JITDUMPDIR/.debug/jit/NAME-jit-DATE/
	// (or under $HOME), so the newest such directory is the likeliest.
	for _, dir := range []string{os.Getenv("JITDUMPDIR"), os.Getenv("HOME")} {
		if dir == "" {
			continue
		}
		paths = append(paths, filepath.Join(dir, name(p.PID)))
		for _, pid := range []int{p.PID, p.NSPID} {
			if pid == 0 {
				continue
			}
			found, _ := filepath.Glob(filepath.Join(dir, ".debug", "jit", "*", name(pid)))
			slices.Reverse(found)
			paths = append(paths, found...)
		}
	}
	return uniq(paths)
}

func (jitdumpHandler) Claim(p *Process) (Resolver, error) {
	d, err := findData(p, jitdumpPaths(p))
	if err != nil {
		return nil, err
	}
	defer d.close()
	m, timeless, err := readJitdump(d, p, true)
	if err != nil {
		return nil, err
	}
	return &mapResolver{m: m, source: d.describe("jitdump"), timeless: timeless}, nil
}

// readJitdump indexes the jitdump of d, keeping each load's code for
// annotate when code: not of the dumps the daemon numbers a perf map's
// or a PyPy log's code in (PerfmapSeq, PyPySeq), which have none, and
// hold zeros where the format wants code bytes.
func readJitdump(d *data, p *Process, code bool) (*codemap.Map, bool, error) {
	r, err := jitdump.NewReader(d.reader())
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", d.path, err)
	}
	h := r.Header()
	if !slices.Contains(pids(p), uint64(h.PID)) {
		// A stale dump of an earlier process that had this pid, or the
		// dump of a process in another pid namespace.
		return nil, false, fmt.Errorf("%s: written by pid %d, not %d: %w", d.path, h.PID, p.PID, ErrNoData)
	}
	b := codemap.NewBuilder()
	// A CODE_DEBUG_INFO precedes the CODE_LOAD of its code, and so does
	// a CODE_UNWINDING_INFO.
	debug := map[uint64]lineTable{}
	var unwinding *jitdump.UnwindingInfo
	for r.Next() {
		switch rec := r.Record().(type) {
		case *jitdump.CodeLoad:
			if rec.CodeSize == 0 {
				continue
			}
			lt := debug[rec.CodeAddr]
			delete(debug, rec.CodeAddr)
			// The reader reuses its buffers; annotate needs the bytes
			// later.
			var bytesOf []byte
			if code {
				bytesOf = bytes.Clone(rec.Code)
			}
			pl := payload(lt, bytesOf)
			if unwinding != nil {
				pl = withUnwind(pl, unwind.JITTable(unwinding.EHFrame(), rec.CodeSize))
				unwinding = nil
			}
			if err := b.Load(rec.Timestamp, rec.CodeAddr, rec.CodeSize, rec.Name, rec.CodeIndex, pl); err != nil {
				return nil, false, fmt.Errorf("%s: CODE_LOAD at offset %d: %w", d.path, rec.Offset, err)
			}
		case *jitdump.CodeMove:
			if rec.CodeSize == 0 {
				continue
			}
			if err := b.Move(rec.Timestamp, rec.CodeIndex, rec.OldCodeAddr, rec.NewCodeAddr, rec.CodeSize); err != nil {
				return nil, false, fmt.Errorf("%s: CODE_MOVE at offset %d: %w", d.path, rec.Offset, err)
			}
		case *jitdump.DebugInfo:
			// A malformed table (rec.Err) names nothing; the load still does.
			var lt lineTable
			for _, e := range rec.Entries {
				if e.Addr >= rec.CodeAddr {
					lt = append(lt, lineRow{off: e.Addr - rec.CodeAddr, file: e.File, line: int(e.Line)})
				}
			}
			if len(lt) > 0 {
				debug[rec.CodeAddr] = sortLines(lt)
			}
		case *jitdump.UnwindingInfo:
			u := *rec
			u.Data = bytes.Clone(rec.Data)
			unwinding = &u
		}
		// CODE_CLOSE ends the JIT's output, not the life of its code.
	}
	// A truncated dump is a JIT still writing or killed: every whole
	// record is good.
	if err := r.Err(); err != nil && !errors.Is(err, jitdump.ErrTruncated) {
		return nil, false, fmt.Errorf("%s: %w", d.path, err)
	}
	return b.Build(), h.Flags&jitdump.FlagArchTimestamp != 0, nil
}

package anon

import (
	"path/filepath"
	"strconv"
	"strings"
)

// A reader that resolves samples as it reads a recording (perfdatasrc's
// one pass of a DWARF recording) claims a process at its first JIT
// address, before the recording has told all of the process's timeline:
// a claim reads the process's command name (as it was last, for the
// image's name and FillLive) and mappings (over the whole recording).
// TimelineKey says which of those the built-in handlers read, so that
// the reader can tell whether a claim made early is the one the whole
// timeline gives: a handler's Claim is a function of the timeline's key,
// the recorder's bundle and the files, so an equal key is an equal claim.

// timelineReader is a handler whose Claim reads no more of a process's
// timeline (Process.Comm and Mappings) than timelineKey writes.
type timelineReader interface {
	timelineKey(p *Process, b *strings.Builder)
}

// TimelineKey returns what hs's Claims read of p's timeline: its command
// name and the mappings the handlers look at (jitdump's marker mappings,
// the JIT memory of a PyPy process). false when a handler does not say:
// an external handler is sent the process's mappings and may read any.
func TimelineKey(hs []Handler, p *Process) (string, bool) {
	var b strings.Builder
	b.WriteString(p.Comm)
	b.WriteByte(0)
	for _, h := range hs {
		tr, ok := h.(timelineReader)
		if !ok {
			return "", false
		}
		tr.timelineKey(p, &b)
	}
	return b.String(), true
}

// ReadsTimelineKnown reports whether TimelineKey says what each of hs
// reads of a process's timeline.
func ReadsTimelineKnown(hs []Handler) bool {
	_, ok := TimelineKey(hs, &Process{})
	return ok
}

// The jitlog handler finds its database by pid and user alone.
func (jitlogHandler) timelineKey(*Process, *strings.Builder) {}

// The perfmap handler finds its map by pid alone.
func (perfmapHandler) timelineKey(*Process, *strings.Builder) {}

// The jitdump handler looks for its dump at the paths of the marker
// mappings first, in order.
func (jitdumpHandler) timelineKey(p *Process, b *strings.Builder) {
	for _, path := range markerPaths(p) {
		b.WriteString("d")
		b.WriteString(path)
		b.WriteByte(0)
	}
}

// The pypy handler claims a process that IsPyPy says runs PyPy, when
// its log's loops lie in the process's JIT memory.
func (*pypyHandler) timelineKey(p *Process, b *strings.Builder) {
	if !p.IsPyPy() {
		b.WriteString("n")
		return
	}
	b.WriteString("p")
	var n [16]byte
	for _, m := range p.Mappings {
		if m.JIT() {
			b.Write(strconv.AppendUint(n[:0], m.Start, 16))
			b.WriteByte('-')
			b.Write(strconv.AppendUint(n[:0], m.End, 16))
			b.WriteByte(',')
		}
	}
}

// markerPaths are the paths of p's jitdump marker mappings, in order:
// the JIT maps its dump executable so that perf record sees its path.
func markerPaths(p *Process) []string {
	var paths []string
	for _, m := range p.Mappings {
		if dumpName.MatchString(filepath.Base(m.Path)) && filepath.IsAbs(m.Path) {
			paths = append(paths, m.Path)
		}
	}
	return paths
}

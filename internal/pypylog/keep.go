package pypylog

import "bytes"

// kept are the sections Read uses; Keep keeps them whole, with whatever
// they nest.
var kept = map[string]bool{
	SectionAddr: true, SectionOptLoop: true, SectionOptBridge: true,
	SectionProfileEnter: true, SectionProfileExit: true,
}

// Keep returns the lines of log b that Read uses: its jit-backend-addr,
// jit-log-opt-loop/-bridge and jit-profile-enter/-exit sections, in order,
// without the rest (the backend dumps, the GC's sections, tracing), which
// is most of a log written with PYPYLOG=:FILE. jitprof record embeds what
// Keep returns. A last line without its newline is dropped, as Read drops
// it. Each thread's sections are followed apart: PyPy's threads write
// their "N# " lines interleaved.
func Keep(b []byte) []byte {
	var out []byte
	depth := map[int]int{} // open sections, by thread, inside a kept one
	cur := -1              // the thread of the last section line
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i+1]
		b = b[i+1:]
		thread, _, name, kind := marker(line[:i])
		if kind == Text {
			if depth[cur] > 0 {
				out = append(out, line...)
			}
			continue
		}
		cur = thread
		d := depth[thread]
		switch {
		case d == 0 && kind == Start && kept[string(name)]:
			depth[thread] = 1
		case d == 0:
			continue
		case kind == Start:
			depth[thread] = d + 1
		case kind == End:
			depth[thread] = d - 1
		}
		out = append(out, line...)
	}
	return out
}

package pypylog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

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
	var out bytes.Buffer
	KeepTo(&out, bytes.NewReader(b))
	return out.Bytes()
}

// maxKeptLine bounds a line KeepTo keeps: PyPy's are short, and a longer
// one is dropped rather than gathered in memory.
const maxKeptLine = 1 << 20

// KeepTo writes what Keep keeps of the log r to w, a line at a time, and
// returns the bytes written: a log of gigabytes is never whole in
// memory. Lines longer than a MiB are dropped.
func KeepTo(w io.Writer, r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	var long []byte        // a line longer than br's buffer, gathered
	tooLong := false       // in a line longer than maxKeptLine
	depth := map[int]int{} // open sections, by thread, inside a kept one
	cur := -1              // the thread of the last section line
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong = tooLong || len(long)+len(line) > maxKeptLine; tooLong {
				long = nil
			} else {
				long = append(long, line...)
			}
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = nil // an unterminated last line is dropped
			}
			return n, err
		}
		if tooLong {
			tooLong = false
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		thread, _, name, kind := marker(line[:len(line)-1])
		if kind == Text {
			if depth[cur] > 0 {
				m, err := w.Write(line)
				if n += int64(m); err != nil {
					return n, err
				}
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
		m, err := w.Write(line)
		if n += int64(m); err != nil {
			return n, err
		}
	}
}

package pypylog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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
// memory. Lines longer than a MiB are dropped. It keeps a count for
// each thread inside a kept section, and only while it is: a log with
// more than MaxThreads threads inside kept sections at once, which Read
// refuses too, is an error wrapping ErrFormat.
func KeepTo(w io.Writer, r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	var long []byte        // a line longer than br's buffer, gathered
	tooLong := false       // in a line longer than maxKeptLine
	depth := map[int]int{} // open sections, by thread, inside a kept one
	cur := -1              // the thread of the last section line
	var line int64         // the line's number, for an error
	for {
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong = tooLong || len(long)+len(text) > maxKeptLine; tooLong {
				long = nil
			} else {
				long = append(long, text...)
			}
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = nil // an unterminated last line is dropped
			}
			return n, err
		}
		line++
		if tooLong {
			tooLong = false
			continue
		}
		if long != nil {
			text, long = append(long, text...), nil
		}
		thread, _, name, kind := marker(text[:len(text)-1])
		if kind == Text {
			if depth[cur] > 0 {
				m, err := w.Write(text)
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
			if len(depth) >= MaxThreads {
				return n, fmt.Errorf("pypylog: line %d: sections open in more than %d threads: %w", line, MaxThreads, ErrFormat)
			}
			depth[thread] = 1
		case d == 0:
			continue
		case kind == Start:
			depth[thread] = d + 1
		case kind == End && d == 1:
			delete(depth, thread) // the thread's kept section ended
		case kind == End:
			depth[thread] = d - 1
		}
		m, err := w.Write(text)
		if n += int64(m); err != nil {
			return n, err
		}
	}
}

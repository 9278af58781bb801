package termtext

import (
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Escape returns s with every byte or character that a terminal could
// act on escaped: C0 control bytes (newline and tab included) and DEL as
// \xNN, C1 controls and Unicode's bidirectional controls as \uNNNN,
// bytes that are not UTF-8 as \xNN. s comes back unchanged, without
// copying, when it has none.
func Escape(s string) string {
	if clean(s, false) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s, false))
}

// clean says whether s has nothing to escape; with layout, newlines and
// tabs are kept.
func clean(s string, layout bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= ' ' && c < 0x7f:
			i++
		case c < utf8.RuneSelf:
			if !layout || c != '\n' && c != '\t' {
				return false
			}
			i++
		default:
			// Not ASCII: decode to tell a plain character from one to
			// escape.
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 || escapedRune(r) {
				return false
			}
			i += n
		}
	}
	return true
}

// escapedRune says whether r, a valid character beyond ASCII, is
// escaped: the C1 controls (U+0080 to U+009F, CSI among them) and the
// bidirectional controls that reorder what a terminal shows.
func escapedRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends s to b as Escape writes it; with layout,
// newlines and tabs are kept.
func appendEscaped(b []byte, s string, layout bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' && !(layout && (c == '\n' || c == '\t')) || c == 0x7f {
				b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
			} else {
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		case escapedRune(r):
			b = append(b, '\\', 'u')
			h := strconv.FormatInt(int64(r), 16)
			for range 4 - len(h) {
				b = append(b, '0')
			}
			b = append(b, h...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// Writer writes text to a terminal, or to what may be shown on one, as
// Escape does, except for the newlines and tabs that lay the text out:
// its writer's own lines, tables and messages pass as they are, with
// whatever control bytes the data in them held escaped. A character cut
// by the end of a Write waits for the rest in the next; Flush writes
// what waits. It is safe for concurrent use, as os.Stderr is.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // the start of a character cut by the end of a Write
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped; it returns len(p) when all of it was written
// or waits for the rest of a character.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := p
	if len(w.held) > 0 {
		data = append(w.held, p...)
		w.held = nil
	}
	cut := len(data) - incomplete(data)
	if err := w.write(data[:cut]); err != nil {
		return 0, err
	}
	w.held = append(w.held, data[cut:]...)
	return len(p), nil
}

// Flush writes a cut character that waits, escaped as bytes that are
// not UTF-8: no Write came to finish it.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held = nil
	return w.write(held)
}

func (w *Writer) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	if !clean(s, true) {
		b = appendEscaped(make([]byte, 0, len(b)+16), s, true)
	}
	_, err := w.w.Write(b)
	return err
}

// incomplete returns how many bytes at the end of b are the start of a
// UTF-8 character that they do not finish.
func incomplete(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if b[i] >= utf8.RuneSelf && !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}

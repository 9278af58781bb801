package perfmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Symbol is one line of a perf map.
type Symbol struct {
	Start uint64
	Size  uint64
	Name  string
	Line  int // 1-based line number in the file it was read from
}

// End returns the first address past the symbol.
func (s Symbol) End() uint64 { return s.Start + s.Size }

// Map is a parsed perf map. Symbols are in file order.
type Map struct {
	Symbols []Symbol

	// Errors holds, in lenient mode, the first Options.MaxErrors bad lines;
	// BadLines counts all of them.
	Errors   []*LineError
	BadLines int
}

// Sentinel errors, wrapped in a *LineError or returned by Parse.
var (
	ErrSyntax         = errors.New("syntax error")
	ErrLineTooLong    = errors.New("line too long")
	ErrTooManyLines   = errors.New("too many symbols")
	ErrTorn           = errors.New("unterminated last line")
	ErrNameHasNewline = errors.New("name contains a newline")
)

// LineError is a problem with one line of a map. Like every error of this
// package it says where and what, never the line's bytes: a map may be
// any file a hostile user put in its place.
type LineError struct {
	Line   int
	Offset int64 // of the line's first byte
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("perfmap: line %d (offset %d): %v", e.Line, e.Offset, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// Defaults for Options fields left zero.
const (
	DefaultMaxLineLen = 4096
	DefaultMaxSymbols = 1 << 22
	DefaultMaxErrors  = 100
)

// Options bound what Parse accepts. The zero value is strict with default
// limits.
type Options struct {
	// MaxLineLen bounds one line in bytes, newline included.
	MaxLineLen int
	// MaxSymbols bounds the number of symbols kept; exceeding it is an error
	// in both modes, so that a hostile file cannot exhaust memory.
	MaxSymbols int
	// Lenient keeps the good lines and records bad ones in Map.Errors
	// instead of failing on the first. Maps are appended to by a live
	// process, so a map read while the JIT runs may end in a torn line.
	Lenient bool
	// MaxErrors bounds Map.Errors in lenient mode.
	MaxErrors int
}

// Parse reads a perf map strictly with default limits.
func Parse(r io.Reader) (*Map, error) { return Options{}.Parse(r) }

// Parse reads a perf map from r.
//
// An unterminated last line is parsed like any other if it is well formed
// (hand-written maps often lack the final newline), and reported as ErrTorn
// if it is not; a name cut short by a torn write cannot be detected.
func (o Options) Parse(r io.Reader) (*Map, error) {
	maxLine := o.MaxLineLen
	if maxLine <= 0 {
		maxLine = DefaultMaxLineLen
	}
	maxSyms := o.MaxSymbols
	if maxSyms <= 0 {
		maxSyms = DefaultMaxSymbols
	}
	maxErrs := o.MaxErrors
	if maxErrs <= 0 {
		maxErrs = DefaultMaxErrors
	}
	// bufio needs at least 16 bytes; a line longer than the buffer comes
	// back as ErrBufferFull, which is how long lines are detected.
	br := bufio.NewReaderSize(r, max(maxLine, 16))
	m := &Map{}
	var off, next int64 // offsets of this line and the next
	bad := func(line int, err error) error {
		le := &LineError{Line: line, Offset: off, Err: err}
		if !o.Lenient {
			return le
		}
		m.BadLines++
		if len(m.Errors) < maxErrs {
			m.Errors = append(m.Errors, le)
		}
		return nil
	}
	for line := 1; ; line++ {
		off = next
		b, err := br.ReadSlice('\n')
		next += int64(len(b))
		switch {
		case err == bufio.ErrBufferFull:
			n, err := skipLine(br)
			next += n
			if err != nil {
				return m, fmt.Errorf("perfmap: line %d (offset %d): %w", line, off, err)
			}
			if err := bad(line, fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, maxLine)); err != nil {
				return nil, err
			}
			continue
		case err == io.EOF:
			if len(b) == 0 {
				return m, nil
			}
		case err != nil:
			return nil, fmt.Errorf("perfmap: line %d (offset %d): %w", line, off, err)
		}
		if len(b) > maxLine {
			if err := bad(line, fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, maxLine)); err != nil {
				return nil, err
			}
			continue
		}
		sym, perr := parseLine(b)
		if perr == errBlank {
			continue
		}
		if perr != nil {
			if err == io.EOF {
				perr = fmt.Errorf("%w: %w", ErrTorn, perr)
			}
			if err := bad(line, perr); err != nil {
				return nil, err
			}
			continue
		}
		if len(m.Symbols) >= maxSyms {
			return nil, &LineError{Line: line, Offset: off, Err: fmt.Errorf("%w (limit %d)", ErrTooManyLines, maxSyms)}
		}
		sym.Line = line
		if len(m.Symbols) == cap(m.Symbols) {
			// Doubled: append grows a large slice a quarter at a
			// time, allocating five times what it keeps, and a perf
			// map is often hundreds of thousands of lines.
			m.Symbols = slices.Grow(m.Symbols, max(len(m.Symbols), 64))
		}
		m.Symbols = append(m.Symbols, sym)
		if err == io.EOF {
			return m, nil
		}
	}
}

// skipLine discards the rest of an over-long line and returns how many
// bytes it discarded.
func skipLine(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		b, err := br.ReadSlice('\n')
		n += int64(len(b))
		switch err {
		case nil, io.EOF:
			return n, nil
		case bufio.ErrBufferFull:
			continue
		default:
			return n, err
		}
	}
}

var errBlank = errors.New("blank line")

// ParseLine parses one line of a map, "START SIZE name", with or without
// its newline, for a reader that follows a map as it grows; ok is false
// for a blank line. A line over DefaultMaxLineLen, its newline counted,
// is ErrLineTooLong.
func ParseLine(line []byte) (sym Symbol, ok bool, err error) {
	if len(bytes.TrimSuffix(line, []byte("\n")))+1 > DefaultMaxLineLen {
		return Symbol{}, false, fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, DefaultMaxLineLen)
	}
	sym, err = parseLine(line)
	if err == errBlank {
		return Symbol{}, false, nil
	}
	return sym, err == nil, err
}

// parseLine parses "START SIZE name" with its line terminator.
func parseLine(b []byte) (Symbol, error) {
	b = bytes.TrimRight(b, "\r\n")
	b = bytes.TrimLeft(b, " \t")
	if len(b) == 0 {
		return Symbol{}, errBlank
	}
	startField, rest := cutField(b)
	sizeField, name := cutField(rest)
	start, err := parseHex(startField)
	if err != nil {
		return Symbol{}, fmt.Errorf("start address: %w", err)
	}
	size, err := parseHex(sizeField)
	if err != nil {
		return Symbol{}, fmt.Errorf("size: %w", err)
	}
	if len(name) == 0 {
		return Symbol{}, fmt.Errorf("%w: missing name", ErrSyntax)
	}
	if start+size < start {
		return Symbol{}, fmt.Errorf("%w: %#x+%#x overflows the address space", ErrSyntax, start, size)
	}
	return Symbol{Start: start, Size: size, Name: string(name)}, nil
}

// cutField splits off the first blank-separated field and the blanks after it.
func cutField(b []byte) (field, rest []byte) {
	i := bytes.IndexAny(b, " \t")
	if i < 0 {
		return b, nil
	}
	return b[:i], bytes.TrimLeft(b[i:], " \t")
}

func parseHex(b []byte) (uint64, error) {
	if len(b) >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty number", ErrSyntax)
	}
	v, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: not a 64-bit hex number", ErrSyntax)
	}
	return v, nil
}

// Write writes symbols in the format V8 writes ("%x %x %s\n"). It rejects
// names that could not be read back unchanged.
func Write(w io.Writer, syms []Symbol) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i, s := range syms {
		if err := checkName(s.Name); err != nil {
			return fmt.Errorf("perfmap: symbol %d: %w", i, err)
		}
		buf = strconv.AppendUint(buf[:0], s.Start, 16)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, s.Size, 16)
		buf = append(buf, ' ')
		buf = append(buf, s.Name...)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("perfmap: symbol %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("perfmap: %w", err)
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrSyntax)
	case name[0] == ' ' || name[0] == '\t':
		return fmt.Errorf("%w: name %q starts with a blank", ErrSyntax, name)
	case name[len(name)-1] == '\r':
		return fmt.Errorf("%w: name %q ends in a carriage return", ErrSyntax, name)
	case strings.ContainsRune(name, '\n'):
		return fmt.Errorf("%w: %q", ErrNameHasNewline, name)
	}
	return nil
}

package anon

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Protocol version 2 (docs/anon-handlers.md): a handler that answers a
// claim with "protocol N", N >= 2, instead of yes or no is then told the
// process's executable, the recording's time range and the JIT data
// jitprof gives it, and may answer lookups with source positions. A
// handler of version 1 answers the same claim at once, and never hears of
// any of it.
const (
	// ProtocolVersion is the highest protocol version jitprof speaks.
	ProtocolVersion = 2
	// MaxData bounds the bytes of JIT data given to one handler process.
	MaxData = 256 << 20
	// MaxDataFiles bounds the files given to one handler process.
	MaxDataFiles = 16
)

// handlerData is the JIT data of one process as one handler process
// inherits it, as descriptors. A handler reads only what jitprof checked:
// the copies the recording embedded, in memfds, or the files on disk
// jitprof opened after its trust checks (internal/trust), never a path
// the recorded process chose.
type handlerData struct {
	files []*os.File // passed as descriptors fd0, fd0+1, ...
	items []dataItem // what each file is
	fd0   int
	// left says what was not given to the handler, and why.
	left []string
}

type dataItem struct {
	kind, origin string
	embedded     bool
	size         int64
}

// gatherData returns p's JIT data for a handler process whose first
// inherited data descriptor is fd0: the copies the recording embedded
// or, for a process it embedded none for, the files of the built-in
// formats found on disk now, where jitprof record would find them. At
// most MaxDataFiles files are given, and at most limit bytes of copies
// (MaxData for Claim); the rest is listed in left.
func gatherData(p *Process, fd0, limit int) *handlerData {
	d := &handlerData{fd0: fd0}
	add := func(f *os.File, it dataItem) {
		if len(d.files) == MaxDataFiles {
			f.Close()
			d.left = append(d.left, fmt.Sprintf("%s: more than the %d files a handler is given", it.what(), MaxDataFiles))
			return
		}
		d.files = append(d.files, f)
		d.items = append(d.items, it)
	}
	if len(p.Embedded) == 0 {
		for _, df := range dataFiles(p) {
			if df.err != nil {
				d.left = append(d.left, fmt.Sprintf("%s data: %v", df.kind, df.err))
				continue
			}
			add(df.f.File, dataItem{kind: df.kind, origin: df.path, size: df.f.Size})
		}
		return d
	}
	total := 0
	for _, path := range slices.Sorted(maps.Keys(p.Embedded)) {
		b := p.Embedded[path]
		it := dataItem{kind: p.Kinds[path], origin: path, embedded: true, size: int64(len(b))}
		if total+len(b) > limit {
			d.left = append(d.left, fmt.Sprintf("%s: %d bytes, past the %d bytes a handler is given in all", it.what(), len(b), limit))
			continue
		}
		if len(d.files) == MaxDataFiles {
			d.left = append(d.left, fmt.Sprintf("%s: more than the %d files a handler is given", it.what(), MaxDataFiles))
			continue
		}
		f, err := memfd(b)
		if err != nil {
			d.left = append(d.left, fmt.Sprintf("%s: %v", it.what(), err))
			continue
		}
		total += len(b)
		add(f, it)
	}
	return d
}

// what names the data in messages.
func (it dataItem) what() string {
	if it.kind == "" {
		return it.origin
	}
	return it.kind + " data " + it.origin
}

// memfd returns an anonymous file holding b, its offset at 0, for a
// handler to read through its inherited descriptor.
func memfd(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("jitprof-anon-data", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:jitprof-anon-data")
	// WriteAt leaves the offset at 0, where a handler reading the
	// descriptor itself starts.
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	return f, nil
}

// passedFiles returns the descriptors to pass; nil for nil d.
func (d *handlerData) passedFiles() []*os.File {
	if d == nil {
		return nil
	}
	return d.files
}

// closeFiles closes jitprof's copies of the descriptors, once the handler
// process has its own.
func (d *handlerData) closeFiles() {
	if d == nil {
		return
	}
	for _, f := range d.files {
		f.Close()
	}
	d.files = nil
}

// details is the request that follows a handler's "protocol N": the
// session's version, then what jitprof knows of p and the data it gave
// the handler, then "end". d is nil when jitprof gave it none.
func (d *handlerData) details(p *Process, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "protocol %d\n", version)
	if exe := p.Executable(); exe != "" {
		fmt.Fprintf(&b, "exe %s\n", escape(exe))
	}
	if p.Span != (TimeRange{}) {
		fmt.Fprintf(&b, "range %d %d\n", p.Span.From, p.Span.To)
	}
	if d != nil {
		for i, it := range d.items {
			from := "disk"
			if it.embedded {
				from = "recording"
			}
			fmt.Fprintf(&b, "data %s %s /proc/self/fd/%d %d %s\n", escape(it.kind), from, d.fd0+i, it.size, escape(it.origin))
		}
	}
	b.WriteString("end\n")
	return b.String()
}

// Executable returns p.Exe or, when that is "", the file of p's first
// executable file mapping (by time, then address): the kernel maps a
// program before its interpreter and libraries, and perf lists a running
// process's mappings by address, where the program comes first too. ""
// when p has no such mapping.
func (p *Process) Executable() string {
	if p.Exe != "" {
		return p.Exe
	}
	var first *Mapping
	for i, m := range p.Mappings {
		if !m.Exec || !strings.HasPrefix(m.Path, "/") || strings.HasPrefix(m.Path, "//") ||
			strings.HasPrefix(m.Path, "/memfd:") || strings.HasPrefix(m.Path, "/dev/") {
			continue
		}
		if first == nil || m.Time < first.Time || m.Time == first.Time && m.Start < first.Start {
			first = &p.Mappings[i]
		}
	}
	if first == nil {
		return ""
	}
	return first.Path
}

// declined is what Claim returns when a handler given data says no: nil,
// or, when some of p's data was not given to it, an error wrapping
// ErrNoData that says what (shown only if no handler claims p).
func (d *handlerData) declined() error {
	if d == nil || len(d.left) == 0 {
		return nil
	}
	return fmt.Errorf("%w: it declined, and was not given %s", ErrNoData, strings.Join(d.left, "; "))
}

var errEscape = errors.New("bad escape")

// unescape decodes a field made by escape (a handler's, so checked): "-"
// is empty, %XX a byte; a bare '%' or a short escape is an error.
func unescape(s string) (string, error) {
	if s == "-" {
		return "", nil
	}
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errEscape
		}
		c, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", errEscape
		}
		b.Write(c)
		i += 2
	}
	return b.String(), nil
}

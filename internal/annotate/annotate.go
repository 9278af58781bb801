package annotate

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/internal/trust"
)

// Syntax is an assembly syntax.
type Syntax int

// Syntaxes, as perf's --asm-syntax names them.
const (
	ATT Syntax = iota
	Intel
)

// Options control Write.
type Options struct {
	// Symbol is the function to annotate, by the name reports give it
	// (every function of that name, one per image), or, when none has
	// it, the one sampled function whose name is Symbol without its copy
	// suffix ([gen N], [0xADDR]) or, failing that, contains it. Empty
	// annotates every function with self samples, as perf annotate does
	// without one.
	Symbol string
	// DSO, when set, keeps only the images with this path or base name.
	DSO string
	// Source interleaves the source lines DWARF gives each instruction.
	Source bool
	Syntax Syntax
	// Symbolizer finds the images; nil means symbolize.New with defaults.
	Symbolizer *symbolize.Symbolizer
	// OpenSource opens the source files whose lines are shown; nil
	// means OpenSource, the machine's files.
	OpenSource func(file string, as trust.Cred) (io.ReadCloser, error)
}

// ErrNoSamples is returned when no sample's leaf is in the symbol.
var ErrNoSamples = errors.New("no samples")

// maxCode bounds the bytes read for one symbol: a symbol table claiming
// gigabytes must not exhaust memory.
const maxCode = 16 << 20

// target is one function of one image in one event, and its self samples.
type target struct {
	event, fn int32
	samples   uint64
	period    uint64
	byAddr    map[uint64]uint64 // image-relative address -> period
}

// Write annotates every function named opts.Symbol (any, when it is
// empty) that has self samples, per event, hottest first. Annotating
// every function, one that cannot be (its image is gone, say) gets a
// line saying why instead of ending the output.
func Write(w io.Writer, p *profile.Profile, opts Options) error {
	if opts.Symbolizer == nil {
		opts.Symbolizer = symbolize.New(symbolize.Options{})
	}
	var want map[int32]bool // nil: every function
	if opts.Symbol != "" {
		sampled := map[int32]uint64{}
		for i := range p.Entries {
			if e := &p.Entries[i]; e.Stack >= 0 {
				fn := p.Frames[p.Nodes[e.Stack].Frame].Func
				if dsoMatches(p.Images[p.Funcs[fn].Image].Name, opts.DSO) {
					sampled[fn] += e.Count
				}
			}
		}
		var err error
		if want, err = match(p, sampled, opts); err != nil {
			return err
		}
	}
	targets := map[[2]int32]*target{}
	for i := range p.Entries {
		e := &p.Entries[i]
		if e.Stack < 0 {
			continue
		}
		fr := &p.Frames[p.Nodes[e.Stack].Frame]
		f := &p.Funcs[fr.Func]
		if want != nil && !want[fr.Func] || !dsoMatches(p.Images[f.Image].Name, opts.DSO) {
			continue
		}
		k := [2]int32{e.Event, fr.Func}
		t := targets[k]
		if t == nil {
			t = &target{event: e.Event, fn: fr.Func, byAddr: map[uint64]uint64{}}
			targets[k] = t
		}
		t.samples += e.Count
		t.period += e.Period
		t.byAddr[fr.Addr] += e.Period
	}
	if len(targets) == 0 {
		if opts.Symbol == "" {
			return fmt.Errorf("annotate: %w", ErrNoSamples)
		}
		return fmt.Errorf("annotate %s: %w", opts.Symbol, ErrNoSamples)
	}
	list := make([]*target, 0, len(targets))
	for _, t := range targets {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b *target) int {
		return cmp.Or(cmp.Compare(a.event, b.event), cmp.Compare(b.period, a.period), cmp.Compare(a.fn, b.fn))
	})
	src := sourceCache{lines: map[sourceKey][]string{}, open: opts.OpenSource}
	if src.open == nil {
		src.open = OpenSource
	}
	for _, t := range list {
		f := &p.Funcs[t.fn]
		im := &p.Images[f.Image]
		var err error
		switch {
		case im.Kind == profile.ImageAnon && len(f.Code) > 0:
			err = annotateJIT(w, p, t, opts)
		case im.Kind != profile.ImageFile:
			// Kernel text needs a vmlinux, and JIT code its bytes, which
			// only JITs that log them (jitlog, jitdump) provide.
			fmt.Fprintf(w, "# %s in %s: %d samples; no code bytes to annotate\n\n", termtext.Escape(f.Name), termtext.Escape(im.Name), t.samples)
		default:
			err = annotate(w, p, t, opts, src)
		}
		if err != nil && opts.Symbol != "" {
			return fmt.Errorf("annotate %s in %s: %w", f.Name, im.Name, err)
		}
		if err != nil {
			fmt.Fprintf(w, "# %s in %s: %d samples; cannot annotate: %s\n\n", termtext.Escape(f.Name), termtext.Escape(im.Name), t.samples, termtext.Escape(err.Error()))
		}
	}
	return nil
}

func dsoMatches(name, dso string) bool {
	return dso == "" || name == dso || filepath.Base(name) == dso
}

// Inst is one decoded instruction.
type Inst struct {
	PC   uint64
	Text string
}

// inst is an instruction and the period of its samples.
type inst struct {
	Inst
	period uint64
}

func annotate(w io.Writer, p *profile.Profile, t *target, opts Options, src sourceCache) error {
	f := &p.Funcs[t.fn]
	pim := &p.Images[f.Image]
	im, err := opts.Symbolizer.Open(pim.Name, pim.BuildID)
	if err != nil {
		return err
	}
	sym, ok := im.LookupAddr(f.Addr)
	if !ok || sym.Start != f.Addr {
		return fmt.Errorf("no symbol at %#x in %s", f.Addr, pim.Name)
	}
	code, err := ReadCode(im, sym.Start, sym.Size)
	if err != nil {
		return err
	}
	insts := withPeriods(Disassemble(code, sym.Start, opts.Syntax, ImageSymbols(im)))
	if err := spread(insts, t, sym.Start, sym.Size, sym.Name); err != nil {
		return err
	}

	title := fmt.Sprintf(" Percent |\tSource code & Disassembly of %s for %s (%d samples, percent: local period)",
		termtext.Escape(filepath.Base(pim.Name)), termtext.Escape(p.Events[t.event].Name), t.samples)
	fmt.Fprintln(w, title)
	fmt.Fprintln(w, strings.Repeat("-", len(title)+8))
	fmt.Fprintf(w, "         :\t%016x <%s>:\n", sym.Start, termtext.Escape(sym.Name))
	var lastFile string
	lastLine := -1
	for _, in := range insts {
		if opts.Source {
			if frames, err := im.Frames(in.PC); err == nil && len(frames) > 0 && frames[0].Line > 0 {
				fr := frames[0]
				if fr.File != lastFile || fr.Line != lastLine {
					lastFile, lastLine = fr.File, fr.Line
					fmt.Fprintf(w, "         :\t%s:%d\n", termtext.Escape(fr.File), fr.Line)
					if text, ok := src.line(fr.File, fr.Line, im.SourceCred()); ok {
						// A source line keeps its tabs; the writer, a
						// terminal's (termtext.Writer), escapes the rest.
						fmt.Fprintf(w, "         :\t%-6d %s\n", fr.Line, strings.TrimSuffix(text, "\r"))
					}
				}
			}
		}
		fmt.Fprintf(w, "%8.2f :\t%8x:\t%s\n", percent(in.period, t.period), in.PC, termtext.Escape(in.Text))
	}
	fmt.Fprintln(w)
	return nil
}

// annotateJIT annotates JIT code from the bytes its JIT logged: the
// function lives at f.Addr and the samples' addresses are absolute.
func annotateJIT(w io.Writer, p *profile.Profile, t *target, opts Options) error {
	f := &p.Funcs[t.fn]
	if end := f.Addr + uint64(len(f.Code)); end <= f.Addr {
		// Addresses would wrap round mid-code, out of order, and a
		// sample past the end would land in it.
		return fmt.Errorf("JIT code at %#x of %d bytes runs past the end of the address space", f.Addr, len(f.Code))
	}
	// A JIT function's only known symbol is itself.
	insts := withPeriods(Disassemble(f.Code, f.Addr, opts.Syntax, JITSymbols(f)))
	if err := spread(insts, t, f.Addr, uint64(len(f.Code)), f.Name); err != nil {
		return err
	}
	title := fmt.Sprintf(" Percent |\tDisassembly of JIT code %s in %s for %s (%d samples, percent: local period)",
		termtext.Escape(f.Name), termtext.Escape(p.Images[f.Image].Name), termtext.Escape(p.Events[t.event].Name), t.samples)
	fmt.Fprintln(w, title)
	fmt.Fprintln(w, strings.Repeat("-", len(title)+8))
	fmt.Fprintf(w, "         :\t%016x <%s>:\n", f.Addr, termtext.Escape(f.Name))
	for _, in := range insts {
		fmt.Fprintf(w, "%8.2f :\t%8x:\t%s\n", percent(in.period, t.period), in.PC, termtext.Escape(in.Text))
	}
	fmt.Fprintln(w)
	return nil
}

// spread adds each sampled address's period to the instruction covering
// it; a sample between instruction starts (code the decoder misread) goes
// to the instruction before it.
func spread(insts []inst, t *target, start, size uint64, name string) error {
	for addr, period := range t.byAddr {
		i, found := slices.BinarySearchFunc(insts, addr, func(in inst, a uint64) int { return cmp.Compare(in.PC, a) })
		if !found {
			i--
		}
		if i < 0 || addr >= start+size {
			return fmt.Errorf("sample at %#x outside %s [%#x, %#x)", addr, name, start, start+size)
		}
		insts[i].period += period
	}
	return nil
}

func percent(v, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(v) * 100 / float64(total)
}

// ReadCode reads size bytes of im's code at the ELF virtual address
// start, from the file the image was loaded from (symbolize.Image.Code).
func ReadCode(im *symbolize.Image, start, size uint64) ([]byte, error) {
	if size > maxCode {
		return nil, fmt.Errorf("%s: symbol at %#x claims %d bytes", im.Path(), start, size)
	}
	return im.Code(start, size)
}

// ImageSymbols names addresses by the symbols of an image, for
// Disassemble.
func ImageSymbols(im *symbolize.Image) func(uint64) (string, uint64) {
	return func(addr uint64) (string, uint64) {
		if s, ok := im.LookupAddr(addr); ok {
			return s.Name, s.Start
		}
		return "", 0
	}
}

// JITSymbols names addresses in JIT code f, whose only known symbol is
// itself, for Disassemble.
func JITSymbols(f *profile.Func) func(uint64) (string, uint64) {
	return func(addr uint64) (string, uint64) {
		if addr >= f.Addr && addr-f.Addr < uint64(len(f.Code)) {
			return f.Name, f.Addr
		}
		return "", 0
	}
}

// Disassemble decodes x86-64 code at start; symname names branch
// targets (nil names none).
func Disassemble(code []byte, start uint64, syntax Syntax, symname func(uint64) (string, uint64)) []Inst {
	if symname == nil {
		symname = func(uint64) (string, uint64) { return "", 0 }
	}
	var out []Inst
	for off := 0; off < len(code); {
		pc := start + uint64(off)
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			// objdump's spelling; decoding resumes at the next byte.
			out = append(out, Inst{PC: pc, Text: "(bad)"})
			off++
			continue
		}
		text := x86asm.GNUSyntax(in, pc, symname)
		if syntax == Intel {
			text = x86asm.IntelSyntax(in, pc, symname)
		}
		// Name a branch's target as objdump does, so loops read at a glance.
		if rel, ok := in.Args[0].(x86asm.Rel); ok {
			to := pc + uint64(in.Len) + uint64(int64(rel))
			if name, base := symname(to); name != "" {
				text += fmt.Sprintf(" <%s+%#x>", name, to-base)
			}
		}
		out = append(out, Inst{PC: pc, Text: text})
		off += in.Len
	}
	return out
}

func withPeriods(insts []Inst) []inst {
	out := make([]inst, len(insts))
	for i, in := range insts {
		out[i].Inst = in
	}
	return out
}

// sourceCache holds the lines of the source files read so far, by file
// and by whose rights they were read with; a file that cannot be read is
// remembered as nil.
type sourceCache struct {
	lines map[sourceKey][]string
	open  func(file string, as trust.Cred) (io.ReadCloser, error)
}

// OpenSource opens a source file an image's debug info names with as's
// rights (trust.OpenNamed): Options.OpenSource's default.
func OpenSource(file string, as trust.Cred) (io.ReadCloser, error) {
	f, err := trust.OpenNamed(file, as, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

type sourceKey struct {
	file string
	as   trust.Cred
}

// maxSource bounds the size of a source file read for its lines.
const maxSource = 8 << 20

// line is line n of file, read with as's rights: the source files an
// image's debug info names are its owner's word (symbolize.Image.SourceCred),
// and a line shown is a file's bytes.
func (c sourceCache) line(file string, n int, as trust.Cred) (string, bool) {
	k := sourceKey{file, as}
	lines, ok := c.lines[k]
	if !ok {
		lines = c.readLines(file, as)
		c.lines[k] = lines
	}
	if n < 1 || n > len(lines) {
		return "", false
	}
	return lines[n-1], true
}

func (c sourceCache) readLines(file string, as trust.Cred) []string {
	fh, err := c.open(file, as)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(fh, maxSource))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	return lines
}

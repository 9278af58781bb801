package sampledb

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// All stands for "not separated" in a FileKey's TGID, TID and CPU: the
// name says "all" there.
const All = math.MaxUint32

// ImageKind says what an Image is, and so which marker names it.
type ImageKind uint8

const (
	// ImageFile is a file-backed image: {root}/PATH, PATH absolute.
	ImageFile ImageKind = iota + 1
	// ImageKernel is the kernel or a module: {kern}/NAME.
	ImageKernel
	// ImageAnon is anonymous memory no JIT data names:
	// {anon:NAME}/TGID.0xSTART.0xEND, NAME the mapping's name
	// ("anon", "[heap]", "[anon:v8]"); with TGID All
	// ({anon:NAME}/all.0x0.0x0), that of every process of the
	// application, counted as one place (AppAnonImage).
	ImageAnon
	// ImageJIT is anonymous memory holding code a JIT data source knows:
	// {jit:HANDLER}/TGID.0xSTART.0xEND. HANDLER names the source whose
	// sequence numbers the file's second key holds (jitlog, jitdump,
	// perfmap, ...): two sources number code apart, so their samples never
	// share a file.
	ImageJIT
	// ImageVDSO is the vDSO, the user code the kernel maps into every
	// process: {vdso}, named "[vdso]" as perf names its mapping; its
	// samples are keyed by offset, as a file's are.
	ImageVDSO
)

// VDSOName is the name of the vDSO image, as perf names its mapping.
const VDSOName = "[vdso]"

func (k ImageKind) String() string {
	switch k {
	case ImageFile:
		return "file"
	case ImageKernel:
		return "kernel"
	case ImageAnon:
		return "anon"
	case ImageJIT:
		return "jit"
	case ImageVDSO:
		return "vdso"
	}
	return "ImageKind(" + strconv.Itoa(int(k)) + ")"
}

// Image is one part of a sample file's name: the application, the image
// the samples fell in, or a call-graph arc's target.
type Image struct {
	Kind ImageKind
	// Name is the absolute path of a file, the kernel image's or
	// module's name, the anonymous mapping's name or the JIT handler's
	// name. Any bytes: names are mangled.
	Name string
	// TGID, Start and End place anonymous and JIT memory: the process
	// and the mapping's range (End exclusive); TGID All and no range
	// for the anonymous memory of all the application's processes.
	TGID       uint32
	Start, End uint64
}

// anon reports whether the image is anonymous memory (with or without JIT
// data): its samples are keyed (offset, sequence).
func (im Image) anon() bool { return im.Kind == ImageAnon || im.Kind == ImageJIT }

// String is the image as reports and profile specifications name it: the
// path or name, and for anonymous memory OProfile's form,
// "NAME (tgid:T range:0xS-0xE)" ("jit:HANDLER (...)" for JIT memory).
func (im Image) String() string {
	switch im.Kind {
	case ImageAnon, ImageJIT:
		name := im.Name
		if im.Kind == ImageJIT {
			name = "jit:" + name
		}
		if im.TGID == All {
			return name + " (all processes)"
		}
		return fmt.Sprintf("%s (tgid:%d range:%#x-%#x)", name, im.TGID, im.Start, im.End)
	}
	return im.Name
}

// FileKey is everything a sample file's name holds: the fields of a
// sample that --separate keeps, and its event.
type FileKey struct {
	// App is the application (the process's executable); it is Dep
	// itself where --separate does not keep applications apart.
	App Image
	// Dep is the image the samples fell in (for call-graph files, the
	// caller's image).
	Dep Image
	// CG is the callee's image of a call-graph file; its Kind is zero
	// for a file of plain samples.
	CG Image
	// Event is the event's name; Count its sample period, or frequency
	// when Freq; UnitMask its unit mask (0 where the event has none).
	Event    string
	Count    uint64
	Freq     bool
	UnitMask uint64
	// TGID, TID and CPU are All where --separate does not split by them.
	TGID, TID, CPU uint32
	// Variant tells apart the files of different binaries that had one
	// path (a binary replaced during the session, or one path in two
	// containers): each file's header says which binary it counts. The
	// dep marker carries it, {root:N}, {kern:N} or {vdso:N}, for N > 0.
	Variant uint8
}

// Kind is the kind of keys the file's table holds.
func (k FileKey) Kind() KeyKind {
	switch {
	case k.CG.Kind != 0:
		return KeyCallGraph
	case k.Dep.anon():
		return KeyAnon
	}
	return KeyOffset
}

// CountString is the count as names and profile specifications write it:
// the period in decimal, or F and the frequency.
func (k FileKey) CountString() string {
	if k.Freq {
		return "F" + strconv.FormatUint(k.Count, 10)
	}
	return strconv.FormatUint(k.Count, 10)
}

// Limits of the mangled forms. A name's components must fit NAME_MAX (255)
// with room for the hidden temporary name a file is created under (a dot
// before the last component).
const (
	// maxChunk is the longest run of mangled bytes in one directory
	// level; a longer component continues in the next level, the chunk
	// ending with contMark.
	maxChunk = 250
	// maxEventMangled bounds the mangled event name, so that the whole
	// EVENT.COUNT.UNITMASK.TGID.TID.CPU component (at most 76 more
	// bytes) stays under 254.
	maxEventMangled = 175
	// maxMarkerName bounds the mangled name inside {anon:...} and
	// {jit:...}, which is one component with its marker.
	maxMarkerName = 240
	// maxDirs bounds the directory levels a path's components get; the
	// rest of a deeper path is one more component, its slashes escaped.
	// It keeps trees shallow enough to walk with a handle per level.
	maxDirs = 32
)

// The markers of a name. Mangling escapes every '{', so no mangled
// component is a marker.
const (
	markRoot = "{root}"
	markKern = "{kern}"
	markVDSO = "{vdso}"
	markDep  = "{dep}"
	markCG   = "{cg}"
	markAnon = "{anon:"
	markJIT  = "{jit:"
	allField = "all"
	contMark = "%+"
	emptyEnc = "%"
)

// ErrName is wrapped by the errors of Name and Parse.
var ErrName = errors.New("sample file name")

// Name is the sample file's path relative to a session's directory,
// OProfile's form:
//
//	APP/{dep}/IMAGE/[{cg}/TO_IMAGE/]EVENT.COUNT.UNITMASK.TGID.TID.CPU
//
// where each image is {root}/PATH, {kern}/NAME, {anon:NAME}/TGID.0xSTART.0xEND
// or {jit:HANDLER}/TGID.0xSTART.0xEND, and IMAGE's {root} or {kern} says
// {root:N} for a variant N > 0. Every image name and the event are mangled (docs/sample-files.md): bytes
// other than ASCII letters, digits and -_+,=@~:[]() are %XX, as is a dot
// that begins a component, so no component is empty, ".", "..", hidden, or
// a marker, and none is longer than NAME_MAX. Parse(Name(k)) == k for
// every key Name accepts.
func Name(k FileKey) (string, error) {
	b, err := appendName(nil, k)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func appendName(b []byte, k FileKey) ([]byte, error) {
	var err error
	if b, err = appendImage(b, k.App, 0, "app"); err != nil {
		return nil, err
	}
	b = append(b, "/"+markDep+"/"...)
	if b, err = appendImage(b, k.Dep, k.Variant, "image"); err != nil {
		return nil, err
	}
	if k.CG.Kind != 0 {
		b = append(b, "/"+markCG+"/"...)
		if b, err = appendImage(b, k.CG, 0, "call-graph image"); err != nil {
			return nil, err
		}
	}
	b = append(b, '/')
	if k.Event == "" {
		return nil, fmt.Errorf("%w: empty event name", ErrName)
	}
	start := len(b)
	b = appendEscaped(b, k.Event, true)
	if len(b)-start > maxEventMangled {
		return nil, fmt.Errorf("%w: event name longer than %d bytes mangled", ErrName, maxEventMangled)
	}
	b = append(b, '.')
	if k.Freq {
		b = append(b, 'F')
	}
	b = strconv.AppendUint(b, k.Count, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, k.UnitMask, 10)
	for _, id := range [...]uint32{k.TGID, k.TID, k.CPU} {
		b = append(b, '.')
		if id == All {
			b = append(b, allField...)
		} else {
			b = strconv.AppendUint(b, uint64(id), 10)
		}
	}
	return b, nil
}

func appendImage(b []byte, im Image, variant uint8, what string) ([]byte, error) {
	if variant != 0 && im.anon() {
		return nil, fmt.Errorf("%w: anonymous %s with a variant", ErrName, what)
	}
	switch im.Kind {
	case ImageFile:
		if !strings.HasPrefix(im.Name, "/") {
			return nil, fmt.Errorf("%w: %s path is not absolute", ErrName, what)
		}
		b = appendMarker(b, markRoot, variant)
		rest := im.Name[1:]
		for n := 1; ; n++ {
			c, more, found := strings.Cut(rest, "/")
			if n == maxDirs {
				c, found = rest, false
			}
			b = append(b, '/')
			b = appendComponent(b, c)
			if !found {
				return b, nil
			}
			rest = more
		}
	case ImageKernel:
		if im.Name == "" {
			return nil, fmt.Errorf("%w: empty kernel image name", ErrName)
		}
		b = append(appendMarker(b, markKern, variant), '/')
		return appendComponent(b, im.Name), nil
	case ImageVDSO:
		return appendMarker(b, markVDSO, variant), nil
	case ImageAnon, ImageJIT:
		if im.End < im.Start {
			return nil, fmt.Errorf("%w: %s range ends before it starts", ErrName, what)
		}
		mark := markAnon
		if im.Kind == ImageJIT {
			mark = markJIT
		}
		b = append(b, mark...)
		start := len(b)
		b = appendEscaped(b, im.Name, false)
		if len(b)-start > maxMarkerName {
			return nil, fmt.Errorf("%w: %s name longer than %d bytes mangled", ErrName, what, maxMarkerName)
		}
		b = append(b, "}/"...)
		if im.TGID == All {
			b = append(b, allField...)
		} else {
			b = strconv.AppendUint(b, uint64(im.TGID), 10)
		}
		b = append(b, ".0x"...)
		b = strconv.AppendUint(b, im.Start, 16)
		b = append(b, ".0x"...)
		b = strconv.AppendUint(b, im.End, 16)
		return b, nil
	}
	return nil, fmt.Errorf("%w: %s has no kind", ErrName, what)
}

// appendMarker writes {root} or {kern}, with ":N}" for a variant N > 0.
func appendMarker(b []byte, mark string, variant uint8) []byte {
	if variant == 0 {
		return append(b, mark...)
	}
	b = append(b, mark[:len(mark)-1]...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(variant), 10)
	return append(b, '}')
}

// appendComponent mangles one path component (any bytes, no '/' meaning)
// into one or more directory levels.
func appendComponent(b []byte, c string) []byte {
	if c == "" {
		return append(b, emptyEnc...)
	}
	chunk := 0 // mangled bytes in the current level
	for i := 0; i < len(c); i++ {
		n := 1
		if !rawByte(c[i], false) || (chunk == 0 && c[i] == '.') {
			n = 3
		}
		if chunk+n > maxChunk {
			b = append(b, contMark+"/"...)
			chunk = 0
			if c[i] == '.' {
				n = 3
			}
		}
		if n == 1 {
			b = append(b, c[i])
		} else {
			b = appendPct(b, c[i])
		}
		chunk += n
	}
	return b
}

// appendEscaped mangles s into one component's worth of text (no
// chunking): the event name (where '.' separates fields, so every dot is
// escaped) or the name inside a marker. A leading dot is escaped too.
func appendEscaped(b []byte, s string, event bool) []byte {
	if s == "" {
		return append(b, emptyEnc...)
	}
	for i := 0; i < len(s); i++ {
		if rawByte(s[i], event) && !(i == 0 && s[i] == '.') {
			b = append(b, s[i])
		} else {
			b = appendPct(b, s[i])
		}
	}
	return b
}

const hexDigits = "0123456789ABCDEF"

func appendPct(b []byte, c byte) []byte {
	return append(b, '%', hexDigits[c>>4], hexDigits[c&15])
}

// rawByte reports whether c stands for itself in a mangled name. Only
// ASCII: which non-ASCII characters are printable changes with Unicode
// versions, and a name must mangle the same way forever.
func rawByte(c byte, event bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '.':
		return !event
	}
	return strings.IndexByte("-_+,=@~:[]()", c) >= 0
}

// Parse is the inverse of Name: it accepts exactly the names Name makes
// (any other spelling of the same key is an error, so two paths never
// name one key) and returns their keys.
func Parse(name string) (FileKey, error) {
	k, err := parse(name)
	if err != nil {
		return FileKey{}, err
	}
	// One canonical spelling: a name Name would write differently (an
	// escape of a byte that stands for itself, a lowercase escape, a
	// split at another place, a leading zero) is refused.
	if back, err := Name(k); err != nil || back != name {
		return FileKey{}, fmt.Errorf("%w: not in canonical form", ErrName)
	}
	return k, nil
}

func parse(name string) (FileKey, error) {
	var k FileKey
	last := strings.LastIndexByte(name, '/')
	if last < 0 {
		return k, fmt.Errorf("%w: no event component", ErrName)
	}
	if err := parseEventSpec(&k, name[last+1:]); err != nil {
		return k, err
	}
	p := nameParser{comps: strings.Split(name[:last], "/")}
	var err error
	if k.App, err = p.image(); err != nil {
		return k, err
	}
	if !p.take(markDep) {
		return k, fmt.Errorf("%w: no %s after the application", ErrName, markDep)
	}
	if k.Dep, k.Variant, err = p.variantImage(); err != nil {
		return k, err
	}
	if p.take(markCG) {
		if k.CG, err = p.image(); err != nil {
			return k, err
		}
	}
	if p.i != len(p.comps) {
		return k, fmt.Errorf("%w: unexpected component %d", ErrName, p.i+1)
	}
	return k, nil
}

type nameParser struct {
	comps []string
	i     int
}

func (p *nameParser) take(mark string) bool {
	if p.i < len(p.comps) && p.comps[p.i] == mark {
		p.i++
		return true
	}
	return false
}

// variantImage parses the dep image, whose {root}, {kern} or {vdso} marker may
// carry a variant.
func (p *nameParser) variantImage() (Image, uint8, error) {
	if p.i < len(p.comps) {
		c := p.comps[p.i]
		for _, mark := range [...]string{markRoot, markKern, markVDSO} {
			stem := mark[:len(mark)-1] + ":"
			if n, ok := strings.CutPrefix(c, stem); ok {
				n, ok = strings.CutSuffix(n, "}")
				v, err := strconv.ParseUint(n, 10, 8)
				if !ok || err != nil || v == 0 {
					return Image{}, 0, fmt.Errorf("%w: bad variant marker", ErrName)
				}
				p.comps[p.i] = mark
				im, err := p.image()
				return im, uint8(v), err
			}
		}
	}
	im, err := p.image()
	return im, 0, err
}

func (p *nameParser) image() (Image, error) {
	var im Image
	if p.i >= len(p.comps) {
		return im, fmt.Errorf("%w: image expected after component %d", ErrName, p.i)
	}
	mark := p.comps[p.i]
	p.i++
	switch {
	case mark == markRoot:
		im.Kind = ImageFile
		var path []byte
		n := 0
		for p.i < len(p.comps) && !strings.HasPrefix(p.comps[p.i], "{") {
			c, err := p.component()
			if err != nil {
				return im, err
			}
			path = append(append(path, '/'), c...)
			n++
		}
		if n == 0 {
			return im, fmt.Errorf("%w: empty path after %s", ErrName, markRoot)
		}
		im.Name = string(path)
	case mark == markVDSO:
		im.Kind, im.Name = ImageVDSO, VDSOName
	case mark == markKern:
		im.Kind = ImageKernel
		if p.i >= len(p.comps) || strings.HasPrefix(p.comps[p.i], "{") {
			return im, fmt.Errorf("%w: no name after %s", ErrName, markKern)
		}
		c, err := p.component()
		if err != nil {
			return im, err
		}
		im.Name = string(c)
	case strings.HasPrefix(mark, markAnon) || strings.HasPrefix(mark, markJIT):
		im.Kind = ImageAnon
		inner, ok := strings.CutPrefix(mark, markAnon)
		if !ok {
			im.Kind, inner = ImageJIT, mark[len(markJIT):]
		}
		inner, ok = strings.CutSuffix(inner, "}")
		if !ok {
			return im, fmt.Errorf("%w: unterminated anonymous marker", ErrName)
		}
		name, err := unescape(inner, false)
		if err != nil {
			return im, err
		}
		im.Name = string(name)
		if p.i >= len(p.comps) {
			return im, fmt.Errorf("%w: no range after the anonymous marker", ErrName)
		}
		if err := parseRange(&im, p.comps[p.i]); err != nil {
			return im, err
		}
		p.i++
	default:
		return im, fmt.Errorf("%w: component %d is not an image marker", ErrName, p.i)
	}
	return im, nil
}

// component decodes one path component, joining the levels a long one was
// split into.
func (p *nameParser) component() ([]byte, error) {
	var out []byte
	for p.i < len(p.comps) {
		c := p.comps[p.i]
		p.i++
		more := strings.HasSuffix(c, contMark) && len(c) > len(contMark)
		if more {
			c = c[:len(c)-len(contMark)]
		}
		d, err := unescape(c, false)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
		if !more {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: continued component at the end", ErrName)
}

// unescape decodes %XX escapes; "%" alone is the empty string. Whether
// the spelling is canonical is Parse's check, by mangling back.
func unescape(s string, event bool) ([]byte, error) {
	if s == emptyEnc {
		return []byte{}, nil
	}
	if s == "" {
		return nil, fmt.Errorf("%w: empty component", ErrName)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !rawByte(c, event) {
				return nil, fmt.Errorf("%w: byte %#02x must be escaped", ErrName, c)
			}
			out = append(out, c)
			continue
		}
		if i+2 >= len(s) {
			return nil, fmt.Errorf("%w: short escape", ErrName)
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return nil, fmt.Errorf("%w: bad escape", ErrName)
		}
		out = append(out, byte(hi<<4|lo))
		i += 2
	}
	return out, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func parseRange(im *Image, s string) error {
	f := strings.Split(s, ".")
	if len(f) != 3 || !strings.HasPrefix(f[1], "0x") || !strings.HasPrefix(f[2], "0x") {
		return fmt.Errorf("%w: anonymous range is not TGID.0xSTART.0xEND", ErrName)
	}
	tgid, err1 := uint64(All), error(nil)
	if f[0] != allField {
		tgid, err1 = strconv.ParseUint(f[0], 10, 32)
	}
	start, err2 := strconv.ParseUint(f[1][2:], 16, 64)
	end, err3 := strconv.ParseUint(f[2][2:], 16, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("%w: anonymous range is not TGID.0xSTART.0xEND", ErrName)
	}
	im.TGID, im.Start, im.End = uint32(tgid), start, end
	return nil
}

func parseEventSpec(k *FileKey, s string) error {
	f := strings.Split(s, ".")
	if len(f) != 6 {
		return fmt.Errorf("%w: last component is not EVENT.COUNT.UNITMASK.TGID.TID.CPU", ErrName)
	}
	ev, err := unescape(f[0], true)
	if err != nil {
		return err
	}
	k.Event = string(ev)
	count := f[1]
	if c, ok := strings.CutPrefix(count, "F"); ok {
		k.Freq, count = true, c
	}
	if k.Count, err = strconv.ParseUint(count, 10, 64); err != nil {
		return fmt.Errorf("%w: bad count", ErrName)
	}
	if k.UnitMask, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return fmt.Errorf("%w: bad unit mask", ErrName)
	}
	for i, p := range [...]*uint32{&k.TGID, &k.TID, &k.CPU} {
		if f[3+i] == allField {
			*p = All
			continue
		}
		v, err := strconv.ParseUint(f[3+i], 10, 32)
		if err != nil {
			return fmt.Errorf("%w: bad tgid, tid or cpu", ErrName)
		}
		*p = uint32(v)
	}
	return nil
}

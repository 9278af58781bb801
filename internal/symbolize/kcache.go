package symbolize

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
	"golang.org/x/sys/unix"
)

// The kernel's symbol table is the same for every report made in one boot
// with the same modules and BPF programs loaded, but /proc/kallsyms makes
// the kernel format ~120k lines each time it is read, which cost a report
// more than the rest of a small recording's work (issue 12). So the parsed
// table is kept in a cache file, one per boot, named by a key that
// changes whenever the table can: the boot id, each module's name, size
// and address (/proc/modules), and the ids of the loaded BPF programs,
// which kallsyms lists as [bpf] symbols. Without the BPF ids (a user who
// may not enumerate them) nothing is cached. ftrace and kprobe
// trampolines, which kallsyms also lists, come and go without changing
// the key; a sample in one is named by the table of the boot's first
// report.
//
// The file is jitprof's own, written and read only by the same user: it
// is opened without following links, must be owned by that user and
// writable by no one else, and is checked like any other input: kcacheRead
// refuses a file whose parts do not fill it, which means a fresh parse,
// and every index and offset a lookup reads is checked as it is read.

// kcacheMagic starts a cache file; the digit is its version.
const kcacheMagic = "jitprof kallsyms cache 1\n"

// kcacheLimit bounds a cache file (a kernel's table is ~5 MB).
const kcacheLimit = 256 << 20

// CacheDir is where jitprof keeps caches of its own: $JITPROF_CACHE_DIR,
// else /var/cache/jitprof for root, else $XDG_CACHE_HOME/jitprof or
// ~/.cache/jitprof. JITPROF_CACHE_DIR=off turns caching off ("" is
// returned).
func CacheDir() string {
	if d, ok := os.LookupEnv("JITPROF_CACHE_DIR"); ok {
		if d == "off" {
			return ""
		}
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/jitprof"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "jitprof")
	}
	return ""
}

// kcacheKey names the running kernel's symbol table, or fails when it
// cannot say what the table depends on.
func kcacheKey() (string, error) {
	boot, err := linux.BootID()
	if err != nil {
		return "", err
	}
	mods, err := linux.Modules()
	if err != nil {
		return "", err
	}
	progs, err := linux.BPFProgIDs()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s%s\n%d\n", kcacheMagic, boot, os.Geteuid())
	for _, m := range mods {
		fmt.Fprintf(h, "%s %d %x\n", m.Name, m.Size, m.Start)
	}
	for _, id := range progs {
		fmt.Fprintf(h, "bpf %d\n", id)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// cachedKernel returns the running kernel's table from the cache, or
// parses /proc/kallsyms and writes the cache for the next report.
func cachedKernel(opts LoadOptions) (*Kernel, error) {
	dir := CacheDir()
	key, err := kcacheKey()
	if dir == "" || err != nil {
		return parseRunningKernel(opts)
	}
	path := filepath.Join(dir, "kallsyms-"+key)
	if m, err := kcacheLoad(path); err == nil {
		m.raw = opts.RawNames
		return &Kernel{mapped: m}, nil
	}
	k, err := parseRunningKernel(opts)
	if err != nil {
		return nil, err
	}
	// A cache that cannot be written costs only speed.
	_ = kcacheStore(dir, path, k.syms)
	return k, nil
}

// kcacheLoad maps a cache file written by kcacheStore.
func kcacheLoad(path string) (*mappedTable, error) {
	f, err := trust.OpenOwnCache(path, kcacheLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size == 0 {
		return nil, errKcache
	}
	// Mapped, not read: a report touches the pages of the few symbols its
	// samples hit and of the binary searches that find them. The mapping
	// lives as long as the process.
	b, err := unix.Mmap(int(f.Fd()), 0, int(f.Size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := kcacheRead(b)
	if err != nil {
		unix.Munmap(b)
		return nil, err
	}
	return m, nil
}

var errKcache = errors.New("malformed kallsyms cache")

// mappedTable is a kernel symbol table in a cache file's bytes, looked up
// where it lies: the magic, the counts of entries and names and the
// length of the name text (uint32 each, little-endian), the entries
// (start, end uint64; name, module uint32), the end offset of each name
// in the text (uint32), and the text.
type mappedTable struct {
	ents, offs []byte
	text       string
	n, nnames  int
	raw        bool
	demangled  demangled
}

// kcacheRead checks a cache's header and that its parts fill it exactly.
// The entries and names are checked where a lookup reads them (lookup,
// rawName), not here: a report looks up a few hundred of a kernel's
// 120,000 symbols, and checking every one took it a millisecond of CPU
// and the page faults of reading the whole file. So a damaged cache can
// give a wrong name, or none, but cannot make a read go outside it.
// Entries are in strictly increasing order of start, as written, for the
// binary search; an entry may be empty, or reach past the next one's
// start: ELF tables have both (a sizeless symbol at its section's end; a
// function whose size covers the next one's), and a table answers them
// as it was built.
func kcacheRead(b []byte) (*mappedTable, error) {
	rest, ok := bytes.CutPrefix(b, []byte(kcacheMagic))
	if !ok || len(rest) < 12 {
		return nil, errKcache
	}
	le := binary.LittleEndian
	nent, nnames, ntext := uint64(le.Uint32(rest)), uint64(le.Uint32(rest[4:])), uint64(le.Uint32(rest[8:]))
	rest = rest[12:]
	if nnames == 0 || uint64(len(rest)) != nent*24+nnames*4+ntext {
		return nil, errKcache
	}
	return &mappedTable{
		ents: rest[:nent*24], offs: rest[nent*24 : nent*24+nnames*4],
		text: unsafe.String(unsafe.SliceData(rest[nent*24+nnames*4:]), int(ntext)),
		n:    int(nent), nnames: int(nnames),
	}, nil
}

func (m *mappedTable) start(i int) uint64 { return binary.LittleEndian.Uint64(m.ents[24*i:]) }

// rawName returns name id, which must be below nnames; a name whose
// offsets a damaged cache put out of order or past the text is empty.
func (m *mappedTable) rawName(id uint32) string {
	from := uint32(0)
	if id > 0 {
		from = binary.LittleEndian.Uint32(m.offs[4*(id-1):])
	}
	to := binary.LittleEndian.Uint32(m.offs[4*id:])
	if from > to || int(to) > len(m.text) {
		return ""
	}
	return m.text[from:to]
}

// entry returns entry i's fields, and false for an entry a damaged cache
// made impossible: ending before it starts, or naming a name past the
// last.
func (m *mappedTable) entry(i int) (start, end uint64, name, mod uint32, ok bool) {
	e := m.ents[24*i:]
	le := binary.LittleEndian
	start, end, name, mod = le.Uint64(e), le.Uint64(e[8:]), le.Uint32(e[16:]), le.Uint32(e[20:])
	return start, end, name, mod, end >= start && int(name) < m.nnames && int(mod) < m.nnames
}

func (m *mappedTable) lookup(addr uint64) (Symbol, bool) {
	s, _, _, ok := m.lookupSpan(addr)
	return s, ok
}

// lookupSpan is lookup and the span of addresses it answers alike
// (Kernel.LookupSpan).
func (m *mappedTable) lookupSpan(addr uint64) (Symbol, uint64, uint64, bool) {
	i := sort.Search(m.n, func(i int) bool { return m.start(i) > addr }) - 1
	if i < 0 {
		return Symbol{}, 0, 0, false
	}
	start, end, name, mod, ok := m.entry(i)
	if !ok || addr >= end {
		return Symbol{}, 0, 0, false
	}
	lo, hi := spanOf(m.n, i, addr, m.start, end)
	return Symbol{Name: m.name(name), Start: start, Size: end - start, Module: m.rawName(mod)}, lo, hi, true
}

func (m *mappedTable) count() int     { return m.n }
func (m *mappedTable) rawNames() bool { return m.raw }
func (m *mappedTable) hasName(name string) bool {
	for i := range m.n {
		if _, _, id, _, ok := m.entry(i); ok && (m.rawName(id) == name || m.name(id) == name) {
			return true
		}
	}
	return false
}

// name demangles lazily, as table.name does.
func (m *mappedTable) name(id uint32) string {
	if m.raw {
		return m.rawName(id)
	}
	return m.demangled.name(id, m.nnames, m.rawName(id))
}

// kcacheEncode is kcacheRead's inverse.
func kcacheEncode(t *table) []byte {
	text := 0
	for _, n := range t.names {
		text += len(n)
	}
	le := binary.LittleEndian
	b := make([]byte, 0, len(kcacheMagic)+12+24*len(t.entries)+4*len(t.names)+text)
	b = append(b, kcacheMagic...)
	b = le.AppendUint32(b, uint32(len(t.entries)))
	b = le.AppendUint32(b, uint32(len(t.names)))
	b = le.AppendUint32(b, uint32(text))
	for _, e := range t.entries {
		b = le.AppendUint64(b, e.start)
		b = le.AppendUint64(b, e.end)
		b = le.AppendUint32(b, e.name)
		b = le.AppendUint32(b, e.mod)
	}
	off := uint32(0)
	for _, n := range t.names {
		off += uint32(len(n))
		b = le.AppendUint32(b, off)
	}
	for _, n := range t.names {
		b = append(b, n...)
	}
	return b
}

// kcacheStore writes t to path through a temporary file, so a reader
// never sees half a cache, and removes the caches of other boots and
// module sets.
func kcacheStore(dir, path string, t *table) error {
	if err := writeCache(dir, path, t); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "kallsyms-*"))
	for _, o := range old {
		if o != path && !strings.HasPrefix(filepath.Base(o), ".") {
			os.Remove(o)
		}
	}
	return nil
}

// writeCache writes t to path in dir through a temporary file, so that a
// reader never sees half a cache.
func writeCache(dir, path string, t *table) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".cache-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(kcacheEncode(t)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

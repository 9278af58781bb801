package record

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// image is a file some process mapped executable.
type image struct {
	name string
	hit  bool // a sample's IP fell in it
	// as is whose rights its build-id is read with: the user of the
	// first process seen to hit it, when known (trust.OpenNamed).
	as    trust.Cred
	asSet bool
}

type mapping struct {
	start, end uint64
	img        *image
	anon       bool // anonymous memory (perfdata.IsAnon): JIT code
}

// procMaps is one process's executable mappings, sorted by start and not
// overlapping.
type procMaps struct {
	maps []mapping
	last int // index of the last hit, for runs of samples in one image
	// parent is the process this one forked from. A child's address space
	// starts as its parent's, but the parent's MMAP2 records may reach us
	// after the FORK (they come from another CPU's ring), so the child
	// looks them up through the parent rather than copying them.
	parent *procMaps
	// id is who the process is (uid, gid, start time), once known: its
	// JIT data files are judged by it, also after it has exited.
	id      perfevent.Identity
	idKnown bool
}

// images follows which executable mappings every process has, so that
// the BUILD_ID feature can name exactly the images samples hit, as perf
// record does. Mappings replaced by an exec stay until something is
// mapped over them: a missed image would cost a build-id, a stale one
// only an extra entry.
type images struct {
	byName    map[string]*image
	procs     map[uint32]*procMaps
	kernelHit bool
}

func newImages() images {
	return images{byName: map[string]*image{}, procs: map[uint32]*procMaps{}}
}

func (im *images) proc(pid uint32) *procMaps {
	p := im.procs[pid]
	if p == nil {
		p = &procMaps{}
		im.procs[pid] = p
	}
	return p
}

// mmap adds [start, end) of name to pid, cutting away what it maps over;
// anon says it is anonymous memory.
func (im *images) mmap(pid uint32, start, end uint64, name string, anon bool) {
	if end <= start {
		return
	}
	img := im.byName[name]
	if img == nil {
		img = &image{name: name}
		im.byName[name] = img
	}
	p := im.proc(pid)
	kept := p.maps[:0:0]
	for _, m := range p.maps {
		if m.end <= start || m.start >= end {
			kept = append(kept, m)
			continue
		}
		if m.start < start {
			kept = append(kept, mapping{m.start, start, m.img, m.anon})
		}
		if m.end > end {
			kept = append(kept, mapping{end, m.end, m.img, m.anon})
		}
	}
	kept = append(kept, mapping{start, end, img, anon})
	sort.Slice(kept, func(i, j int) bool { return kept[i].start < kept[j].start })
	p.maps, p.last = kept, 0
}

// fork links a new process to its parent's mappings; a new thread
// shares them already.
func (im *images) fork(pid, ppid uint32) {
	if pid == ppid {
		return
	}
	im.proc(pid).parent = im.proc(ppid)
}

// maxForkDepth bounds the walk up the parents, which also guards against
// a loop made by pid reuse.
const maxForkDepth = 8

// hit marks the image of a user-space sample.
func (im *images) hit(pid uint32, ip uint64) {
	sampled := im.procs[pid]
	p := sampled
	for depth := 0; p != nil && depth < maxForkDepth; depth++ {
		if img := p.find(ip); img != nil {
			if !img.hit || !img.asSet && sampled.idKnown {
				img.hit = true
				img.as, img.asSet = trust.Unknown, sampled.idKnown
				if sampled.idKnown {
					img.as = trust.Cred{UID: sampled.id.UID, GID: sampled.id.GID}
				}
			}
			return
		}
		p = p.parent
	}
}

// find returns the image mapped at ip, or nil.
func (p *procMaps) find(ip uint64) *image {
	if len(p.maps) == 0 {
		return nil
	}
	if m := &p.maps[min(p.last, len(p.maps)-1)]; ip >= m.start && ip < m.end {
		return m.img
	}
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].end > ip })
	if i < len(p.maps) && ip >= p.maps[i].start {
		p.last = i
		return p.maps[i].img
	}
	return nil
}

// buildIDs reads the build-ids of the images samples hit: files that have
// none, or are gone, are left out as perf leaves them out.
func (im *images) buildIDs() []perfdata.BuildID {
	var l []perfdata.BuildID
	if im.kernelHit {
		if id, err := kernelBuildID(); err == nil {
			l = append(l, perfdata.BuildID{Misc: perfdata.MiscKernel | perfdata.MiscBuildIDSize, PID: -1, ID: id, Filename: "[kernel.kallsyms]"})
		}
	}
	var names []string
	for name, img := range im.byName {
		// Pseudo-files ([vdso], //anon) and deleted files have no file to read.
		if img.hit && strings.HasPrefix(name, "/") && !strings.HasSuffix(name, " (deleted)") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		// With the rights of the process that ran it: a process can name
		// any path by mapping its own file there in a mount namespace of
		// its own, and must not make root read a file it could not.
		id, err := elfBuildID(name, im.byName[name].as)
		if err != nil || id == nil {
			continue
		}
		l = append(l, perfdata.BuildID{Misc: perfdata.MiscUser | perfdata.MiscBuildIDSize, PID: -1, ID: id, Filename: name})
	}
	return l
}

const ntGNUBuildID = 3

// elfBuildID returns the GNU build-id note of an ELF file, read with c's
// rights (trust.OpenNamed: never blocking on a FIFO or opening a device),
// or nil if it has none.
func elfBuildID(path string, c trust.Cred) ([]byte, error) {
	tf, err := trust.OpenNamed(path, c, 0)
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	f, err := elf.NewFile(tf)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid ELF file", path)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 1<<20))
		if err != nil {
			return nil, fmt.Errorf("%s: notes: %w", path, err)
		}
		if id := findBuildID(b, f.ByteOrder); id != nil {
			return id, nil
		}
	}
	return nil, nil
}

// kernelBuildID reads the running kernel's build-id from its notes.
func kernelBuildID() ([]byte, error) {
	b, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return nil, err
	}
	if id := findBuildID(b, binary.NativeEndian); id != nil {
		return id, nil
	}
	return nil, errors.New("/sys/kernel/notes: no build-id")
}

// findBuildID walks ELF notes (namesz, descsz, type, name, desc; 4-byte
// aligned) for the GNU build-id.
func findBuildID(b []byte, bo binary.ByteOrder) []byte {
	for len(b) >= 12 {
		namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		nameEnd := (uint64(namesz) + 3) &^ 3
		descEnd := nameEnd + (uint64(descsz)+3)&^3
		if descEnd > uint64(len(b)) {
			return nil
		}
		if typ == ntGNUBuildID && bytes.Equal(b[:namesz], []byte("GNU\x00")) && descsz > 0 && descsz <= 64 {
			return slices.Clone(b[nameEnd : nameEnd+uint64(descsz)])
		}
		b = b[descEnd:]
	}
	return nil
}

package sampledb

import (
	"bytes"
	"fmt"
	"time"
)

// ImageID names an image the DB knows, in a Sample. IDs are cheap to
// compare and hash; the zero ImageID is no image. An ID carries a
// generation, so one used after ForgetProcess released its image is
// refused, not taken for the image that reuses its slot.
type ImageID uint32

const (
	idIndexBits = 24
	idIndexMask = 1<<idIndexBits - 1
	maxImages   = idIndexMask
)

func (id ImageID) index() uint32 { return uint32(id) & idIndexMask }

// FileIdent is the kernel's identity of a mapped file, as a PERF_RECORD_MMAP2
// gives it: the device, inode and inode generation, or the build-id
// (PERF_RECORD_MISC_MMAP_BUILD_ID) — the modern dcookie. The zero
// FileIdent is "unknown".
type FileIdent struct {
	Dev, Ino, Generation uint64
	// BuildID holds the build-id's bytes (a string, so FileIdent is a
	// map key).
	BuildID string
}

// ImageInfo is what the daemon knows of an image's contents; a new sample
// file's header keeps it, and a file whose header disagrees is another
// binary at the same path.
type ImageInfo struct {
	BuildID []byte
	Mtime   time.Time
}

// same reports whether two descriptions can be of one binary: by build-id
// where both have one, else by mtime where both have one.
func (a ImageInfo) same(b ImageInfo) bool {
	if len(a.BuildID) > 0 && len(b.BuildID) > 0 {
		return bytes.Equal(a.BuildID, b.BuildID)
	}
	if !a.Mtime.IsZero() && !b.Mtime.IsZero() {
		return a.Mtime.Equal(b.Mtime)
	}
	return true
}

type imageEntry struct {
	im   Image
	info ImageInfo
	gen  uint8
	// refs counts the open sample files that name the image, and one
	// more while the image is interned (found by its key).
	refs     int32
	interned bool
	live     bool
}

// images is the DB's image table: the interning of images by their name
// (with, for files and kernels, their identity) and the cache from file
// identities to images.
type images struct {
	e []imageEntry // index 0 unused
	// hot holds, per entry, what the ingest path checks (liveBit, the
	// kind and the generation), packed: e's entries are ten times
	// bigger, and the check should cost a cache line a few images share.
	hot     []uint32
	free    []uint32
	byIdent map[FileIdent]ImageID
	// byName holds, per image with its Kind and name (and range), the
	// images seen under it: more than one when binaries differ.
	byName map[Image][]ImageID
	byTGID map[uint32][]ImageID
}

func newImages() images {
	return images{
		e:       make([]imageEntry, 1),
		hot:     make([]uint32, 1),
		byIdent: map[FileIdent]ImageID{},
		byName:  map[Image][]ImageID{},
		byTGID:  map[uint32][]ImageID{},
	}
}

// get returns a live image's entry, nil for a stale or unknown ID.
func (t *images) get(id ImageID) *imageEntry {
	i := id.index()
	if i == 0 || i >= uint32(len(t.e)) {
		return nil
	}
	e := &t.e[i]
	if !e.live || uint32(e.gen) != uint32(id)>>idIndexBits {
		return nil
	}
	return e
}

const liveBit = 1 << 31

func packHot(e *imageEntry) uint32 {
	if !e.live {
		return 0
	}
	return liveBit | uint32(e.im.Kind)<<8 | uint32(e.gen)
}

// kind returns a live image's kind, false for a stale or unknown ID.
func (t *images) kind(id ImageID) (ImageKind, bool) {
	i := id.index()
	if i >= uint32(len(t.hot)) {
		return 0, false
	}
	h := t.hot[i]
	if h&liveBit == 0 || uint8(h) != uint8(uint32(id)>>idIndexBits) {
		return 0, false
	}
	return ImageKind(h >> 8), true
}

// intern returns the image for im with info, making one if none of the
// images of that name can be the same binary.
func (t *images) intern(im Image, ident FileIdent, info ImageInfo) (ImageID, error) {
	if ident != (FileIdent{}) {
		if id, ok := t.byIdent[ident]; ok && t.get(id) != nil {
			return id, nil
		}
	}
	if _, err := appendImage(nil, im, 0, "image"); err != nil {
		return 0, err
	}
	for _, id := range t.byName[im] {
		e := t.get(id)
		if e.info.same(info) {
			// Learn what the first sighting did not say.
			if len(e.info.BuildID) == 0 && len(info.BuildID) > 0 {
				e.info.BuildID = bytes.Clone(info.BuildID)
			}
			if e.info.Mtime.IsZero() {
				e.info.Mtime = info.Mtime
			}
			if ident != (FileIdent{}) {
				t.byIdent[ident] = id
			}
			return id, nil
		}
	}
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if len(t.e) > maxImages {
			return 0, fmt.Errorf("image table full (%d images)", maxImages)
		}
		t.e = append(t.e, imageEntry{})
		t.hot = append(t.hot, 0)
		i = uint32(len(t.e) - 1)
	}
	e := &t.e[i]
	*e = imageEntry{im: im, info: ImageInfo{BuildID: bytes.Clone(info.BuildID), Mtime: info.Mtime}, gen: e.gen, refs: 1, interned: true, live: true}
	t.hot[i] = packHot(e)
	id := ImageID(uint32(e.gen)<<idIndexBits | i)
	t.byName[im] = append(t.byName[im], id)
	if ident != (FileIdent{}) {
		t.byIdent[ident] = id
	}
	if im.anon() && im.TGID != All {
		t.byTGID[im.TGID] = append(t.byTGID[im.TGID], id)
	}
	return id, nil
}

func (t *images) ref(id ImageID) {
	if e := t.get(id); e != nil {
		e.refs++
	}
}

// unref drops a reference; the last one frees the slot for another image
// (with the next generation).
func (t *images) unref(id ImageID) {
	e := t.get(id)
	if e == nil {
		return
	}
	if e.refs--; e.refs > 0 {
		return
	}
	gen := e.gen + 1
	*e = imageEntry{gen: gen}
	t.hot[id.index()] = 0
	t.free = append(t.free, id.index())
}

// forget stops interning an image: the next lookup of its name makes a new
// one. Sample files still open keep it until they close.
func (t *images) forget(id ImageID) {
	if e := t.get(id); e != nil && e.interned {
		t.drop(id, e)
		for k, x := range t.byIdent {
			if x == id {
				delete(t.byIdent, k)
			}
		}
	}
}

// forgetProcess forgets the anonymous and JIT images of a process (they
// have no file identity, so byIdent holds none of them).
func (t *images) forgetProcess(tgid uint32) {
	for _, id := range t.byTGID[tgid] {
		if e := t.get(id); e != nil && e.interned && e.im.anon() && e.im.TGID == tgid {
			t.drop(id, e)
		}
	}
	delete(t.byTGID, tgid)
}

func (t *images) drop(id ImageID, e *imageEntry) {
	e.interned = false
	ids := t.byName[e.im]
	for j, x := range ids {
		if x == id {
			ids = append(ids[:j], ids[j+1:]...)
			break
		}
	}
	if len(ids) == 0 {
		delete(t.byName, e.im)
	} else {
		t.byName[e.im] = ids
	}
	t.unref(id)
}

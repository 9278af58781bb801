package sampledb

// fileTable finds an sfile by its fileKey: open addressing with linear
// probing and the keys inline, so a lookup reads one or two cache lines
// and hashes a few integers (a Go map hashes the key's 28 bytes with
// AES and costs about twice as much on the ingest path).
type fileTable struct {
	slots []fileSlot
	n     int
}

type fileSlot struct {
	key fileKey
	sf  *sfile // nil: empty
}

func (k *fileKey) hash() uint64 {
	h := (uint64(k.app) | uint64(k.dep)<<32) * 0x9E3779B97F4A7C15
	h ^= (uint64(k.cg) | uint64(k.event)<<32) * 0xC2B2AE3D27D4EB4F
	h ^= (uint64(k.tgid) | uint64(k.tid)<<32) * 0x165667B19E3779F9
	h ^= uint64(k.cpu) * 0xD6E8FEB86659FD93
	return h ^ h>>31
}

func (t *fileTable) get(k *fileKey) *sfile {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := k.hash() & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.sf == nil || s.key == *k {
			return s.sf
		}
	}
}

func (t *fileTable) put(sf *sfile) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]fileSlot, max(64, 2*len(old)))
		t.n = 0
		for _, s := range old {
			if s.sf != nil {
				t.put(s.sf)
			}
		}
	}
	mask := uint64(len(t.slots) - 1)
	i := sf.key.hash() & mask
	for t.slots[i].sf != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = fileSlot{key: sf.key, sf: sf}
	t.n++
}

// remove deletes sf, shifting later slots of its probe run back so that
// no lookup stops early at the hole.
func (t *fileTable) remove(sf *sfile) {
	mask := uint64(len(t.slots) - 1)
	i := sf.key.hash() & mask
	for t.slots[i].sf != sf {
		if t.slots[i].sf == nil {
			return
		}
		i = (i + 1) & mask
	}
	t.slots[i] = fileSlot{}
	t.n--
	for j := (i + 1) & mask; t.slots[j].sf != nil; j = (j + 1) & mask {
		home := t.slots[j].key.hash() & mask
		// Move slot j into the hole at i if its home is not in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i], t.slots[j] = t.slots[j], fileSlot{}
			i = j
		}
	}
}

func (t *fileTable) len() int { return t.n }

// all returns the sfiles, in no order.
func (t *fileTable) all() []*sfile {
	out := make([]*sfile, 0, t.n)
	for _, s := range t.slots {
		if s.sf != nil {
			out = append(out, s.sf)
		}
	}
	return out
}

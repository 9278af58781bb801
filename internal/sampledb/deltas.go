package sampledb

// deltas is a sample file's counts not yet flushed, in memory: an
// open-addressing table of (key1, key2) to the count added since the last
// flush and the key's node in the file once known. Keys stay after a
// flush (with a delta of 0), so that a key counted again costs neither an
// insert here nor a chain walk in the file. It allocates only to grow.
type deltas struct {
	slots []deltaSlot
	n     int
	// dirty holds the slots with a delta, so a flush costs what changed.
	dirty []uint32
}

type deltaSlot struct {
	k1, k2 uint64
	delta  uint64
	node   uint32 // the key's node in the open file, 0 if not known
	used   bool
}

const minDeltaSlots = 16

// add counts n more of a key.
func (d *deltas) add(k1, k2, n uint64) {
	if 4*(d.n+1) > 3*len(d.slots) {
		d.grow()
	}
	mask := uint64(len(d.slots) - 1)
	for i := bucketOf(k1, k2, uint64(len(d.slots))); ; i = (i + 1) & mask {
		s := &d.slots[i]
		if !s.used {
			*s = deltaSlot{k1: k1, k2: k2, used: true}
			d.n++
		} else if s.k1 != k1 || s.k2 != k2 {
			continue
		}
		if s.delta == 0 {
			d.dirty = append(d.dirty, uint32(i))
		}
		s.delta += n
		return
	}
}

func (d *deltas) grow() {
	old := d.slots
	d.slots = make([]deltaSlot, max(minDeltaSlots, 2*len(old)))
	d.dirty = d.dirty[:0]
	mask := uint64(len(d.slots) - 1)
	for _, s := range old {
		if !s.used {
			continue
		}
		i := bucketOf(s.k1, s.k2, uint64(len(d.slots)))
		for d.slots[i].used {
			i = (i + 1) & mask
		}
		d.slots[i] = s
		if s.delta != 0 {
			d.dirty = append(d.dirty, uint32(i))
		}
	}
}

// pending is the sum of the deltas not yet flushed.
func (d *deltas) pending() uint64 {
	var n uint64
	for _, i := range d.dirty {
		n += d.slots[i].delta
	}
	return n
}

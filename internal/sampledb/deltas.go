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

// home is a key's first slot. The instructions of a hot loop lie close
// together, so the offset's 256-byte region is hashed and its place in
// the region kept: nearby keys share cache lines, and a loop's counts
// stay in a few of them however big the table grows.
func home(k1, k2, mask uint64) uint64 {
	return (bucketOf(k1>>8, k2, 1<<58)<<6 | k1>>2&63) & mask
}

// add counts n more of a key.
func (d *deltas) add(k1, k2, n uint64) {
	if len(d.slots) == 0 {
		d.grow()
	}
	mask := uint64(len(d.slots) - 1)
	for i := home(k1, k2, mask); ; i = (i + 1) & mask {
		s := &d.slots[i]
		if s.used {
			if s.k1 != k1 || s.k2 != k2 {
				continue
			}
		} else {
			// Only a new key can fill the table.
			if 4*(d.n+1) > 3*len(d.slots) {
				d.grow()
				d.add(k1, k2, n)
				return
			}
			*s = deltaSlot{k1: k1, k2: k2, used: true}
			d.n++
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
		i := home(s.k1, s.k2, mask)
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

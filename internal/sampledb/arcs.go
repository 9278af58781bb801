package sampledb

// The keys of a call-graph arc's ends: an offset in the end's image, as
// in a file of plain samples. An end in JIT memory (a {jit:HANDLER}
// image whose range is at most 4 GiB) keeps the sequence number of the
// code there too, as a plain sample does (seed 000): the offset in the
// low 32 bits and the sequence number in the high 32, 0 when it was not
// known or does not fit. Arcs written before ends kept them read as
// unknown generations.

// arcSeqMax bounds what ArcEnd packs: offsets below it, sequence
// numbers below it, ranges up to it.
const arcSeqMax = 1 << 32

// ArcEnd is the key of an arc's end at offset off in JIT memory of
// size bytes where the code of sequence number seq was live.
func ArcEnd(off, seq, size uint64) uint64 {
	if seq == 0 || seq >= arcSeqMax || off >= arcSeqMax || size > arcSeqMax {
		return off
	}
	return seq<<32 | off
}

// SplitArcEnd is the offset and the sequence number (0: unknown) of an
// arc's end whose key is key in image im.
func SplitArcEnd(im Image, key uint64) (off, seq uint64) {
	if im.Kind != ImageJIT || im.End-im.Start > arcSeqMax {
		return key, 0
	}
	return key & (arcSeqMax - 1), key >> 32
}

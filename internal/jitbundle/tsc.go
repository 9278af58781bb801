package jitbundle

import (
	"encoding/binary"
	"fmt"
)

// The recording's TSC calibration travels as an entry of its own, one per
// process that ran JIT code, beside that process's JIT data files: kind
// KindTSC, path TSCPath (no file has it), data count × (tsc u64, ns u64)
// little-endian, pairs of the time-stamp counter and CLOCK_MONOTONIC read
// together by the recorder when it started and when it stopped. JIT data
// stamped with the TSC (PyPy's log) is placed on the samples' clock by
// them.
const (
	KindTSC = "tsc"
	// KindPyPy is the kind of a PyPy log (PYPYLOG's file) jitprof record
	// embedded: kinds of JIT data are the names of the handlers that
	// read them (internal/anon).
	KindPyPy = "pypy"
	TSCPath  = "[tsc]"
	// MaxTSCPairs bounds the pairs DecodeTSC accepts.
	MaxTSCPairs = 1 << 12
)

// TSCPair is one reading of the TSC and of CLOCK_MONOTONIC (nanoseconds)
// at the same instant.
type TSCPair struct {
	TSC, Nanos uint64
}

// EncodeTSC encodes the data of a KindTSC entry.
func EncodeTSC(pairs []TSCPair) []byte {
	b := make([]byte, 0, 16*len(pairs))
	for _, p := range pairs {
		b = binary.LittleEndian.AppendUint64(b, p.TSC)
		b = binary.LittleEndian.AppendUint64(b, p.Nanos)
	}
	return b
}

// DecodeTSC decodes the data of a KindTSC entry.
func DecodeTSC(b []byte) ([]TSCPair, error) {
	if len(b)%16 != 0 || len(b)/16 > MaxTSCPairs {
		return nil, fmt.Errorf("jitbundle: TSC calibration of %d bytes, not up to %d pairs of 16: %w", len(b), MaxTSCPairs, ErrFormat)
	}
	pairs := make([]TSCPair, len(b)/16)
	for i := range pairs {
		pairs[i] = TSCPair{TSC: binary.LittleEndian.Uint64(b[16*i:]), Nanos: binary.LittleEndian.Uint64(b[16*i+8:])}
	}
	return pairs, nil
}

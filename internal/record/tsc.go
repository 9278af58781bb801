package record

import (
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/jitlog"
)

// tscClock is the recording's TSC calibration: the time-stamp counter and
// CLOCK_MONOTONIC read together when the recorder starts and again when
// it stops. JITs that stamp their data with the TSC (PyPy's log) are
// placed on the samples' clock by the two pairs; see internal/pypylog.
type tscClock struct {
	start jitbundle.TSCPair
	ok    bool // the machine has a TSC to read
}

func startTSC() tscClock {
	tsc, ns, ok := jitlog.TSCPair()
	return tscClock{start: jitbundle.TSCPair{TSC: tsc, Nanos: ns}, ok: ok}
}

// entries returns the calibration, read to now, as one entry per process
// that ran JIT code.
func (c tscClock) entries(pids []uint32) []jitbundle.Entry {
	if !c.ok || len(pids) == 0 {
		return nil
	}
	tsc, ns, _ := jitlog.TSCPair()
	data := jitbundle.EncodeTSC([]jitbundle.TSCPair{c.start, {TSC: tsc, Nanos: ns}})
	es := make([]jitbundle.Entry, len(pids))
	for i, pid := range pids {
		es[i] = jitbundle.Entry{PID: int(pid), Kind: jitbundle.KindTSC, Path: jitbundle.TSCPath, MTime: -1, Data: data}
	}
	return es
}

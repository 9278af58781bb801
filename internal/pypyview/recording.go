package pypyview

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/perfdata"
)

// Recording is what the loop view needs of a recording: one PyPy
// process's samples, and the log and TSC calibration jitprof record
// embedded for it.
type Recording struct {
	PID     uint32
	Comm    string
	Samples []Sample
	Log     []byte // nil when none was embedded
	LogPath string
	Clock   *pypylog.Clock // nil without a calibration
}

// ReadRecording reads pid's samples from a recording; pid 0 is the one
// PyPy process there: the one with an embedded log, or else the one
// whose command is pypy.
func ReadRecording(f *perfdata.File, pid uint32) (*Recording, error) {
	b, err := jitbundle.Load(f)
	if err != nil {
		return nil, err
	}
	comms := map[uint32]string{}
	samples := map[uint32][]Sample{}
	r := f.Records()
	r.SkipCallchains = true
	for r.Next() {
		switch v := r.Record().(type) {
		case *perfdata.Comm:
			if v.PID == v.TID || comms[v.PID] == "" {
				comms[v.PID] = v.Comm
			}
		case *perfdata.Sample:
			samples[v.PID] = append(samples[v.PID], Sample{Time: v.Time, IP: v.IP})
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if pid == 0 {
		var cands []uint32
		for _, e := range b.Entries(jitbundle.KindPyPy, 0) {
			if !slices.Contains(cands, uint32(e.PID)) {
				cands = append(cands, uint32(e.PID))
			}
		}
		if len(cands) == 0 {
			for p, c := range comms {
				if strings.HasPrefix(c, "pypy") && len(samples[p]) > 0 {
					cands = append(cands, p)
				}
			}
		}
		slices.Sort(cands)
		switch len(cands) {
		case 0:
			return nil, fmt.Errorf("no PyPy process with samples: record one with jitprof record, or name it with -p PID")
		case 1:
			pid = cands[0]
		default:
			return nil, fmt.Errorf("PyPy processes %v: say which with -p PID", cands)
		}
	}
	rec := &Recording{PID: pid, Comm: comms[pid], Samples: samples[pid]}
	if len(rec.Samples) == 0 {
		return nil, fmt.Errorf("no samples of pid %d", pid)
	}
	for _, e := range b.Entries(jitbundle.KindPyPy, int(pid)) {
		// The file is mapped, and unmapped when it is closed.
		rec.Log, rec.LogPath = bytes.Clone(e.Data), e.Path
	}
	for _, e := range b.Entries(jitbundle.KindTSC, int(pid)) {
		if rec.Clock, err = anon.TSCClock(e.Data); err != nil {
			return nil, fmt.Errorf("pid %d: the TSC calibration: %w", pid, err)
		}
	}
	return rec, nil
}

// LogName is the log of the recording's PyPy process that the pattern
// --pypylog takes names: %d is its pid.
func (r *Recording) LogName(pattern string) string {
	return strings.Replace(pattern, "%d", strconv.Itoa(int(r.PID)), 1)
}

// Loops is what WriteLoops shows.
type Loops struct {
	Input string // the recording's name
	Rec   *Recording
	// Log is the log given by hand, named Source; nil: the one the
	// recording embedded.
	Log        io.Reader
	Source     string
	Traces     bool    // each trace with its hot operations
	JSON       bool    // JSON, always with the traces, instead of text
	MinPercent float64 // hide loops and bridges under this share
}

// WriteLoops writes the loop view of o's PyPy process: its hot loops,
// bridges under their loop, and with Traces the optimised traces.
func WriteLoops(w io.Writer, o Loops) error {
	rec, raw, source := o.Rec, o.Log, o.Source
	if raw == nil {
		if rec.Log == nil {
			return fmt.Errorf("%s: pid %d has no PyPy log embedded (jitprof record embeds the log of PYPYLOG=jit-backend-addr,jit-log-opt:FILE): give it with --pypylog FILE", o.Input, rec.PID)
		}
		raw, source = bytes.NewReader(rec.Log), rec.LogPath+" (embedded in the recording)"
	}
	l, err := pypylog.Read(raw, pypylog.Options{Ops: true})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if len(l.Codes) == 0 {
		return fmt.Errorf("%s names no loops: PYPYLOG needs jit-backend-addr (and jit-log-opt for the traces)", source)
	}
	v, err := Build(l, rec.Samples, Options{Clock: rec.Clock, MinPercent: o.MinPercent})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if o.JSON {
		return WriteJSON(w, v)
	}
	// Loops are named by PyPy's log: escaped for the terminal.
	out := termtext.NewWriter(w)
	defer out.Flush()
	clock := "times by the recording's TSC calibration"
	if rec.Clock == nil {
		clock = "no TSC calibration in the recording (jitprof record writes one): code re-generated at an address is charged to the last there"
	}
	fmt.Fprintf(out, "# %d samples of pid %d (%s) in %s, %d (%.2f%%) in PyPy's loops and bridges; log %s, %s\n",
		v.Samples, rec.PID, rec.Comm, o.Input, v.InCode, percentOf(v.InCode, v.Samples), source, clock)
	for _, warning := range l.Warnings {
		fmt.Fprintf(out, "# warning: %s\n", warning)
	}
	fmt.Fprintf(out, "# Percentages are of the process's samples")
	if v.Hidden > 0 {
		fmt.Fprintf(out, "; %d samples in loops and bridges under %.2g%% are not shown", v.Hidden, o.MinPercent)
	}
	if !o.Traces {
		fmt.Fprintf(out, ". --traces shows each trace with its hot operations")
	}
	fmt.Fprintln(out, ".")
	return WriteText(out, v, o.Traces)
}

func percentOf(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

package pathtime

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jitprof/jitprof/internal/jitlogdb"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/jitlog"
)

// JitlogReport is what WriteJitlog accounts: a jitlog database's
// enter/exit events and, with a recording, one process's samples.
type JitlogReport struct {
	Database jitlogdb.Database
	Nested   bool // an enter inside a region is a call, not a jump
	// Input names the recording whose samples Samples reads ("": none);
	// PID is whose (0: the database's process).
	Input   string
	PID     int
	Samples func(pid uint32) (*Sampled, error)
	Warn    io.Writer // a torn database's warning
}

// WriteJitlog accounts the enter/exit events of a jitlog database,
// read as a stream (it may be bigger than memory), and writes the table
// of its regions, generations as reports name them ("name [gen N]").
func WriteJitlog(w io.Writer, o JitlogReport) error {
	var (
		acc      *Accountant
		regions  = map[uint64]Region{}
		events   int
		sampled  *Sampled
		opts     = Options{Nested: o.Nested}
		eventErr error
		path     = o.Database.Path
	)
	err := jitlogdb.Scan(o.Database, "pathtime", o.Warn, func(rec jitlog.Record) error {
		if h, ok := rec.(*jitlog.Header); ok {
			if o.Input != "" {
				who := uint32(o.PID)
				if who == 0 {
					who = h.PID
				}
				var err error
				if sampled, err = o.Samples(who); err != nil {
					return err
				}
				opts.Samples = sampled.Samples
				opts.InRegion = func(region, ip uint64) bool {
					r, ok := regions[region]
					return ok && ip >= r.Addr && ip-r.Addr < r.Size
				}
			}
			acc = NewAccountant(opts)
			return nil
		}
		e, ok := FromJitlog(rec, regions)
		if !ok {
			return nil
		}
		events++
		if eventErr = acc.Add(e); eventErr != nil {
			return eventErr
		}
		return nil
	})
	if err != nil {
		if err == eventErr {
			return fmt.Errorf("%s: %w", path, err)
		}
		return err
	}
	res, err := acc.Result()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "# %s: %d events, %d regions entered, %v in compiled regions\n", path, events, len(res.Totals), time.Duration(res.Total))
	fmt.Fprintf(w, "# Time is wall time from enter to exit: it includes time the thread was preempted or blocked.")
	if sampled == nil {
		fmt.Fprintf(w, " -i perf.data adds on-CPU time from a recording's samples.\n")
	} else {
		fmt.Fprintf(w, "\n# On-CPU is from %d %s samples of pid %d in %s, %d of them in compiled regions: %v.\n",
			len(sampled.Samples), sampled.Event, sampled.PID, o.Input, res.Samples, time.Duration(res.OnCPU))
		fmt.Fprintf(w, "# Self are the samples in the region's own code; the others were in what it called (the kernel included).\n")
	}
	if res.Unmatched > 0 {
		fmt.Fprintf(w, "# %d exits outside any region (logging started inside one)\n", res.Unmatched)
	}
	return WriteTable(w, res, Table{Sampled: sampled != nil, Name: func(region uint64) string {
		if r, ok := regions[region]; ok {
			return fmt.Sprintf("%s [gen %d] %#x+%d", r.Name, r.Seq, r.Addr, r.Size)
		}
		return "[gen " + strconv.FormatUint(region, 10) + "]"
	}})
}

// PyPyReport is what WritePyPy accounts: a PyPy log's
// jit-profile-enter/exit events and, with a recording, the PyPy
// process's samples.
type PyPyReport struct {
	Path  string // the log's, for messages
	Log   io.Reader
	Inner InnerBridges
	// Input names the recording Recording reads ("": none).
	Input     string
	Recording func() (*PyPyRecording, error)
}

// WritePyPy accounts the jit-profile-enter/exit events of a PyPy log,
// in the log's TSC ticks; with a recording, in nanoseconds by its TSC
// calibration, and with the samples of PyPy's threads.
func WritePyPy(w io.Writer, o PyPyReport) error {
	path := o.Path
	l, err := pypylog.Read(o.Log, pypylog.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(l.Profile) == 0 {
		return fmt.Errorf("%s: no jit-profile-enter or jit-profile-exit events: released PyPys do not write them; jitprof report --anon-samples --pypylog %s names loops and bridges by samples", path, path)
	}
	p := NewPyPy(l, o.Inner)
	opts := p.Options
	unit := "ticks"
	toTime := func(t uint64) uint64 { return t }
	var sampled *Sampled
	if o.Input != "" {
		rec, err := o.Recording()
		if err != nil {
			return err
		}
		sampled = rec.Sampled
		unit, toTime = "ns", rec.Clock.Nanos
		opts.Samples = sampled.Samples
		opts.InRegion = func(r, ip uint64) bool {
			c, ok := p.Code(r)
			return ok && ip >= c.Start && ip < c.End
		}
	}
	acc := NewAccountant(opts)
	for _, e := range l.Profile {
		ev := p.Event(e)
		ev.Time = toTime(ev.Time)
		if err := acc.Add(ev); err != nil {
			return fmt.Errorf("%s: line %d: %w", path, e.Line, err)
		}
	}
	res, err := acc.Result()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	policy := map[InnerBridges]string{IgnoreInner: "charged to their loops", RecordInner: "regions of their own"}[o.Inner]
	total := strconv.FormatUint(res.Total, 10) + " ticks"
	if unit == "ns" {
		total = time.Duration(res.Total).String()
	}
	fmt.Fprintf(w, "# %s: %d events, %d regions entered, %s in loops and bridges; inner bridges %s\n", path, len(l.Profile), len(res.Totals), total, policy)
	for _, warning := range l.Warnings {
		fmt.Fprintf(w, "# warning: %s\n", warning)
	}
	fmt.Fprintf(w, "# Time is wall time from enter to exit, call_assembler's included in the caller's: it includes time the thread was preempted or blocked.")
	if sampled == nil {
		fmt.Fprintf(w, " In TSC ticks; -i perf.data (recorded by jitprof record) gives nanoseconds and on-CPU time.\n")
	} else {
		fmt.Fprintf(w, "\n# On-CPU is from %d %s samples of pid %d in %s, %d of them in loops and bridges: %v.\n",
			len(sampled.Samples), sampled.Event, sampled.PID, o.Input, res.Samples, time.Duration(res.OnCPU))
	}
	return WriteTable(w, res, Table{Sampled: sampled != nil, Ticks: unit == "ticks", Name: func(region uint64) string {
		name := p.Name(region)
		if c, ok := p.Code(region); ok {
			name = fmt.Sprintf("%s %#x+%d", name, c.Start, c.End-c.Start)
		}
		return name
	}})
}

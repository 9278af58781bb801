package pathtime

import (
	"fmt"
	"io"
	"time"

	"github.com/jitprof/jitprof/internal/termtext"
)

// Table says how WriteTable shows a Result.
type Table struct {
	// Sampled adds the columns of the samples (Options.Samples): on-CPU
	// time, samples, self samples; times are then nanoseconds.
	Sampled bool
	// Ticks says the times are TSC ticks (PyPy's log without a
	// recording to calibrate it), shown as numbers; otherwise they are
	// nanoseconds, shown as durations.
	Ticks bool
	// Name names a region.
	Name func(region uint64) string
}

// WriteTable writes res's regions, one line each, under a line of
// column names.
func WriteTable(w io.Writer, res *Result, t Table) error {
	switch {
	case t.Sampled:
		fmt.Fprintf(w, "%8s %14s %14s %8s %8s %9s  %s\n", "Time%", "Time", "On-CPU", "Samples", "Self", "Entries", "Region")
	case t.Ticks:
		fmt.Fprintf(w, "%8s %16s %9s  %s\n", "Time%", "Ticks", "Entries", "Region")
	default:
		fmt.Fprintf(w, "%8s %14s %9s  %s\n", "Time%", "Time", "Entries", "Region")
	}
	for _, r := range res.Totals {
		var err error
		name := termtext.Escape(t.Name(r.Region)) // the JIT's words
		switch {
		case t.Sampled:
			_, err = fmt.Fprintf(w, "%7.2f%% %14v %14v %8d %8d %9d  %s\n", r.Percent, time.Duration(r.Time), time.Duration(r.OnCPU), r.Samples, r.Self, r.Entries, name)
		case t.Ticks:
			_, err = fmt.Fprintf(w, "%7.2f%% %16d %9d  %s\n", r.Percent, r.Time, r.Entries, name)
		default:
			_, err = fmt.Fprintf(w, "%7.2f%% %14v %9d  %s\n", r.Percent, time.Duration(r.Time), r.Entries, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/jitprof/jitprof/internal/diff"
	"github.com/jitprof/jitprof/internal/flamegraph"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// DiffOptions say what comparison to write.
type DiffOptions struct {
	// Options say how each input is loaded: the JIT options and
	// filters apply to every one.
	Options
	Diff   diff.Options
	Format Format // text, json, csv, pprof or html
	// Period adds each input's period to a text comparison (perf diff
	// -p).
	Period bool
}

// DiffFormat checks that f can write a comparison of n inputs: text,
// JSON and CSV of any number, pprof and html of a baseline and one
// other.
func DiffFormat(f Format, n int) error {
	switch f {
	case Text, JSON, CSV:
		return nil
	case Pprof, HTML:
		if n != 2 {
			return fmt.Errorf("--format %s compares the baseline with one profile, not %d", f, n-1)
		}
		return nil
	}
	return fmt.Errorf("--format %s: a comparison is written as text, json, csv, pprof or html", f)
}

// Diff loads srcs, the baseline first, and writes their comparison (as
// perf diff) to the writer open returns, which it closes. Each source is
// loaded as a report loads it: JIT samples left out, with a note, unless
// JIT code is named. pprof and html compare the baseline with one other
// source. Diff owns srcs.
func Diff(ctx context.Context, srcs []Source, o DiffOptions, open func() (io.WriteCloser, error)) error {
	closeAll := func(srcs []Source) {
		for _, s := range srcs {
			s.Close()
		}
	}
	if err := DiffFormat(o.Format, len(srcs)); err != nil {
		closeAll(srcs)
		return err
	}
	keys := []string{report.KeyDSO, report.KeySym}
	if len(o.Diff.Keys) > 0 {
		var err error
		if keys, err = report.SortKeys(o.Diff.Keys); err != nil {
			closeAll(srcs)
			return err
		}
	}
	o.Lines = slices.Contains(keys, report.KeySrcline)
	o.LeafOnly = o.Format != Pprof && o.Format != HTML
	o.ExcludeJIT = true
	var loaded []*Loaded
	defer func() {
		for _, l := range loaded {
			l.Close()
		}
	}()
	var notes, files []string
	for i, src := range srcs {
		l, err := Load(ctx, src, o.Options)
		if err != nil {
			closeAll(srcs[i+1:])
			return err
		}
		loaded = append(loaded, l)
		files = append(files, l.Name)
		if l.Note != "" {
			notes = append(notes, l.Name+": "+l.Note)
		}
	}
	if o.Log != nil && o.Format != Text && o.Format != JSON {
		for _, n := range notes {
			fmt.Fprintf(o.Log, "jitprof %s: note: %s\n", o.Command, n)
		}
	}
	w, err := open()
	if err != nil {
		return err
	}
	defer w.Close()
	switch o.Format {
	case Pprof:
		pp, err := diff.Pprof(loaded[0].Profile, loaded[1].Profile, o.Diff.Exact)
		if err != nil {
			return err
		}
		if err := pp.Write(w); err != nil {
			return err
		}
	case HTML:
		err := diff.HTML(w, loaded[0].Profile, loaded[1].Profile, o.Diff.Exact, flamegraph.Options{Title: files[1], BaseTitle: files[0], Notes: notes})
		if err != nil {
			return err
		}
	default:
		profiles := make([]*profile.Profile, len(loaded))
		for i, l := range loaded {
			profiles[i] = l.Profile
		}
		res, err := diff.Diff(profiles, o.Diff)
		if errors.Is(err, diff.ErrNoEvents) {
			return fmt.Errorf("%s and %s: %w", files[0], files[1], diff.ErrNoEvents)
		}
		if err != nil {
			return err
		}
		wo := diff.WriteOptions{Files: files, Period: o.Period, Notes: notes}
		switch o.Format {
		case JSON:
			err = diff.WriteJSON(w, res, wo)
		case CSV:
			err = diff.WriteCSV(w, res, wo)
		default:
			err = diff.WriteText(w, res, wo)
		}
		if err != nil {
			return err
		}
	}
	return w.Close()
}

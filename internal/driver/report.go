package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/flamegraph"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/termtext"
)

// Format is a report's output format.
type Format string

// The formats.
const (
	Text   Format = "text"
	JSON   Format = "json"
	CSV    Format = "csv"
	Pprof  Format = "pprof"  // pprof's protocol buffer, gzipped
	Folded Format = "folded" // flame-graph stacks, as stackcollapse-perf
	HTML   Format = "html"   // one self-contained flame graph page (internal/flamegraph)
	OTLP   Format = "otlp"   // an OpenTelemetry profiles request, protobuf (internal/otlp)
)

// ParseFormat returns the format named s.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Text, JSON, CSV, Pprof, Folded, HTML, OTLP:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q", s)
}

// ReportOptions say what report to write.
type ReportOptions struct {
	Options
	// Report are the text, JSON and CSV report's options; its Sort is
	// set from SortKeys, Symbols, Separate and Merge (View).
	Report report.Options
	Format Format
	// FoldedPeriods writes each folded stack's period instead of its
	// samples.
	FoldedPeriods bool
	// GraphAsked says -g was given: a recording without callchains is
	// then an error, where --children alone falls back to no trees, as
	// perf does.
	GraphAsked bool
	View       View
	// OTLP is what an OTLP request says besides the profile.
	OTLP otlp.Options
}

// CheckSessionGraph checks the options of report --session -g (-g
// given, GraphAsked): a session keeps caller-callee arcs, not stacks,
// so its call graph is OProfile's (callers and callees of each function)
// in text or JSON. The other formats need whole stacks, which arcs
// cannot be joined into without inventing them; rows are functions, so
// sort keys and perf's filters (which the profile specification's tgid:,
// tid:, cpu: and image: do for sessions) do not apply.
func (o *ReportOptions) CheckSessionGraph() error {
	if !o.GraphAsked || !o.Report.Chains.Graph {
		return nil
	}
	v, f := o.View, o.Filter
	switch {
	case o.Format != Text && o.Format != JSON:
		return fmt.Errorf("--session -g: a session's call graph is caller-callee arcs, written as text or json, not %s (which needs whole stacks: record them with jitprof record -g)", o.Format)
	case len(v.SortKeys) > 0 || v.Separate != "" || v.Merge != "":
		return errors.New("--session -g: the call graph is by function: --sort, --separate and --merge do not apply (select with the profile specification: tgid:, tid:, cpu:, image:)")
	case len(f.Comms)+len(f.PIDs)+len(f.TIDs)+len(f.DSOs)+len(f.CPUs) > 0:
		return errors.New("--session -g: select samples with the profile specification (tgid:, tid:, cpu:, image:), not perf's filters")
	}
	return nil
}

// View is opreport's and perf report's choice of rows: sort keys, or
// the keys -l, --separate and --merge make.
type View struct {
	SortKeys []string // perf's --sort, already checked (report.SortKeys)
	Symbols  bool     // -l: symbols too
	Separate string   // opreport's --separate: thread, cpu, kernel, lib, all
	Merge    string   // opreport's --merge: tid, tgid, cpu, lib, all
}

// Keys turns the view into sort keys: --separate adds the keys it
// separates by, --merge takes them away again. As in OProfile, lib
// separates library samples by application ("app / lib" rows) and
// kernel does the same for kernel samples, implying lib; all is
// thread,cpu,lib,kernel.
func (v View) Keys() []string {
	var keys []string
	if len(v.SortKeys) > 0 {
		keys = slices.Clone(v.SortKeys)
	} else {
		app := ""
		for _, s := range strings.Split(v.Separate, ",") {
			switch s {
			case "thread":
				keys = append(keys, report.KeyPID, report.KeyTID)
			case "cpu":
				keys = append(keys, report.KeyCPU)
			case "lib":
				if app == "" {
					app = report.KeyUserApp
				}
			case "kernel":
				app = report.KeyApp
			case "all":
				keys = append(keys, report.KeyPID, report.KeyTID, report.KeyCPU)
				app = report.KeyApp
			}
		}
		if app != "" {
			keys = append(keys, app)
		}
		keys = append(keys, report.KeyDSO)
		if v.Symbols {
			keys = append(keys, report.KeySym)
		}
	}
	if v.Merge == "" {
		return keys
	}
	drop := map[string]bool{}
	for _, m := range strings.Split(v.Merge, ",") {
		switch m {
		case "tid":
			drop[report.KeyTID] = true
		case "tgid":
			drop[report.KeyPID] = true
		case "cpu":
			drop[report.KeyCPU] = true
		case "lib":
			drop[report.KeyApp], drop[report.KeyUserApp] = true, true
		case "all":
			drop[report.KeyTID], drop[report.KeyPID], drop[report.KeyCPU] = true, true, true
			drop[report.KeyApp], drop[report.KeyUserApp] = true, true
		}
	}
	var out []string
	for _, k := range keys {
		if !drop[k] {
			out = append(out, k)
		}
	}
	return out
}

// ErrTerminal is the error of pprof's format written to a terminal.
var ErrTerminal = errors.New("--format pprof writes gzip-compressed bytes, not for a terminal: give -o FILE (such as -o profile.pb.gz) or redirect standard output")

// ErrTerminalOTLP is the error of OTLP's format written to a terminal.
var ErrTerminalOTLP = errors.New("--format otlp writes protobuf bytes, not for a terminal: give -o FILE (such as -o profile.otlp.pb) or redirect standard output")

// Report loads src's profile and writes the report o asks for to the
// writer open returns; Report closes it. The note that JIT samples were
// left out goes in a text or JSON report's header (and at the end of a
// text report, where the eye lands), and for the other formats to
// o.Log. A writer that can be discarded (Abort) is, when the report
// fails.
func Report(ctx context.Context, src Source, o ReportOptions, open func() (io.WriteCloser, error)) (err error) {
	ro := o.Report
	ro.Sort = o.View.Keys()
	o.Lines = slices.Contains(ro.Sort, report.KeySrcline)
	// A flat report needs no callchains.
	o.LeafOnly = !ro.Children && !ro.Chains.Graph && o.Format != Pprof && o.Format != Folded && o.Format != HTML && o.Format != OTLP
	o.Times = o.Format == OTLP
	o.ExcludeJIT = true
	o.RequireCallchains = ro.Chains.Graph && o.GraphAsked
	o.Arcs = o.RequireCallchains
	l, err := Load(ctx, src, o.Options)
	if err != nil {
		return err
	}
	defer l.Close()
	if ro.Chains.Graph && !l.Callchains {
		ro.Chains.Graph = false // --children alone, as perf
	}
	switch o.Format {
	case JSON:
		ro.Format = report.JSON
	case CSV:
		ro.Format = report.CSV
	}
	if l.Note != "" {
		if o.Format == Text || o.Format == JSON {
			ro.Notes = append(ro.Notes, l.Notes...)
		} else if o.Log != nil {
			fmt.Fprintf(o.Log, "jitprof %s: note: %s\n", o.Command, l.Note)
		}
	}
	w, err := open()
	if err != nil {
		return err
	}
	defer closeOutput(w, &err)
	// Text for a terminal, whose names processes chose, is escaped
	// (internal/termtext); JSON, HTML and pprof escape their own.
	var out io.Writer = w
	text := termtext.NewWriter(w)
	if o.Format == Text || o.Format == CSV || o.Format == Folded {
		out = text
	}
	switch o.Format {
	case OTLP:
		b, err := otlp.Encode(l.Profile, o.OTLP)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	case Pprof:
		pp, err := report.Pprof(l.Profile, 0)
		if err != nil {
			return err
		}
		if err := pp.Write(w); err != nil {
			return err
		}
	case HTML:
		var notes []string
		if l.Note != "" {
			notes = append(notes, l.Note)
		}
		if err := flamegraph.Write(w, l.Profile, flamegraph.Options{Title: src.Name(), Notes: notes}); err != nil {
			return err
		}
	case Folded:
		value := report.FoldedSamples
		if o.FoldedPeriods {
			value = report.FoldedPeriods
		}
		if err := report.WriteFolded(out, l.Profile, 0, value); err != nil {
			return err
		}
	default:
		if err := report.Write(out, l.Profile, ro); err != nil {
			return err
		}
		if l.Note != "" && o.Format == Text {
			fmt.Fprintf(out, "# %s\n", l.Note)
		}
	}
	return text.Flush()
}

// OTLPRequest is a profile as an OTLP request, and what it holds.
type OTLPRequest struct {
	Bytes     []byte // an ExportProfilesServiceRequest, protobuf
	Samples   uint64
	Processes int
}

// EncodeOTLP loads src's profile, every sample with its stack and, where
// the source keeps it, its time, and encodes it as an OTLP request (what
// jitprof push sends). As a report, it leaves JIT samples out unless
// JIT code is named, and says so to o.Log.
func EncodeOTLP(ctx context.Context, src Source, o Options, eo otlp.Options) (OTLPRequest, error) {
	o.Times, o.LeafOnly, o.ExcludeJIT = true, false, true
	l, err := Load(ctx, src, o)
	if err != nil {
		return OTLPRequest{}, err
	}
	defer l.Close()
	if l.Note != "" && o.Log != nil {
		fmt.Fprintf(o.Log, "jitprof %s: note: %s\n", o.Command, l.Note)
	}
	b, err := otlp.Encode(l.Profile, eo)
	if err != nil {
		return OTLPRequest{}, err
	}
	req := OTLPRequest{Bytes: b}
	pids := map[uint32]bool{}
	for _, e := range l.Profile.Entries {
		req.Samples += e.Count
		pids[l.Profile.Threads[e.Thread].PID] = true
	}
	req.Processes = len(pids)
	return req, nil
}

// Annotate loads src's profile with each frame's address and writes
// the annotation ao asks for to the writer open returns, which it
// closes, or discards (Abort) when the annotation fails.
func Annotate(ctx context.Context, src Source, o Options, ao annotate.Options, open func() (io.WriteCloser, error)) (err error) {
	o.Addresses = true
	l, err := Load(ctx, src, o)
	if err != nil {
		return err
	}
	defer l.Close()
	if l.Files.Symbolizer != nil {
		ao.Symbolizer = l.Files.Symbolizer
	}
	if l.Files.OpenSource != nil {
		ao.OpenSource = l.Files.OpenSource
	}
	w, err := open()
	if err != nil {
		return err
	}
	defer closeOutput(w, &err)
	out := termtext.NewWriter(w) // names and source lines, escaped
	if err := annotate.Write(out, l.Profile, ao); err != nil {
		return fmt.Errorf("%s: %w", l.Name, err)
	}
	return out.Flush()
}

// closeOutput closes an output once written, with *err the error of
// writing it: an output that can be discarded (a file put in place only
// when complete, internal/outfile) is, when there is one; the error of
// closing is the caller's otherwise.
func closeOutput(w io.WriteCloser, err *error) {
	if a, ok := w.(interface{ Abort() }); ok && *err != nil {
		a.Abort()
		return
	}
	if cerr := w.Close(); *err == nil {
		*err = cerr
	}
}

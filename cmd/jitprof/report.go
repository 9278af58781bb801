package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/replay"
	"github.com/jitprof/jitprof/internal/report"
)

func init() {
	register(&command{name: "report", summary: "report samples per image, symbol and callchain (like opreport and perf report)", run: runReport})
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var opts report.Options
	input := fs.String("i", "perf.data", "input `file`")
	fs.StringVar(input, "input", "perf.data", "same as -i")
	symbols := fs.Bool("l", false, "list symbols (adds sym to the sort keys)")
	sortKeys := fs.String("sort", "", "sort `keys`, comma-separated: comm, pid (the process; perf's pid is the thread: tid), tid, dso, symbol (sym), srcline, cpu, app, userapp, or prefixes as perf takes them (default dso, or dso,sym with -l)")
	fs.StringVar(sortKeys, "s", "", "same as --sort")
	separate := fs.String("separate", "", "separate samples by `what`, as opreport: thread, cpu, kernel, lib (comma-separated)")
	merge := fs.String("merge", "", "merge samples the sort keys would separate: `what` of tid, tgid, cpu, lib, all")
	var graph callGraphFlags
	graph.register(fs)
	// perf report options whose behaviour is this report's anyway, taken
	// so that a perf command line works as it is.
	fs.Bool("stdio", false, "accepted for perf report's sake: the report is text on standard output unless --format or -o")
	fs.Bool("n", false, "accepted for perf report's sake (--show-nr-samples): the Samples column is always there")
	fs.Bool("show-nr-samples", false, "same as -n")
	fs.Float64Var(&opts.PercentLimit, "percent-limit", 0, "hide rows below this `percent`")
	// Filters, spelled as perf report's.
	var comms, pids, tids, dsos, cpus string
	for _, name := range []string{"comms", "comm", "c"} {
		fs.StringVar(&comms, name, "", "only the samples of these `commands` (comma-separated); --comms, --comm and -c are one")
	}
	fs.StringVar(&pids, "pid", "", "only the samples of these `pids` (comma-separated)")
	fs.StringVar(&tids, "tid", "", "only the samples of these `tids` (comma-separated)")
	for _, name := range []string{"dsos", "dso", "d"} {
		fs.StringVar(&dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); --dsos, --dso and -d are one")
	}
	for _, name := range []string{"cpu", "C"} {
		fs.StringVar(&cpus, name, "", "only the samples of these `cpus` (e.g. 0-3,5), percentages of theirs as perf's; --cpu and -C are one")
	}
	format := fs.String("format", "text", "output `format`: text, json, csv, pprof (.pb.gz) or folded (flame-graph stacks)")
	output := fs.String("o", "", "write to `file` instead of standard output")
	foldedPeriods := fs.Bool("folded-periods", false, "folded: write each stack's period (event count) instead of its samples")
	var jit anonFlags
	jit.register(fs)
	var sess sessionFlags // the daemon's sessions: session.go
	sess.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof report [-i FILE] [-l] [-g [caller|callee]] [-s|--sort KEYS] [--format text|json|csv|pprof|folded] [-o FILE]")
		printFlags(fs)
	}
	pos, err := parseArgs(fs, joinCallGraphSpec(args))
	if err != nil {
		return err
	}
	if len(pos) > 0 && !sess.enabled() {
		fs.Usage()
		return errUsage
	}
	if err := graph.apply(&opts); err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return errUsage
	}
	filter, err := reportFilter(comms, pids, tids, dsos, cpus)
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return errUsage
	}
	switch *format {
	case "text", "pprof", "folded":
	case "json":
		opts.Format = report.JSON
	case "csv":
		opts.Format = report.CSV
	default:
		fmt.Fprintf(fs.Output(), "jitprof report: unknown format %q\n", *format)
		return errUsage
	}
	if *sortKeys != "" {
		keys, err := report.SortKeys(strings.Split(*sortKeys, ","))
		if err != nil {
			fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
			return errUsage
		}
		*sortKeys = strings.Join(keys, ",")
	}
	opts.Sort = sortList(*sortKeys, *symbols, *separate, *merge)
	if *format == "pprof" && *output == "" && isTerminal(os.Stdout) {
		// As go tool pprof, which will not either.
		return errors.New("--format pprof writes gzip-compressed bytes, not for a terminal: give -o FILE (such as -o profile.pb.gz) or redirect standard output")
	}

	sopts := replay.Options{Lines: contains(opts.Sort, report.KeySrcline), Progress: progressBar(os.Stderr),
		LeafOnly: !opts.Children && !opts.Chains.Graph && *format != "pprof" && *format != "folded"} // a flat report needs no callchains
	load := jit.load
	if sess.enabled() {
		load = sess.loader(&jit, pos)
	}
	p, binder, done, err := load("report", *input, sopts)
	if err != nil {
		return err
	}
	defer done()
	if opts.Chains.Graph && !report.HasCallchains(p) {
		if graph.set {
			return fmt.Errorf("%s: -g: the recording has no callchains (record with -g)", *input)
		}
		opts.Chains.Graph = false // --children alone, as perf
	}
	if err := filter.Apply(p); err != nil {
		return fmt.Errorf("%s: --cpu: %w", *input, err)
	}
	var excluded report.Excluded
	if binder == nil {
		excluded = report.ExcludeAnon(p)
	}
	var leftOut string
	if excluded.Samples > 0 {
		leftOut = fmt.Sprintf("%d of %d samples (%.2f%% of the event) are in JIT code (anonymous executable memory) and left out, so percentages are of the rest: add --anon-samples to include and name them",
			excluded.Samples, excluded.Samples+p.Events[0].Count, 100*float64(excluded.Period)/float64(max(excluded.TotalPeriod, 1)))
		if *format == "text" || *format == "json" {
			opts.Notes = append(opts.Notes, leftOut) // in the report's header
		} else {
			fmt.Fprintf(os.Stderr, "jitprof report: note: %s\n", leftOut)
		}
	}
	w := os.Stdout
	if *output != "" {
		if w, err = os.Create(*output); err != nil {
			return err
		}
		defer w.Close()
	}
	switch *format {
	case "pprof":
		pp, err := report.Pprof(p, 0)
		if err != nil {
			return err
		}
		err = pp.Write(w)
		if err != nil {
			return err
		}
		return w.Close()
	case "folded":
		value := report.FoldedSamples
		if *foldedPeriods {
			value = report.FoldedPeriods
		}
		err = report.WriteFolded(w, p, 0, value)
	default:
		err = report.Write(w, p, opts)
		if err == nil && leftOut != "" && *format == "text" {
			fmt.Fprintf(w, "# %s\n", leftOut) // and at the end, where the eye lands
		}
	}
	if err != nil {
		return err
	}
	return w.Close()
}

// sortList turns opreport's view flags into sort keys: --separate adds the
// keys it separates by, --merge takes them away again. As in OProfile,
// lib separates library samples by application ("app / lib" rows) and
// kernel does the same for kernel samples, implying lib; all is
// thread,cpu,lib,kernel.
func sortList(sortKeys string, symbols bool, separate, merge string) []string {
	var keys []string
	if sortKeys != "" {
		keys = strings.Split(sortKeys, ",")
	} else {
		app := ""
		for _, s := range strings.Split(separate, ",") {
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
		if symbols {
			keys = append(keys, report.KeySym)
		}
	}
	if merge == "" {
		return keys
	}
	drop := map[string]bool{}
	for _, m := range strings.Split(merge, ",") {
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

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// progressBar returns a progress callback that draws on w when w is a
// terminal, and nil otherwise, so pipes and files stay clean.
func progressBar(w *os.File) func(done, total int64) {
	st, err := w.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pc := int(done * 100 / total)
		if pc == last {
			return
		}
		last = pc
		n := pc / 4
		fmt.Fprintf(w, "\r[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", 25-n), pc)
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// reportFilter parses report's filter flags.
func reportFilter(comms, pids, tids, dsos, cpus string) (report.Filter, error) {
	var f report.Filter
	list := func(s string) []string {
		var l []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				l = append(l, x)
			}
		}
		return l
	}
	f.Comms, f.DSOs = list(comms), list(dsos)
	for _, x := range []struct {
		s   string
		dst *[]uint32
	}{{pids, &f.PIDs}, {tids, &f.TIDs}} {
		for _, id := range list(x.s) {
			n, err := strconv.ParseUint(id, 10, 32) // 0 too: the idle task
			if err != nil {
				return f, fmt.Errorf("bad id %q in %q", id, x.s)
			}
			*x.dst = append(*x.dst, uint32(n))
		}
	}
	if cpus != "" {
		var err error
		if f.CPUs, err = linux.ParseCPUList(cpus); err != nil {
			return f, err
		}
	}
	return f, nil
}

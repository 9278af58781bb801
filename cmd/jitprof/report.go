package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/session"
	"github.com/jitprof/jitprof/perfdata"
)

func init() {
	register(&command{name: "report", summary: "report samples per image, symbol and callchain (like opreport and perf report)", run: runReport})
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var opts report.Options
	input := fs.String("i", "perf.data", "input `file`")
	symbols := fs.Bool("l", false, "list symbols (adds sym to the sort keys)")
	sortKeys := fs.String("sort", "", "sort `keys`, comma-separated: comm, pid, tid, dso, sym, srcline, cpu (default dso, or dso,sym with -l)")
	separate := fs.String("separate", "", "separate samples by `what`, as opreport: thread, cpu, kernel, lib (comma-separated)")
	merge := fs.String("merge", "", "merge samples the sort keys would separate: `what` of tid, tgid, cpu, lib, all")
	fs.BoolVar(&opts.Children, "g", false, "callgraph: children (inclusive) and self percentages from the callchains")
	fs.BoolVar(&opts.Children, "callgraph", false, "same as -g")
	fs.Float64Var(&opts.PercentLimit, "percent-limit", 0, "hide rows below this `percent`")
	format := fs.String("format", "text", "output `format`: text, json, csv, pprof (.pb.gz) or folded (flame-graph stacks)")
	output := fs.String("o", "", "write to `file` instead of standard output")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof report [-i FILE] [-l] [-g] [--sort KEYS] [--format text|json|csv]")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
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
	opts.Sort = sortList(*sortKeys, *symbols, *separate, *merge)

	f, err := perfdata.Open(*input)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := session.Load(f, session.Options{Lines: contains(opts.Sort, report.KeySrcline), Progress: progressBar(os.Stderr)})
	if err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	for _, w := range f.Warnings() {
		fmt.Fprintf(os.Stderr, "jitprof report: %s: warning: %s\n", *input, w)
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
		pp, err := p.Pprof(0)
		if err != nil {
			return err
		}
		err = pp.Write(w)
		if err != nil {
			return err
		}
		return w.Close()
	case "folded":
		err = p.WriteFolded(w, 0)
	default:
		err = report.Write(w, p, opts)
	}
	if err != nil {
		return err
	}
	return w.Close()
}

// sortList turns opreport's view flags into sort keys: --separate adds the
// keys it separates by, --merge takes them away again.
func sortList(sortKeys string, symbols bool, separate, merge string) []string {
	var keys []string
	if sortKeys != "" {
		keys = strings.Split(sortKeys, ",")
	} else {
		for _, s := range strings.Split(separate, ",") {
			switch s {
			case "thread":
				keys = append(keys, report.KeyPID, report.KeyTID)
			case "cpu":
				keys = append(keys, report.KeyCPU)
			case "all":
				keys = append(keys, report.KeyPID, report.KeyTID, report.KeyCPU)
			}
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
		case "all":
			drop[report.KeyTID], drop[report.KeyPID], drop[report.KeyCPU] = true, true, true
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

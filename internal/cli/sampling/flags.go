package sampling

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/record"
)

// Flags are what to sample and how often, as perf record and perf top
// spell them: -e, -F (or max), -c, -a, -p, -t, -C, -m and their long
// forms (--event, --freq, --count, --all-cpus, --pid, --tid, --cpu,
// --mmap-pages). jitprof record, top and the daemon take them, parsed
// one way into a record.Config.
type Flags struct {
	// DefaultFreq is the frequency -F's help names as the default; 0 is
	// record's 4000 Hz.
	DefaultFreq      uint64
	cfg              record.Config
	pids, tids, cpus string
}

// Register defines the flags on fs.
func (sf *Flags) Register(fs *flag.FlagSet) {
	c := &sf.cfg
	freq := func(s string) error {
		if s == "max" {
			c.Freq, c.MaxFreq = 0, true
			return nil
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v == 0 {
			return fmt.Errorf("want a frequency in Hz or max, not %q", s)
		}
		c.Freq, c.MaxFreq = v, false
		return nil
	}
	fs.StringVar(&c.Event, "e", perfevent.DefaultEvent, "`event` to sample: cpu-clock, task-clock, a hardware event, rNNNN or subsys:tracepoint, with :u :k :p modifiers")
	fhelp := "sample at this `frequency` in Hz, or max (default 4000; a tracepoint: every hit unless -F or -c)"
	if sf.DefaultFreq != 0 {
		fhelp = fmt.Sprintf("sample at this `frequency` in Hz, or max (default %d)", sf.DefaultFreq)
	}
	fs.Func("F", fhelp, freq)
	fs.Uint64Var(&c.Period, "c", 0, "sample every `period` events (instead of -F)")
	fs.BoolVar(&c.SystemWide, "a", false, "profile every CPU")
	fs.StringVar(&sf.pids, "p", "", "profile existing `pids` (comma-separated) and their new threads and children")
	fs.StringVar(&sf.tids, "t", "", "profile existing `tids` (comma-separated)")
	fs.StringVar(&sf.cpus, "C", "", "profile only these `cpus` (e.g. 0-3,5)")
	fs.IntVar(&c.Pages, "m", 0, "ring buffer `pages` per CPU, a power of two (default 128)")
	// perf's long spellings.
	fs.StringVar(&c.Event, "event", perfevent.DefaultEvent, "same as -e")
	fs.Func("freq", "same as -F", freq)
	fs.Uint64Var(&c.Period, "count", 0, "same as -c")
	fs.BoolVar(&c.SystemWide, "all-cpus", false, "same as -a")
	fs.StringVar(&sf.pids, "pid", "", "same as -p")
	fs.StringVar(&sf.tids, "tid", "", "same as -t")
	fs.StringVar(&sf.cpus, "cpu", "", "same as -C")
	fs.IntVar(&c.Pages, "mmap-pages", 0, "same as -m")
}

// Config returns the sampling part of a recorder's configuration, once
// fs is parsed: an error when -F and -c are both given or a list does
// not parse. cmd is the command line's command, which a target runs
// beside (perf record -a -- sleep 5) or alone is the target; targets
// says how many of -a, -p and -t were given.
func (sf *Flags) Config(fs *flag.FlagSet) (cfg record.Config, targets int, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["c"] || set["count"]) && (set["F"] || set["freq"]) {
		return cfg, 0, fmt.Errorf("-F and -c cannot both be given")
	}
	cfg = sf.cfg
	if cfg.PIDs, err = IDList(sf.pids); err == nil {
		cfg.TIDs, err = IDList(sf.tids)
	}
	if err == nil && sf.cpus != "" {
		cfg.CPUs, err = linux.ParseCPUList(sf.cpus)
	}
	if err != nil {
		return cfg, 0, err
	}
	for _, on := range []bool{cfg.SystemWide, len(cfg.PIDs) > 0, len(cfg.TIDs) > 0} {
		if on {
			targets++
		}
	}
	return cfg, targets, nil
}

// IDList parses a comma-separated list of pids or tids, as -p and -t
// take them.
func IDList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var l []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad id %q in %q", f, s)
		}
		l = append(l, n)
	}
	return l, nil
}

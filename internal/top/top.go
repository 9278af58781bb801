package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/perfdata"
)

// Options configure a live view.
type Options struct {
	// Record says what to sample, as for jitprof record; without a
	// target or command, every CPU.
	Record record.Config
	JIT    JIT
	View   View
	// Delay is the time between refreshes (perf top's -d).
	Delay time.Duration
	// Zero shows each interval's samples alone (perf top's -z) instead
	// of decaying the earlier ones by an eighth at each refresh.
	Zero bool
	// Entries bounds the rows of a plain report (-E); 0 means all.
	Entries int
	// Stdio prints a plain report each interval to Out instead of the
	// terminal UI.
	Stdio bool
	Out   io.Writer
	// Title says what is sampled, for the header.
	Title string
}

// Run samples as o says and shows it until ctx is done, the user quits
// or, for a plain report, the command ends.
func Run(ctx context.Context, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &state{o: o, notices: o.Title}
	o.Record.Notice = st.notice
	o.Record.ForgetExited = true // a view runs for days; samples are named as they come
	ready := make(chan *live, 1)
	done := make(chan error, 1)
	go func() {
		_, _, err := record.Stream(ctx, o.Record, func(_ *record.Recorder, attr *perfdata.Attr, _ *perfdata.TracingData) (record.Sink, error) {
			l := newLive(attr, o.JIT, o.View.Callchains())
			ready <- l
			return l, nil
		})
		done <- err
	}()
	var l *live
	select {
	case l = <-ready:
	case err := <-done:
		return err
	}
	defer l.close()
	st.l = l
	var err error
	if o.Stdio {
		err = st.stdio(ctx, done)
	} else {
		err = runTUI(ctx, st, done)
	}
	cancel()
	if serr := st.wait(done); err == nil {
		err = serr
	}
	return err
}

// state is a view's state between refreshes.
type state struct {
	o Options
	l *live

	mu      sync.Mutex
	notices string
	ended   bool  // the recording ended
	endErr  error // and why
}

// notice keeps what the recorder tells, for the header.
func (st *state) notice(msg string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.notices = strings.TrimSpace(st.notices + "; " + msg)
}

// end notes that the recording ended, with err, and names the JIT
// samples left waiting.
func (st *state) end(err error) {
	st.l.flush()
	st.mu.Lock()
	st.ended, st.endErr = true, err
	st.mu.Unlock()
}

// wait waits for the recording to end, once.
func (st *state) wait(done <-chan error) error {
	st.mu.Lock()
	if st.ended {
		err := st.endErr
		st.mu.Unlock()
		return err
	}
	st.mu.Unlock()
	err := <-done
	st.mu.Lock()
	st.ended, st.endErr = true, err
	st.mu.Unlock()
	return err
}

// refresh takes a snapshot and computes the rows of view; p is the
// snapshot, holding what the view shows.
func (st *state) refresh(view *View) (p *profile.Profile, rows []Row, stats Stats, err error) {
	p, _, stats = st.l.snapshot(st.o.Zero)
	rows, err = view.rows(p)
	return p, rows, stats, err
}

// stdio prints a plain report every interval until ctx is done or the
// recording ends, and once more then.
func (st *state) stdio(ctx context.Context, done <-chan error) error {
	t := time.NewTicker(st.o.Delay)
	defer t.Stop()
	view := st.o.View
	for {
		var end error
		ended := false
		select {
		case <-ctx.Done():
			return nil
		case end = <-done:
			ended = true
			st.end(end)
		case <-t.C:
		}
		p, rows, stats, err := st.refresh(&view)
		if err != nil {
			return err
		}
		if err := st.writePlain(st.o.Out, &view, p, rows, stats); err != nil {
			return err
		}
		if ended {
			return end
		}
	}
}

// writePlain writes one refresh as text: a header, then the rows as a
// report's; with callchains, as report -g writes p, children and trees.
func (st *state) writePlain(w io.Writer, view *View, p *profile.Profile, rows []Row, stats Stats) error {
	fmt.Fprintf(w, "# %s\n", st.header(stats))
	if z := view.describe(""); z != "" {
		fmt.Fprintf(w, "# zoomed into %s\n", z)
	}
	if view.Callchains() {
		opts := view.report()
		opts.Rows = st.o.Entries
		if err := report.Write(w, p, opts); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	if st.o.Entries > 0 && len(rows) > st.o.Entries {
		rows = rows[:st.o.Entries]
	}
	title, lines := table(view, rows)
	fmt.Fprintf(w, "#%s\n", title[1:])
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// table lays rows out as a report's columns: the share (with children,
// theirs first), the samples, then the keys, each as wide as its widest
// cell but the last.
func table(view *View, rows []Row) (title string, lines []string) {
	titles := view.titles()
	width := make([]int, len(titles))
	for i, t := range titles {
		width[i] = len(t)
	}
	for _, r := range rows {
		for i, k := range r.Keys[:len(r.Keys)-1] {
			width[i] = max(width[i], len(k))
		}
	}
	cells := func(keys []string) string {
		var b strings.Builder
		for i, k := range keys {
			if i < len(keys)-1 {
				fmt.Fprintf(&b, "%-*s  ", width[i], k)
			} else {
				b.WriteString(k)
			}
		}
		return b.String()
	}
	title = fmt.Sprintf("  Overhead  Samples  %s", cells(titles))
	if view.Children {
		title = "  Children      Self  Samples  " + cells(titles)
	}
	for _, r := range rows {
		share := fmt.Sprintf("  %7.2f%%", r.Percent)
		if view.Children {
			share = fmt.Sprintf("  %7.2f%%  %7.2f%%", r.ChildPercent, r.Percent)
		}
		lines = append(lines, fmt.Sprintf("%s %8d  %s", share, r.Samples, cells(r.Keys)))
	}
	return title, lines
}

// header is the first line of a refresh.
func (st *state) header(s Stats) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	mode := "decaying by 1/8 each refresh"
	if st.o.Zero {
		mode = "this interval only"
	}
	h := fmt.Sprintf("jitprof top: %s; %d samples in the last %v (%s), %d in all, %d lost", st.notices, s.Recent, st.o.Delay, mode, s.Samples, s.Lost)
	if st.ended {
		h += "; sampling ended"
		if st.endErr != nil {
			h += ": " + st.endErr.Error()
		}
	}
	return h
}

// annotation is the annotation of row r of the last snapshot: its
// function's instructions with their samples, JIT code's from the bytes
// its JIT logged.
func (st *state) annotation(view *View, r *Row) (string, error) {
	col := view.keyColumn(report.KeySym)
	if col < 0 {
		return "", errors.New("the rows have no symbol: sort by sym (s) to annotate")
	}
	_, name := report.SplitLevel(r.Keys[col])
	o := annotate.Options{Symbol: name, Source: true, Symbolizer: st.l.sym}
	if c := view.keyColumn(report.KeyDSO); c >= 0 {
		o.DSO = r.Keys[c]
	}
	p := st.l.peek()
	var b strings.Builder
	if err := annotate.Write(&b, p, o); err != nil {
		return "", err
	}
	return b.String(), nil
}

// callchains is the tree of the callchains of row r of the counts as
// they are, as report -g prints it under the row.
func (st *state) callchains(view *View, r *Row) (string, error) {
	if !view.Callchains() {
		return "", errors.New("no callchains: start top with -g")
	}
	p := st.l.peek()
	if err := view.filter(p); err != nil {
		return "", err
	}
	opts := view.report()
	opts.Chains.Graph = true // also with -g none, which prints no trees
	reps, err := report.Compute(p, opts)
	if err != nil {
		return "", err
	}
	for _, rep := range reps {
		for i := range rep.Rows {
			if slices.Equal(rep.Rows[i].Keys, r.Keys) {
				var b strings.Builder
				err := report.WriteTree(&b, p, &rep, &rep.Rows[i], opts)
				if b.Len() == 0 && err == nil {
					err = fmt.Errorf("no callchain of the row is above the threshold (%.1f%%)", opts.Chains.Threshold)
				}
				return b.String(), err
			}
		}
	}
	return "", errors.New("the row has no samples left")
}

// OwnProcesses lists the processes of the user running jitprof: what an
// unprivileged view samples by default.
func OwnProcesses() ([]int, error) {
	pids, err := linux.Host.PIDs()
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	var own []int
	for _, pid := range pids {
		if id, err := linux.Host.Identity(pid); err == nil && id.UID == uid {
			own = append(own, pid)
		}
	}
	return own, nil
}

// Target completes cfg's target as perf top does: with none, every CPU
// for root; for another user, who may not sample every CPU, their own
// processes (and the children they start), in user space only, which
// the returned notice says.
func Target(cfg *record.Config) (notice string, err error) {
	if len(cfg.PIDs)+len(cfg.TIDs) > 0 || cfg.SystemWide || len(cfg.Command) > 0 {
		return "", nil
	}
	if os.Geteuid() == 0 {
		cfg.SystemWide = true
		return "", nil
	}
	pids, err := OwnProcesses()
	if err != nil {
		return "", err
	}
	if len(pids) == 0 {
		return "", errors.New("not root, and no process of yours to sample")
	}
	cfg.PIDs = pids
	if !strings.HasSuffix(cfg.Event, ":u") {
		cfg.Event = strings.TrimSuffix(cfg.Event, ":k") + ":u"
	}
	return fmt.Sprintf("not root: your %d processes and the children they start, user space only (root sees every process and the kernel)", len(pids)), nil
}

// Describe says what cfg samples, for the header, with the notice
// Target gave.
func Describe(cfg *record.Config, notice string) string {
	var what string
	switch {
	case len(cfg.PIDs) > 0 && notice == "":
		what = fmt.Sprintf("pids %v", cfg.PIDs)
	case len(cfg.TIDs) > 0:
		what = fmt.Sprintf("tids %v", cfg.TIDs)
	case len(cfg.Command) > 0 && !cfg.SystemWide:
		what = strings.Join(cfg.Command, " ")
	case cfg.SystemWide && len(cfg.CPUs) > 0:
		what = fmt.Sprintf("CPUs %v", cfg.CPUs)
	case cfg.SystemWide:
		what = "every CPU"
	}
	rate := "4000 Hz"
	switch {
	case cfg.MaxFreq:
		rate = "the most frequent rate"
	case cfg.Period > 0:
		rate = fmt.Sprintf("every %d events", cfg.Period)
	case cfg.Freq > 0:
		rate = fmt.Sprintf("%d Hz", cfg.Freq)
	}
	t := fmt.Sprintf("%s at %s, %s", cfg.Event, rate, what)
	if notice != "" {
		t += " (" + notice + ")"
	}
	return t
}

package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

// filtered returns a copy of p with f applied.
func filtered(t *testing.T, p *profile.Profile, f Filter) *profile.Profile {
	t.Helper()
	q := *p
	q.Entries, q.Events = slices.Clone(p.Entries), slices.Clone(p.Events)
	if err := f.Apply(&q); err != nil {
		t.Fatal(err)
	}
	return &q
}

// TestFilterApply checks which filters shrink the totals: only --cpu,
// which perf applies before it totals.
func TestFilterApply(t *testing.T) {
	p := profiletest.Sample()
	all := p.Events[0]
	cases := []struct {
		name           string
		f              Filter
		samples, total uint64 // of the event after Apply
		kept           uint64 // samples left in the entries
	}{
		{"none", Filter{}, 11, all.Total, 11},
		{"cpu 0", Filter{CPUs: []int{0}}, 7, 1750000, 7},
		{"cpu 1 and comm worker", Filter{CPUs: []int{1}, Comms: []string{"worker"}}, 4, 1000000, 1},
		{"comm app", Filter{Comms: []string{"app"}}, 11, all.Total, 8},
		{"tid 8", Filter{TIDs: []uint32{8}}, 11, all.Total, 3},
		{"pid 7", Filter{PIDs: []uint32{7}}, 11, all.Total, 11},
		{"pid 8", Filter{PIDs: []uint32{8}}, 11, all.Total, 0},
		{"dso by base name", Filter{DSOs: []string{"app"}}, 11, all.Total, 8},
		{"dso by path", Filter{DSOs: []string{"/usr/bin/app", "[kernel.kallsyms]"}}, 11, all.Total, 9},
	}
	for _, c := range cases {
		q := filtered(t, p, c.f)
		var kept uint64
		for _, e := range q.Entries {
			kept += e.Count
		}
		if q.Events[0].Count != c.samples || q.Events[0].Total != c.total || kept != c.kept {
			t.Errorf("%s: event %d samples, total %d; %d samples kept; want %d, %d; %d",
				c.name, q.Events[0].Count, q.Events[0].Total, kept, c.samples, c.total, c.kept)
		}
	}
	if p.Events[0] != all || len(p.Entries) != 4 {
		t.Error("filtered changed the profile it copied")
	}

	noCPU := profiletest.Sample()
	for i := range noCPU.Entries {
		noCPU.Entries[i].CPU = -1
	}
	if err := (&Filter{CPUs: []int{0}}).Apply(noCPU); !errors.Is(err, ErrNoCPU) {
		t.Errorf("--cpu on samples without CPUs: %v, want ErrNoCPU", err)
	}
}

// checkFilters compares each filter with perf report's on the same
// system-wide recording of busy, over the rows of images. Each is
// sorted by keys that hold what it filters, where perf's rows are
// exactly the filtered samples (see Filter).
func checkFilters(t *testing.T, p *profile.Profile, data, busy string, images []string) {
	comm := filepath.Base(busy)
	// The workload's busiest thread, and its process.
	busiest := map[uint32]uint64{}
	var pid, tid uint32
	for _, e := range p.Entries {
		th := p.Threads[e.Thread]
		if p.Strings[th.Comm] != comm {
			continue
		}
		busiest[th.TID] += e.Count
		if busiest[th.TID] > busiest[tid] {
			pid, tid = th.PID, th.TID
		}
	}
	if tid == 0 {
		t.Fatalf("no samples of %s", comm)
	}
	// A CPU but the first, whose samples are not all, and one the
	// workload ran on: on a loaded machine another CPU may have only
	// other processes' samples, and --cpu with --comms would then show
	// nothing to compare.
	cpu := 0
	for _, e := range p.Entries {
		if e.CPU > 0 && p.Strings[p.Threads[e.Thread].Comm] == comm {
			cpu = int(e.CPU)
			break
		}
	}
	for _, c := range []struct {
		flags    []string
		f        Filter
		lead     string // a key before dso,sym: comm or pid (perf's pid is the thread)
		children bool
	}{
		// Two names, two images: perf drops the column of a key
		// filtered by one.
		{[]string{"--comms=" + comm + ",true"}, Filter{Comms: []string{comm, "true"}}, KeyComm, false},
		{[]string{"--comms=" + comm + ",true", "--children"}, Filter{Comms: []string{comm, "true"}}, KeyComm, true},
		{[]string{"--pid=" + fmt.Sprint(pid)}, Filter{PIDs: []uint32{pid}}, KeyPID, false},
		{[]string{"--tid=" + fmt.Sprint(tid)}, Filter{TIDs: []uint32{tid}}, KeyPID, false},
		{[]string{"--dsos=" + busy + ",libc.so.6"}, Filter{DSOs: []string{busy, "libc.so.6"}}, "", false},
		{[]string{"--cpu=" + fmt.Sprint(cpu)}, Filter{CPUs: []int{cpu}}, "", false},
		{[]string{"--cpu=" + fmt.Sprint(cpu), "--children"}, Filter{CPUs: []int{cpu}}, "", true},
		{[]string{"--cpu=" + fmt.Sprint(cpu), "--comms=" + comm + ",true"}, Filter{CPUs: []int{cpu}, Comms: []string{comm, "true"}}, KeyComm, false},
	} {
		what := strings.Join(c.flags, " ")
		keys := []string{KeyDSO, KeySym}
		perfKeys := "dso,sym"
		if c.lead != "" {
			keys = append([]string{c.lead}, keys...)
			if c.lead == KeyPID {
				keys[0] = KeyTID // perf's pid key is the thread
			}
			perfKeys = c.lead + "," + perfKeys
		}
		q := filtered(t, p, c.f)
		reps, err := Compute(q, Options{Sort: keys, Children: c.children})
		if err != nil {
			t.Fatal(err)
		}
		ours := map[string]float64{}
		for _, r := range reps[0].Rows {
			v := r.Self
			if c.children {
				v = r.Children
			}
			n := len(r.Keys)
			ours[strings.Join(r.Keys[:n-2], " ")+"|"+rowName(filepath.Base(r.Keys[n-2]), r.Keys[n-1])] += pct(v, reps[0].Event.Total)
		}
		args := append([]string{"report", "-i", data, "--stdio", "--no-children", "--sort", perfKeys, "-q", "--percent-limit", "0", "-g", "none"}, c.flags...)
		theirs := parsePerfLead(t, perftest.Run(t, "perf", args...), len(keys)-2)
		keepImages(ours, images)
		keepImages(theirs, images)
		if len(ours) == 0 || len(theirs) == 0 {
			t.Errorf("%s: %d rows of ours and %d of perf's in the workload's and the system's images", what, len(ours), len(theirs))
		}
		flag := what
		if c.children {
			flag = "--children" // compare's name for children columns
		}
		compare(t, flag, ours, theirs)
		if t.Failed() {
			t.Logf("the comparison above was of %s", what)
		}
	}
}

// parsePerfLead is parsePerf for rows with lead keys before dso,sym: a
// comm, or perf's pid key (tid:comm), given as the tid.
func parsePerfLead(t *testing.T, out string, lead int) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3+lead || !strings.HasSuffix(fields[0], "%") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(fields[0], "%"), 64)
		if err != nil {
			t.Fatalf("perf report line %q: %v", line, err)
		}
		rest := fields[1:]
		if strings.HasSuffix(rest[0], "%") { // --children: children, then self
			rest = rest[1:]
		}
		keys := rest[:lead]
		for i, k := range keys {
			if tid, _, ok := strings.Cut(k, ":"); ok {
				if _, err := strconv.Atoi(tid); err == nil {
					keys[i] = tid
				}
			}
		}
		rest = rest[lead:]
		i := slices.IndexFunc(rest, func(s string) bool { return s == "[.]" || s == "[k]" })
		if i < 1 {
			t.Fatalf("perf report line %q: no [.] or [k]", line)
		}
		m[strings.Join(keys, " ")+"|"+rowName(strings.Join(rest[:i], " "), strings.Join(rest[i:], " "))] += v
	}
	return m
}

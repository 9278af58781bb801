package daemon

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/ingest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/perfdata"
)

// TestCollectorRounds runs the daemon's Sink without root or events: the
// records of a round as the rings hold them, the Tracker fed after the
// Sink as the Recorder feeds it. Samples are counted at the end of the
// round, the one in no mapping as unresolved, lost samples as lost;
// clients are answered between rounds, a dump at the end of the round
// after it, and flushes; a stop ends the recording; an exited process
// is let go of a round after its exit.
func TestCollectorRounds(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the records are encoded little-endian, as the rings of this machine hold them")
	}
	const pid = 5000000 // above any pid_max: no process of the machine's
	attr := cpuClock
	stopped := false
	d := &daemon{cfg: Config{Dir: t.TempDir(), FlushEvery: time.Hour, MaxJITData: ingest.DefaultMaxJITData, MaxJITDataPerProcess: ingest.DefaultMaxJITDataPerProcess,
		MaxSampleFiles: ingest.DefaultMaxSampleFiles, MaxSampleData: ingest.DefaultMaxSampleData},
		start: time.Now(), reqs: make(chan request, 1), stop: func() { stopped = true }}
	procs := process.New()
	var forgot []uint32
	if err := d.open(procs, func(p uint32) { forgot = append(forgot, p); procs.Forget(p) }, attr); err != nil {
		t.Fatal(err)
	}
	defer d.close()
	common := func(tm uint64) perfdata.Common {
		return perfdata.Common{Misc: perfdata.MiscUser, Attr: attr, PID: pid, TID: pid, Time: tm}
	}
	feed := func(recs ...perfdata.Record) {
		t.Helper()
		for _, rec := range recs {
			raw, err := perfdata.AppendRecord(nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Raw(raw); err != nil {
				t.Fatal(err)
			}
			procs.Take(rec)
		}
	}
	sample := func(tm, ip uint64) *perfdata.Sample {
		return &perfdata.Sample{Common: common(tm), IP: ip, Period: 1000000}
	}
	ask := func(op string) response {
		t.Helper()
		reply := make(chan response, 1)
		d.reqs <- request{Op: op, reply: reply}
		if err := d.EndRound(nil); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-reply:
			return r
		default:
			t.Fatalf("%s: not answered at the end of the round", op)
			return response{}
		}
	}
	// A sample before its mapping, in the same round: another CPU's ring.
	feed(sample(20, 0x401000),
		&perfdata.Mmap{Common: common(10), Version2: true, PID: pid, TID: pid, Addr: 0x400000, Len: 0x10000, Prot: 5, Ino: 42, Filename: "/usr/bin/work"},
		sample(30, 0x402000), sample(40, 0x900000),
		&perfdata.Lost{Common: common(45), Lost: 3})
	if err := d.EndRound(nil); err != nil {
		t.Fatal(err)
	}
	// A dump is answered at the end of the round after the one it came
	// in, a drain that began after it: what was sampled before it and
	// drained after that round's drain is in the counts it writes.
	reply := make(chan response, 1)
	d.reqs <- request{Op: "dump", reply: reply}
	if err := d.EndRound(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-reply:
		t.Fatalf("dump answered in the round it came in (%+v): what was sampled between the round's drain and the request is not in its counts", r)
	default:
	}
	feed(sample(42, 0x403000))
	if err := d.EndRound(nil); err != nil {
		t.Fatal(err)
	}
	var r response
	select {
	case r = <-reply:
	default:
		t.Fatal("dump: not answered at the end of the round after it")
	}
	if r.Error != "" || r.Status == nil {
		t.Fatalf("dump: %+v", r)
	}
	if st := r.Status; st.Samples != 4 || st.Unresolved != 1 || st.Lost != 3 || st.Flushed != 3 || st.LastFlush.IsZero() {
		t.Errorf("after two rounds: %d samples, %d unresolved, %d lost, %d flushed; want 4, 1, 3 and 3", st.Samples, st.Unresolved, st.Lost, st.Flushed)
	}
	feed(&perfdata.Exit{Common: common(50), PID: pid, PPID: 1, TID: pid, PTID: 1, ExitTime: 50})
	if err := d.EndRound(nil); err != nil {
		t.Fatal(err)
	}
	if len(forgot) != 0 {
		t.Errorf("forgot %v in the round of the exit: a sample of another CPU can still come", forgot)
	}
	if r := ask("stop"); r.Error != "" || !stopped || !d.stopped {
		t.Errorf("stop: %+v; recording stopped %v", r, stopped)
	}
	if !slices.Equal(forgot, []uint32{pid}) {
		t.Errorf("forgot %v a round after the exit, want [%d]", forgot, pid)
	}
	if names, err := sampledb.Sessions(d.cfg.Dir); err != nil || !slices.Contains(names, sampledb.Current) {
		t.Errorf("sessions %v, %v; want the current one", names, err)
	}
}

// TestRoundEvery: the daemon's rounds hold some 500 samples of each
// CPU's, from record's 100 ms at 5 kHz and more up to 500 ms at 1 kHz
// and less, and some 100 while it follows a perf map: 100 ms at 1 kHz
// and more; record's 100 ms with a period.
func TestRoundEvery(t *testing.T) {
	for _, c := range []struct {
		sc             record.Config
		want, timeless time.Duration
	}{
		{record.Config{Freq: 10000}, record.PollInterval, record.PollInterval},
		{record.Config{Freq: 5000}, record.PollInterval, record.PollInterval},
		{record.Config{Freq: 4000}, 125 * time.Millisecond, record.PollInterval},
		{record.Config{Freq: 2000}, 250 * time.Millisecond, record.PollInterval},
		{record.Config{Freq: 1000}, 500 * time.Millisecond, record.PollInterval},
		{record.Config{Freq: 400}, 500 * time.Millisecond, 250 * time.Millisecond},
		{record.Config{Freq: 200}, 500 * time.Millisecond, 500 * time.Millisecond},
		{record.Config{Freq: 19}, 500 * time.Millisecond, 500 * time.Millisecond},
		{record.Config{Period: 100000}, record.PollInterval, record.PollInterval},
		{record.Config{Freq: 19, MaxFreq: true}, record.PollInterval, record.PollInterval},
	} {
		if got := roundEvery(&c.sc, perRound); got != c.want {
			t.Errorf("%+v: rounds of %v, want %v", c.sc, got, c.want)
		}
		if got := roundEvery(&c.sc, perTimelessRound); got != c.timeless {
			t.Errorf("%+v: rounds of %v beside a perf map, want %v", c.sc, got, c.timeless)
		}
	}
}

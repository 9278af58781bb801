package jitlog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openTest opens a logger in a fresh private directory.
func openTest(t testing.TB, opts Options) *Logger {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// stripTimes zeroes time stamps, after checking they are plausible
// CLOCK_MONOTONIC readings, so records compare by content.
func stripTimes(t *testing.T, recs []Record, lo, hi uint64) {
	t.Helper()
	for _, r := range recs {
		var p *uint64
		switch r := r.(type) {
		case *LoadRecord:
			p = &r.Time
		case *MoveRecord:
			p = &r.Time
		case *UnloadRecord:
			p = &r.Time
		case *EnterRecord:
			p = &r.Time
		case *ExitRecord:
			p = &r.Time
		case *OpenRecord:
			p = &r.Time
		case *CloseRecord:
			p = &r.Time
		case *ClockRecord:
			p = &r.Time
			r.TSC = 0
		case *Header:
			p = &r.Created
			r.Append, r.Capacity = 0, 0
		}
		if *p < lo || *p > hi {
			t.Errorf("%v record time %d outside [%d, %d]", r.Kind(), *p, lo, hi)
		}
		*p = 0
	}
}

func monoNow(t testing.TB) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

func TestNanotimeIsClockMonotonic(t *testing.T) {
	a := monoNow(t)
	n := uint64(nanotime())
	b := monoNow(t)
	if n < a || n > b {
		t.Fatalf("nanotime %d not between CLOCK_MONOTONIC readings %d and %d", n, a, b)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	lo := monoNow(t)
	l := openTest(t, Options{Dir: dir, Name: "testjit"})
	full := &Load{
		Code:     []byte{0x55, 0x48, 0x89, 0xe5, 0xc3},
		Files:    []string{"a.js", "lib/b.js"},
		Lines:    []LineEntry{{0, 0, 10}, {1, 1, 20}, {4, 0, 11}},
		Bytecode: []BytecodeEntry{{0, 0}, {3, 7}},
	}
	type op struct {
		name string
		do   func() (Record, error)
	}
	var seqs []uint64
	load := func(addr uintptr, size int, name string, ld *Load) op {
		return op{"load " + name, func() (Record, error) {
			seq, err := l.CodeLoad(addr, size, name, ld)
			seqs = append(seqs, seq)
			want := &LoadRecord{Seq: seq, Addr: uint64(addr), Size: uint64(size), Logger: l.ID(), Name: name}
			if ld != nil {
				want.Code, want.Files, want.Lines, want.Bytecode = ld.Code, ld.Files, ld.Lines, ld.Bytecode
			}
			return want, err
		}}
	}
	ops := []op{
		load(0x1000, 64, "f", nil),
		load(0x1000, 5, "f", full), // same address, same name: new generation
		load(0x2000, 0, "", nil),
		load(0x3000, 5, "name with spaces and ünïcode", &Load{Code: full.Code}),
		load(0x4000, 16, "lines-only", &Load{Files: []string{"x"}, Lines: []LineEntry{{2, 0, 1}}}),
		{"move", func() (Record, error) {
			return &MoveRecord{Seq: seqs[1], OldAddr: 0x1000, NewAddr: 0x9000, Logger: l.ID()}, l.CodeMove(seqs[1], 0x1000, 0x9000)
		}},
		{"unload", func() (Record, error) { return &UnloadRecord{Seq: seqs[0], Logger: l.ID()}, l.CodeUnload(seqs[0]) }},
		{"enter", func() (Record, error) {
			return &EnterRecord{Seq: seqs[1], TID: 42, Logger: l.ID()}, l.Enter(42, seqs[1])
		}},
		{"exit", func() (Record, error) { return &ExitRecord{TID: 42, Logger: l.ID()}, l.Exit(42) }},
	}
	want := []Record{
		&Header{Version: Version, PID: uint32(os.Getpid()), ClockID: ClockMonotonic, PageSize: uint32(os.Getpagesize()), MaxSize: DefaultMaxSize, Loggers: 1},
		&OpenRecord{Logger: l.ID(), Name: "testjit"},
	}
	if useTSC() {
		want = append(want, &ClockRecord{Logger: l.ID()}, &ClockRecord{Logger: l.ID()})
	}
	for _, o := range ops {
		r, err := o.do()
		if err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		want = append(want, r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want = append(want, &CloseRecord{Logger: 1})
	hi := monoNow(t)
	if !reflect.DeepEqual(seqs, []uint64{1, 2, 3, 4, 5}) {
		t.Errorf("sequence numbers %v, want 1..5", seqs)
	}
	got, err := Read(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := got[0].(*Header)
	if h.Seq != 5 {
		t.Errorf("header seq %d, want 5", h.Seq)
	}
	want[0].(*Header).StartTime, want[0].(*Header).Seq = h.StartTime, 5
	stripTimes(t, got, lo, hi)
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if err := l.Enter(1, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Enter after Close: %v, want ErrClosed", err)
	}
}

func TestCodeLoadRejectsBadInput(t *testing.T) {
	l := openTest(t, Options{})
	defer l.Close()
	tests := []struct {
		name string
		size int
		ld   *Load
		want error
	}{
		{"negative size", -1, nil, nil},
		{"code size mismatch", 4, &Load{Code: []byte{1}}, nil},
		{"line names missing file", 4, &Load{Lines: []LineEntry{{0, 1, 1}}, Files: []string{"a"}}, nil},
		{"too large", maxRecord, &Load{Code: make([]byte, maxRecord)}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.CodeLoad(0x1000, tt.size, "x", tt.ld)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

// TestConcurrent runs 8 goroutines over 2 loggers of one process: every
// sequence number must be unique and no record lost.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, Options{Dir: dir, Name: "c-jit"})
	b := openTest(t, Options{Dir: dir, Name: "go-jit", MaxSize: 1 << 20}) // joins: MaxSize ignored
	const workers, per = 8, 2000
	var wg sync.WaitGroup
	seqs := make([][]uint64, workers)
	for w := range workers {
		l := a
		if w%2 == 1 {
			l = b
		}
		wg.Go(func() {
			for i := range per {
				seq, err := l.CodeLoad(uintptr(0x10000+i*64), 64, fmt.Sprintf("w%d-%d", w, i), nil)
				if err != nil {
					t.Error(err)
					return
				}
				seqs[w] = append(seqs[w], seq)
				if err := l.Enter(uint32(w), seq); err != nil {
					t.Error(err)
					return
				}
				if err := l.Exit(uint32(w)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if a.Path() != b.Path() {
		t.Fatalf("two loggers of one process use %s and %s", a.Path(), b.Path())
	}
	for _, l := range []*Logger{a, b} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := Read(a.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0].(*Header); h.MaxSize != DefaultMaxSize || h.Seq != workers*per {
		t.Errorf("header max %d seq %d, want %d and %d", h.MaxSize, h.Seq, DefaultMaxSize, workers*per)
	}
	logged := map[uint64]bool{}
	for _, s := range seqs {
		for _, q := range s {
			logged[q] = true
		}
	}
	seen := map[uint64]string{}
	kinds := map[Kind]int{}
	for _, r := range recs {
		kinds[r.Kind()]++
		if l, ok := r.(*LoadRecord); ok {
			if prev, dup := seen[l.Seq]; dup {
				t.Fatalf("seq %d used by %q and %q", l.Seq, prev, l.Name)
			}
			seen[l.Seq] = l.Name
			if !logged[l.Seq] {
				t.Errorf("seq %d in file but never returned", l.Seq)
			}
		}
	}
	want := map[Kind]int{KindHeader: 1, KindLoggerOpen: 2, KindLoggerClose: 2, KindCodeLoad: workers * per, KindRegionEnter: workers * per, KindRegionExit: workers * per}
	if useTSC() {
		want[KindClock] = kinds[KindClock] // two per logger, then as time passes
		if kinds[KindClock] < 4 {
			t.Errorf("%d clock records, want at least two per logger", kinds[KindClock])
		}
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("record counts %v, want %v", kinds, want)
	}
	if len(logged) != workers*per {
		t.Errorf("%d unique sequence numbers returned, want %d", len(logged), workers*per)
	}
}

func TestGrowUntilFull(t *testing.T) {
	l := openTest(t, Options{MaxSize: 1 << 20})
	name := string(make([]byte, 1000))
	var n int
	var err error
	for n = 0; n < 10000; n++ {
		if _, err = l.CodeLoad(0x1000, 1, name, nil); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("after %d loads: %v, want ErrFull", n, err)
	}
	if want := (1<<20 - HeaderSize - 64) / (loadFixed + 1000); n < want-2 || n > want {
		t.Errorf("%d loads fit in 1 MiB, want about %d", n, want)
	}
	if _, err := l.CodeLoad(0x1000, 1, "x", nil); !errors.Is(err, ErrFull) {
		t.Errorf("load after full: %v", err)
	}
	recs, err := Read(l.Path(), nil)
	if err != nil {
		t.Fatalf("reading a full database: %v", err)
	}
	loads := 0
	for _, r := range recs {
		if r.Kind() == KindCodeLoad {
			loads++
		}
	}
	if loads != n {
		t.Errorf("read %d loads, logged %d", loads, n)
	}
	if err := l.Close(); !errors.Is(err, ErrFull) {
		t.Errorf("Close of a full logger: %v, want ErrFull for its close record", err)
	}
}

// TestTornRecord reserves records and never publishes them, as a writer
// killed mid-record would.
func TestTornRecord(t *testing.T) {
	l := openTest(t, Options{})
	defer l.Close()
	s1, _ := l.CodeLoad(0x1000, 8, "before", nil)
	if _, err := l.reserve(64); err != nil { // sized, unpublished
		t.Fatal(err)
	}
	s2, _ := l.CodeLoad(0x2000, 8, "after", nil)
	recs, err := Read(l.Path(), nil)
	if !errors.Is(err, ErrTorn) {
		t.Fatalf("error %v, want ErrTorn", err)
	}
	var names []string
	for _, r := range recs {
		if r, ok := r.(*LoadRecord); ok {
			names = append(names, fmt.Sprint(r.Name, r.Seq))
		}
	}
	if want := []string{fmt.Sprint("before", s1), fmt.Sprint("after", s2)}; !reflect.DeepEqual(names, want) {
		t.Errorf("loads around a torn record: %v, want %v", names, want)
	}

	// A writer killed after claiming a record but before moving the append
	// offset on: the next writer steps over its claim.
	off := atomic.LoadUint64(l.appendp)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&l.mem[off])), 32)
	s3, err := l.CodeLoad(0x3000, 8, "later", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err = Read(l.Path(), nil)
	if !errors.Is(err, ErrTorn) {
		t.Fatalf("error %v, want ErrTorn", err)
	}
	if last := recs[len(recs)-1].(*LoadRecord); last.Name != "later" || last.Seq != s3 {
		t.Errorf("last record %+v, want \"later\" seq %d", last, s3)
	}
}

// TestTail polls a database step by step: each poll returns what the
// step logged, a pending record holds back those after it, and a torn
// one is skipped with ErrTorn once its writer is gone. With the TSC on
// (forced where the kernel does not keep time by it: the tail reads the
// stamps as numbers) Enter and Exit also log clock records.
func TestTail(t *testing.T) {
	for _, tsc := range []bool{false, true} {
		t.Run(fmt.Sprint("tsc=", tsc), func(t *testing.T) {
			if tsc && runtime.GOARCH != "amd64" {
				t.Skip("the logger stamps the TSC on x86-64 only")
			}
			defer func(v func() bool) { useTSC = v }(useTSC)
			useTSC = func() bool { return tsc }
			testTail(t)
		})
	}
}

func testTail(t *testing.T) {
	l := openTest(t, Options{Name: "tailed"})
	defer l.Close()
	tl, err := OpenTail(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	alive := true
	tl.Alive = func(*Header) bool { return alive }
	// After the two clock records at open, the logger writes another
	// whenever the TSC passes its next calibration point, which Enter
	// and Exit check: how many fall between two steps depends on the
	// machine's speed, not on what the step did. Each step's records
	// are compared without them, and those are checked to be clocks.
	// calibrateNow makes the next Enter or Exit due for one, as a slow
	// step would, so that the test meets the case on every machine.
	opened, clocks := false, 0
	calibrateNow := func() {
		if l.tsc {
			l.nextCal.Store(0)
		}
	}
	kinds := func(recs []Record) []Kind {
		var ks []Kind
		for _, r := range recs {
			if r.Kind() == KindClock && opened {
				if c, ok := r.(*ClockRecord); !ok || c.TSC == 0 || c.Time == 0 {
					t.Errorf("clock record %+v: want a TSC and a time", r)
				}
				clocks++
				continue
			}
			ks = append(ks, r.Kind())
		}
		opened = true
		return ks
	}
	steps := []struct {
		name    string
		do      func()
		want    []Kind
		wantErr error
	}{
		{"header and open", func() {}, openKinds(), nil},
		{"nothing new", func() {}, nil, nil},
		{"one load", func() { l.CodeLoad(1, 1, "a", nil) }, []Kind{KindCodeLoad}, nil},
		{"pending holds back", func() {
			l.reserve(exitSize)
			calibrateNow()
			l.Enter(1, 1)
		}, nil, nil},
		{"writer died: torn skipped", func() { alive = false }, []Kind{KindRegionEnter}, ErrTorn},
		{"goes on after torn", func() {
			calibrateNow()
			l.Exit(1)
		}, []Kind{KindRegionExit}, nil},
	}
	for _, s := range steps {
		s.do()
		recs, err := tl.Poll()
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: error %v, want %v", s.name, err, s.wantErr)
		}
		if got := kinds(recs); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
	if l.tsc && clocks < 2 {
		t.Errorf("%d clock records after the open's, want the two the steps made due", clocks)
	}
}

// TestCrash SIGKILLs a child that logs from several goroutines: every
// finished record must read, and an unfinished one is reported as torn.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("JITLOG_CRASH_DIR"); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
		cmd.Env = append(os.Environ(), "JITLOG_CRASH_DIR="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		path := DatabasePath(dir, cmd.Process.Pid)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if fi, err := os.Stat(path); err == nil && fi.Size() > 2<<20 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("child never wrote 2 MiB")
			}
			time.Sleep(time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		recs, err := Read(path, nil)
		if err != nil && !errors.Is(err, ErrTorn) {
			t.Fatalf("round %d: %v", round, err)
		}
		if err != nil {
			t.Logf("round %d: warning: %v", round, err)
		}
		h := recs[0].(*Header)
		if ProcessAlive(h) {
			t.Errorf("killed child %d still alive by its header", h.PID)
		}
		seen := map[uint64]bool{}
		loads := 0
		for _, r := range recs {
			l, ok := r.(*LoadRecord)
			if !ok {
				continue
			}
			loads++
			if seen[l.Seq] {
				t.Fatalf("seq %d twice", l.Seq)
			}
			seen[l.Seq] = true
			if want := "fn-" + strconv.FormatUint(l.Addr, 16); l.Name != want || l.Size != 64 || l.Seq > h.Seq {
				t.Fatalf("damaged record %+v (want name %s, header seq %d)", l, want, h.Seq)
			}
		}
		if loads < 10000 {
			t.Errorf("round %d: only %d loads read from a 2 MiB file", round, loads)
		}
		// Records the child finished all read: at most the few in flight
		// when it died are missing.
		if missing := h.Seq - uint64(loads); missing > 4 {
			t.Errorf("round %d: %d of %d sequence numbers have no record", round, missing, h.Seq)
		}
	}
}

func crashChild(dir string) {
	l, err := Open(Options{Dir: dir, Name: "crash"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for g := range 4 {
		go func() {
			for i := uintptr(g) << 32; ; i += 64 {
				if _, err := l.CodeLoad(i, 64, "fn-"+strconv.FormatUint(uint64(i), 16), nil); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
			}
		}()
	}
	select {}
}

func TestOpenRefusesUnsafeDir(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, open, file} {
		if l, err := Open(Options{Dir: dir}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Open in %s: %v, want ErrUnsafe", dir, err)
			if l != nil {
				l.Close()
			}
		}
	}
	// A database path that is a symlink planted by someone else.
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, DatabasePath(real, os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(Options{Dir: real}); err == nil {
		l.Close()
		t.Error("Open followed a symlinked database")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("symlink target changed to %q", b)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "/some/where")
	if got := DefaultDir(); got != "/some/where" {
		t.Errorf("DefaultDir with %s set: %s", EnvDir, got)
	}
	t.Setenv(EnvDir, "")
	if got, want := DefaultDir(), filepath.Join(os.TempDir(), "jitprof-"+strconv.Itoa(os.Geteuid())); got != want {
		t.Errorf("DefaultDir: %s, want %s", got, want)
	}
}

// TestRegionTimes checks that enter and exit times read as CLOCK_MONOTONIC
// ns, with the TSC (converted by clock records, across recalibrations) and
// without it, and that every stamp falls between clock readings taken
// around the call, to within a microsecond of calibration error.
func TestRegionTimes(t *testing.T) {
	eachClock(t, func(t *testing.T, tsc bool) {
		l := openTest(t, Options{Dir: t.TempDir()})
		type window struct{ lo, hi uint64 }
		var want []window
		end := monoNow(t) + 50_000_000 // several recalibrations
		for i := uint64(0); monoNow(t) < end; i++ {
			lo := monoNow(t)
			if err := l.Enter(1, i); err != nil {
				t.Fatal(err)
			}
			if err := l.Exit(1); err != nil {
				t.Fatal(err)
			}
			want = append(want, window{lo, monoNow(t)})
			time.Sleep(100 * time.Microsecond)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		recs, err := Read(l.Path(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var times []uint64
		kinds := map[Kind]int{}
		for _, r := range recs {
			switch r := r.(type) {
			case *EnterRecord:
				times = append(times, r.Time)
			case *ExitRecord:
				times = append(times, r.Time)
			}
			kinds[r.Kind()]++
		}
		if len(times) != 2*len(want) {
			t.Fatalf("%d enter and exit records, want %d", len(times), 2*len(want))
		}
		const slack = 1000
		for i, w := range want {
			for _, tm := range times[2*i : 2*i+2] {
				if tm+slack < w.lo || tm > w.hi+slack {
					t.Fatalf("call %d: time %d outside [%d, %d] by more than %d ns", i, tm, w.lo, w.hi, slack)
				}
			}
		}
		if tsc && kinds[KindClock] < 5 {
			t.Errorf("%d clock records in 50 ms, want at least 5 (two at open and recalibrations)", kinds[KindClock])
		}
		if !tsc && kinds[KindClock] != 0 {
			t.Errorf("%d clock records without the TSC", kinds[KindClock])
		}
	})
}

// eachClock runs f as the logger stamps regions by the clock, and,
// where the kernel keeps time with the TSC, by the TSC.
func eachClock(t *testing.T, f func(t *testing.T, tsc bool)) {
	for _, tsc := range []bool{false, true} {
		t.Run(fmt.Sprint("tsc=", tsc), func(t *testing.T) {
			if tsc && !useTSC() {
				t.Skip("the kernel does not keep time with the TSC here, so the logger does not use it")
			}
			defer func(v func() bool) { useTSC = v }(useTSC)
			useTSC = func() bool { return tsc }
			f(t, tsc)
		})
	}
}

// openKinds are the records a logger's Open writes, after the header.
func openKinds() []Kind {
	if useTSC() {
		return []Kind{KindHeader, KindLoggerOpen, KindClock, KindClock}
	}
	return []Kind{KindHeader, KindLoggerOpen}
}

// TestTailPollLimit: PollLimit returns no more records, nor bytes of
// them, than asked (but always one record when maxBytes is positive),
// says when more wait, and over its calls returns every record once; a
// negative maxBytes returns none, only whether one waits.
func TestTailPollLimit(t *testing.T) {
	l := openTest(t, Options{Name: "limited"})
	const n = 1000
	for i := range n {
		if _, err := l.CodeLoad(uintptr(0x1000+16*i), 16, "f", nil); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	tl, err := OpenTail(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if recs, more, err := tl.PollLimit(-1, 0); err != nil || !more || len(recs) != 1 {
		t.Fatalf("PollLimit(-1, 0) = %d records (the header alone, want), more %v, %v", len(recs), more, err)
	}
	loads := 0
	for calls := 0; ; calls++ {
		before := tl.Offset()
		recs, more, err := tl.PollLimit(200, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 7 || len(recs) > 1 && tl.Offset()-before > 200 {
			t.Fatalf("call %d: %d records of %d bytes, limits 7 and 200", calls, len(recs), tl.Offset()-before)
		}
		for _, r := range recs {
			if _, ok := r.(*LoadRecord); ok {
				loads++
			}
		}
		if !more {
			break
		}
		if calls > 2*n {
			t.Fatal("PollLimit makes no progress")
		}
	}
	if loads != n {
		t.Errorf("%d loads read, want %d", loads, n)
	}
	if recs, more, _ := tl.PollLimit(200, 7); len(recs) != 0 || more {
		t.Errorf("after the last: %d records, more %v", len(recs), more)
	}
}

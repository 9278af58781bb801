package sampledb

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crashRun adds crash-test round r's samples to db, flushing after each
// batch: the same samples every time, so a reference run knows what a
// killed one added at most. Each round brings a new library (new files)
// and more distinct keys (tables that grow).
func crashRun(db *DB, round int) error {
	var ids []ImageID
	for _, p := range []string{"/bin/app0", "/bin/app1", "/lib/a.so", "/lib/b.so", "/lib/r" + strconv.Itoa(round) + ".so"} {
		id, err := db.FileImage(FileIdent{}, p, ImageInfo{})
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	kern, _ := db.KernelImage("vmlinux", ImageInfo{})
	jit, _ := db.JITImage("jitlog", 100, 0x10000, 0x20000)
	ids = append(ids, kern, jit)
	rng := rand.New(rand.NewPCG(uint64(round), 7))
	keys := uint64(40 + 60*round)
	for range 8 {
		for range 3000 {
			s := Sample{
				App:   ids[rng.IntN(2)],
				Image: ids[rng.IntN(len(ids))],
				TGID:  100,
				TID:   100 + rng.Uint32N(3),
				Key1:  rng.Uint64N(keys),
			}
			if s.Image == jit {
				s.Key2 = rng.Uint64N(4)
			}
			if err := db.Add(&s); err != nil {
				return err
			}
		}
		if err := db.Flush(); err != nil {
			return err
		}
	}
	return nil
}

var crashOpts = Options{Separate: SeparateLib | SeparateThread, Events: testEvents[:1], Host: "h"}

// crashWriter is the child of TestCrashSafety: round r's samples into
// dir, killing itself (SIGKILL) at the n-th passing of a write point if
// one is given.
func crashWriter(dir, spec string) int {
	f := strings.Split(spec, ":")
	round := atoi(f[0])
	if len(f) == 3 {
		point, n := f[1], atoi(f[2])
		testHook = func(p string) {
			if p == point {
				if n--; n == 0 {
					unix.Kill(os.Getpid(), unix.SIGKILL)
				}
			}
		}
	}
	db, err := Create(dir, crashOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := crashRun(db, round); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := db.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestCrashSafety kills a writer at every kind of point (between a node's
// write and its publication, between publication and link, while a file
// is created, while a table grows) and at random times, round after
// round, continuing one session. After every kill the session must read
// whole (every file checked), no count may go down, and none may exceed
// what the rounds so far added; a last round run to its end must add
// exactly its samples.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("forks many writers")
	}
	dir, refDir := t.TempDir(), t.TempDir()
	ref, err := Create(refDir, crashOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if ref != nil {
			ref.Close()
		}
	}()
	type counts = map[string]map[[2]uint64]uint64
	prev, refPrev := counts{}, counts{}
	var kills []string
	for _, p := range []string{"create", "node", "published", "allocated", "rehashed"} {
		for _, n := range []int{1, 2, 7} {
			kills = append(kills, p+":"+strconv.Itoa(n))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 25 {
		kills = append(kills, "after:"+strconv.Itoa(2+rng.IntN(60)))
	}
	kills = append(kills, "")
	killed := 0
	for round, kill := range kills {
		if err := crashRun(ref, round); err != nil {
			t.Fatal(err)
		}
		refNow := readSession(t, refDir)
		h := "crash:" + strconv.Itoa(round)
		point, arg, _ := strings.Cut(kill, ":")
		if point != "after" && kill != "" {
			h += ":" + kill
		}
		cmd := helper(t, h, dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if point == "after" {
			time.Sleep(time.Duration(atoi(arg)) * time.Millisecond)
			cmd.Process.Signal(unix.SIGKILL)
		}
		err := waitExit(t, cmd, time.Minute)
		if err != nil {
			killed++
			if kill == "" {
				t.Fatalf("round %d: the last writer failed: %v", round, err)
			}
		}
		now := readSession(t, dir) // checks every file
		if _, err := ReadMeta(dir, Current); err != nil {
			t.Fatalf("round %d (%s): %v", round, kill, err)
		}
		for name, m := range now {
			for key, n := range m {
				was, refWas, refIs := prev[name][key], refPrev[name][key], refNow[name][key]
				if n < was {
					t.Fatalf("round %d (%s): %s %v went down from %d to %d", round, kill, name, key, was, n)
				}
				if n-was > refIs-refWas {
					t.Fatalf("round %d (%s): %s %v grew by %d, the round added %d", round, kill, name, key, n-was, refIs-refWas)
				}
				if kill == "" && n-was != refIs-refWas {
					t.Fatalf("last round: %s %v grew by %d, the round added %d", name, key, n-was, refIs-refWas)
				}
			}
		}
		for name, m := range prev {
			for key := range m {
				if _, ok := now[name][key]; !ok {
					t.Fatalf("round %d (%s): %s %v is gone", round, kill, name, key)
				}
			}
		}
		if kill == "" {
			for name, m := range refNow {
				for key, n := range m {
					if got := now[name][key] - prev[name][key]; got != n-refPrev[name][key] {
						t.Fatalf("last round: %s %v grew by %d, the round added %d", name, key, got, n-refPrev[name][key])
					}
				}
			}
		}
		prev, refPrev = now, refNow
	}
	if killed < len(kills)/2 {
		t.Errorf("only %d of %d writers were killed", killed, len(kills))
	}
	// Runs killed before they wrote the metadata are not in it; the
	// last one ended cleanly, and says so.
	m, _ := ReadMeta(dir, Current)
	if len(m.Runs) > len(kills) || m.Runs[len(m.Runs)-1].Stop.IsZero() {
		t.Errorf("%d runs in the metadata, at most %d, the last stopped", len(m.Runs), len(kills))
	}
	t.Logf("%d writers of %d killed", killed, len(kills))
}

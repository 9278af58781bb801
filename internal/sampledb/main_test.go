package sampledb

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary a child process of a test: see
// runHelper.
const helperEnv = "SAMPLEDB_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h, os.Args[len(os.Args)-1]))
	}
	// The runtime's poller opens descriptors on first use and keeps them;
	// use it once so they are not counted as leaks.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.SetReadDeadline(time.Now())
		r.Close()
		w.Close()
	}
	before := openFDs()
	code := m.Run()
	if after := openFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "leaked file descriptors: %d before, %d after\n", before, after)
		code = 1
	}
	os.Exit(code)
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		panic(err)
	}
	return len(ents)
}

// runHelper is a child process's main; arg is a directory.
//
//   - "lock": create a DB in arg, say "locked", wait for stdin to close.
//   - "crash:ROUND[:POINT:N]": a crash-test writer (crashWriter), killing
//     itself at the N-th passing of POINT if given.
//   - "fsize": a writer under a 256 KiB file-size limit (fsizeWriter).
func runHelper(h, arg string) int {
	switch mode, rest, _ := strings.Cut(h, ":"); mode {
	case "lock":
		db, err := Create(arg, Options{Events: testEvents})
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n')
		db.Close()
		return 0
	case "crash":
		return crashWriter(arg, rest)
	case "fsize":
		return fsizeWriter(arg)
	}
	fmt.Fprintln(os.Stderr, "unknown helper", h)
	return 2
}

// helper starts the test binary as a child in mode h.
func helper(t testing.TB, h, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	cmd.Env = append(os.Environ(), helperEnv+"="+h)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestLockTwoProcesses: while one process writes a session directory, a
// second cannot; once the first exits (even killed), the second can.
func TestLockTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	for _, kill := range []bool{false, true} {
		cmd := helper(t, "lock", dir)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if line != "locked\n" {
			t.Fatalf("child said %q", line)
		}
		if db, err := Create(dir, Options{Events: testEvents}); !errors.Is(err, ErrLocked) {
			if err == nil {
				db.Close()
			}
			t.Fatalf("second daemon: %v, want ErrLocked", err)
		}
		if err := Save(dir, "x"); !errors.Is(err, ErrLocked) {
			t.Fatalf("save beside a daemon: %v, want ErrLocked", err)
		}
		if kill {
			cmd.Process.Signal(unix.SIGKILL)
		} else {
			stdin.Close()
		}
		cmd.Wait()
		db, err := Create(dir, Options{Events: testEvents})
		if err != nil {
			t.Fatalf("after the first exited (killed %v): %v", kill, err)
		}
		db.Close()
	}
}

// waitExit waits for a child, killing it after d.
func waitExit(t testing.TB, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child %v did not finish in %v", cmd.Args, d)
	}
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

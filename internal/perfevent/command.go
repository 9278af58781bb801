package perfevent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// A command is started stopped, the way perf record does it: the child
// exists (so events can be opened on its pid with enable_on_exec) but has
// not yet executed the command, and does so when the parent says go. Go
// cannot fork without exec, so the child is this same executable
// (/proc/self/exe) with shimEnv set, and the package's init function turns
// it into the shim. It must be init, not a function main calls: during
// package initialisation the runtime keeps the main goroutine on the main
// thread, and the exec must happen on the thread the events were opened on
// (the pid), or the kernel frees them with the other threads.
const shimEnv = "JITPROF_PERFEVENT_SHIM"

// The shim's inherited descriptors: it reads one byte from goFD before the
// exec, and writes the exec error, if any, to errFD, which the exec closes.
const (
	goFD  = 3
	errFD = 4
)

func init() {
	if os.Getenv(shimEnv) == "" {
		return
	}
	runShim(os.Args[1:])
}

// runShim waits for the go-ahead and executes args[0] with argv args[1:].
func runShim(args []string) {
	fail := func(msg string) {
		_, _ = unix.Write(errFD, []byte(msg))
		os.Exit(127)
	}
	if len(args) < 2 {
		fail("perfevent shim: no command")
	}
	var b [1]byte
	for {
		n, err := unix.Read(goFD, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n != 1 {
			// The parent went away without saying go.
			os.Exit(127)
		}
		break
	}
	_ = unix.Close(goFD)
	unix.CloseOnExec(errFD)
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, shimEnv+"=") {
			env = append(env, kv)
		}
	}
	err := unix.Exec(args[0], args[1:], env)
	fail(fmt.Sprintf("exec %s: %v", args[0], err))
}

// Command is a child process started by StartCommand, waiting for Go.
type Command struct {
	Pid  int
	cmd  *exec.Cmd
	goW  *os.File
	errR *os.File
}

// StartCommand starts argv (looked up in PATH like a shell does) with
// exactly the environment env (pass os.Environ() to inherit), stopped
// before its exec. Open events with Options.EnableOnExec on
// Target{PIDs: []int{Pid}}, then call Go, then Wait. Nil stdio streams are
// /dev/null.
func StartCommand(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (_ *Command, err error) {
	if len(argv) == 0 {
		return nil, errors.New("start command: empty command")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("start command: %w", err)
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start command: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		goR.Close()
		goW.Close()
		return nil, fmt.Errorf("start command: %w", err)
	}
	// The parent's copies of the child's ends are closed in any case, so
	// that a dead child reads as EOF.
	defer goR.Close()
	defer errW.Close()
	cmd := &exec.Cmd{
		Path:       linux.SelfExe,
		Args:       append([]string{argv[0], path}, argv...),
		Env:        append(env[:len(env):len(env)], shimEnv+"=1"),
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{goR, errW}, // become goFD and errFD
	}
	if err := cmd.Start(); err != nil {
		goW.Close()
		errR.Close()
		return nil, fmt.Errorf("start command %s: %w", argv[0], err)
	}
	return &Command{Pid: cmd.Process.Pid, cmd: cmd, goW: goW, errR: errR}, nil
}

// Go lets the command exec and returns once it has, or with the reason it
// could not.
func (c *Command) Go() error {
	if c.goW == nil {
		return errors.New("command: Go called twice")
	}
	_, werr := c.goW.Write([]byte{1})
	c.goW.Close()
	c.goW = nil
	msg, rerr := io.ReadAll(c.errR)
	c.errR.Close()
	switch {
	case len(msg) > 0:
		return fmt.Errorf("command: %s", msg)
	case werr != nil:
		return fmt.Errorf("command: %w", werr)
	case rerr != nil:
		return fmt.Errorf("command: %w", rerr)
	}
	return nil
}

// Kill kills the command, for when the recorder gives up before Go.
func (c *Command) Kill() error {
	if c.goW != nil {
		c.goW.Close()
		c.errR.Close()
		c.goW = nil
	}
	return c.cmd.Process.Kill()
}

// Wait waits for the command to exit and returns its exit status as a
// shell reports it: the exit code, or 128 plus the signal that killed it.
func (c *Command) Wait() (int, error) {
	err := c.cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return -1, fmt.Errorf("command: %w", err)
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return c.cmd.ProcessState.ExitCode(), nil
}

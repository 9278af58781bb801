package perfevent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

var (
	// ErrNotSupported means the kernel or the machine lacks the event or
	// feature asked for.
	ErrNotSupported = errors.New("not supported")
	// ErrPermission means the kernel refused for lack of privilege; the
	// wrapping error says which setting to change.
	ErrPermission = errors.New("permission denied")
)

// perfEventOpen opens one event and turns the kernel's terse errno into an
// error that says what to do about it.
func perfEventOpen(attr *unix.PerfEventAttr, ev Event, pid, cpu int) (int, error) {
	fd, err := unix.PerfEventOpen(attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		return fd, nil
	}
	return -1, fmt.Errorf("perf_event_open %s (pid %d, cpu %d): %w", ev.Name, pid, cpu, openError(err, attr, ev, pid))
}

func openError(err error, attr *unix.PerfEventAttr, ev Event, pid int) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		level := "unknown"
		if p, perr := linux.Paranoid(); perr == nil {
			level = strconv.Itoa(p)
		}
		what := "needs CAP_PERFMON (or root), or a lower " + linux.ParanoidPath
		if pid == -1 {
			what = "profiling a whole CPU " + what + " (at most 0)"
		} else if attr.Bits&unix.PerfBitExcludeKernel == 0 {
			what = "profiling the kernel " + what + " (at most 1); to profile only user space add :u to the event"
		} else {
			what = "profiling another user's process " + what
		}
		return fmt.Errorf("%w: perf_event_paranoid is %s: %s", ErrPermission, level, what)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV):
		if ev.needsPMU() {
			return fmt.Errorf("event %s: %w by this machine's PMU (virtual machines often have none); try -e cpu-clock", ev.Name, ErrNotSupported)
		}
		if ev.PreciseIP > 0 || attr.Bits&(unix.PerfBitExcludeUser|unix.PerfBitExcludeHv) != 0 {
			return fmt.Errorf("event %s: modifiers %w for this event: %w", ev.Name, ErrNotSupported, err)
		}
		return fmt.Errorf("event %s: %w by this kernel: %w", ev.Name, ErrNotSupported, err)
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return fmt.Errorf("out of file descriptors (one is needed per event, thread and CPU): raise ulimit -n: %w", err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("no such process: %w", err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%w; %s", err, invalidHint(attr))
	case errors.Is(err, unix.EOVERFLOW):
		return fmt.Errorf("sample_max_stack %d is above /proc/sys/kernel/perf_event_max_stack: %w", attr.Sample_max_stack, err)
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("event is in exclusive use by someone else: %w", err)
	}
	return err
}

// invalidHint names the attr fields most often behind EINVAL.
func invalidHint(attr *unix.PerfEventAttr) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attr: type=%d config=%#x sample_type=%#x flags=%#x clockid=%d sample_max_stack=%d",
		attr.Type, attr.Config, attr.Sample_type, attr.Bits, attr.Clockid, attr.Sample_max_stack)
	if attr.Bits&unix.PerfBitFreq != 0 {
		fmt.Fprintf(&b, " sample_freq=%d", attr.Sample)
		if max, err := linux.MaxSampleRate(); err == nil && attr.Sample > uint64(max) {
			fmt.Fprintf(&b, " (above perf_event_max_sample_rate %d: lower -F)", max)
		}
	} else {
		fmt.Fprintf(&b, " sample_period=%d", attr.Sample)
	}
	if p := (attr.Bits >> 15) & 3; p != 0 {
		fmt.Fprintf(&b, " precise_ip=%d (drop the :p modifiers)", p)
	}
	return b.String()
}

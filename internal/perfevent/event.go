package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/perfdata"
)

// Event is one kind of event to count or sample, as perf names it on the
// command line (-e).
type Event struct {
	Name          string // the spec it was parsed from, e.g. "cycles:u"
	Type          uint32 // PERF_TYPE_*
	Config        uint64
	ExcludeUser   bool
	ExcludeKernel bool
	ExcludeHV     bool
	PreciseIP     uint8 // 0..3, from :p modifiers
	// MountedTracefs is where ParseEvent mounted tracefs for this event,
	// "" when it was mounted already; the caller tells the user, as perf
	// does nothing silently to the system.
	MountedTracefs string
	// TracepointDir is a tracepoint's directory in tracefs
	// (ROOT/events/SUBSYS/NAME), where its format is.
	TracepointDir string
}

// DefaultEvent is what perf record samples on a machine without a PMU.
const DefaultEvent = "cpu-clock"

// errNotMounted says no tracefs was found; it wraps ErrNotSupported.
var errNotMounted = fmt.Errorf("tracefs not mounted: %w", ErrNotSupported)

// tracefsRoots are where tracefs is found: its own mount point first, then
// the older location under debugfs.
var tracefsRoots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// ParseEvent parses an event as perf record -e spells it: a named software
// or hardware event, a raw PMU event rNNNN (hex), or a tracepoint
// subsys:name, each optionally followed by modifiers :u, :k, :uk and :p,
// :pp, :ppp. The empty spec means DefaultEvent.
//
// A tracepoint needs tracefs. Where it is not mounted, ParseEvent mounts
// it at /sys/kernel/tracing as perf does (which takes root), and says so
// in Event.MountedTracefs.
func ParseEvent(spec string) (Event, error) {
	return parseEvent(spec, tracefsRoots, mountTracefs)
}

// mountTracefs mounts tracefs at dir, as perf's tracefs__mount does.
func mountTracefs(dir string) error {
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return fmt.Errorf("mount -t tracefs nodev %s: %w", dir, err)
	}
	return nil
}

// parseEvent is ParseEvent with tracefs looked for in roots, mounted with
// mount at roots[0] where none is (mount may be nil: never mount).
func parseEvent(spec string, roots []string, mount func(dir string) error) (Event, error) {
	if spec == "" {
		spec = DefaultEvent
	}
	ev := Event{Name: spec}
	parts := strings.Split(spec, ":")
	var mods string
	switch len(parts) {
	case 1:
	case 2:
		// "name:mods" when name is a known event, else "subsys:tracepoint".
		if err := parseBase(parts[0], &ev); err == nil && isModifiers(parts[1]) {
			mods = parts[1]
			parts = parts[:1]
		}
	case 3:
		mods = parts[2]
		parts = parts[:2]
	default:
		return Event{}, fmt.Errorf("event %q: too many ':'", spec)
	}
	if len(parts) == 1 {
		if err := parseBase(parts[0], &ev); err != nil {
			return Event{}, fmt.Errorf("event %q: %w", spec, err)
		}
	} else {
		id, dir, err := tracepointID(roots, parts[0], parts[1])
		if errors.Is(err, errNotMounted) && mount != nil && len(roots) > 0 {
			if merr := mount(roots[0]); merr != nil {
				err = fmt.Errorf("%w; mounting it failed: %w", err, merr)
			} else {
				ev.MountedTracefs = roots[0]
				id, dir, err = tracepointID(roots, parts[0], parts[1])
			}
		}
		if err != nil {
			return Event{}, fmt.Errorf("event %q: %w", spec, err)
		}
		ev.Type = unix.PERF_TYPE_TRACEPOINT
		ev.Config, ev.TracepointDir = id, dir
	}
	if err := applyModifiers(mods, &ev); err != nil {
		return Event{}, fmt.Errorf("event %q: %w", spec, err)
	}
	return ev, nil
}

// parseBase sets ev's type and config from a named or raw event.
func parseBase(name string, ev *Event) error {
	if typ, config, ok := perfdata.LookupEvent(name); ok {
		ev.Type, ev.Config = typ, config
		return nil
	}
	if len(name) > 1 && name[0] == 'r' {
		c, err := strconv.ParseUint(name[1:], 16, 64)
		if err == nil {
			ev.Type, ev.Config = unix.PERF_TYPE_RAW, c
			return nil
		}
	}
	return fmt.Errorf("unknown event %q (try cpu-clock, task-clock, cycles, rNNNN or subsys:tracepoint)", name)
}

func isModifiers(s string) bool {
	return s != "" && strings.Trim(s, "ukp") == ""
}

// applyModifiers follows perf: u and k select the privilege levels to count
// (either alone also excludes the hypervisor), p raises precise_ip.
func applyModifiers(mods string, ev *Event) error {
	if mods == "" {
		return nil
	}
	if !isModifiers(mods) {
		return fmt.Errorf("unknown modifier %q (want u, k, p)", mods)
	}
	u, k := strings.Contains(mods, "u"), strings.Contains(mods, "k")
	if u || k {
		ev.ExcludeUser, ev.ExcludeKernel, ev.ExcludeHV = !u, !k, true
	}
	p := strings.Count(mods, "p")
	if p > 3 {
		return fmt.Errorf("modifier %q: at most 3 p", mods)
	}
	ev.PreciseIP = uint8(p)
	return nil
}

// tracepointID reads a tracepoint's id from the first tracefs that has it,
// and returns it with the tracepoint's directory there.
func tracepointID(roots []string, subsys, name string) (uint64, string, error) {
	if subsys == "" || name == "" || strings.ContainsAny(subsys+name, "/.") {
		return 0, "", fmt.Errorf("bad tracepoint name %q", subsys+":"+name)
	}
	var mounted bool
	for _, root := range roots {
		if _, err := os.Stat(filepath.Join(root, "events")); err != nil {
			continue
		}
		mounted = true
		dir := filepath.Join(root, "events", subsys, name)
		b, err := os.ReadFile(filepath.Join(dir, "id"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("tracepoint %s:%s: %w", subsys, name, err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("tracepoint %s:%s: bad id: %w", subsys, name, err)
		}
		return id, dir, nil
	}
	if !mounted || len(roots) == 0 {
		return 0, "", fmt.Errorf("tracepoint %s:%s: tracefs is not mounted at %s (as root: mount -t tracefs nodev %s): %w",
			subsys, name, strings.Join(roots, " or "), tracefsRoots[0], errNotMounted)
	}
	return 0, "", fmt.Errorf("tracepoint %s:%s: no such tracepoint (see %s/events): %w", subsys, name, roots[0], ErrNotSupported)
}

// needsPMU reports whether the event counts on a hardware PMU, which many
// virtual machines lack.
func (e Event) needsPMU() bool {
	return e.Type == unix.PERF_TYPE_HARDWARE || e.Type == unix.PERF_TYPE_HW_CACHE || e.Type == unix.PERF_TYPE_RAW
}

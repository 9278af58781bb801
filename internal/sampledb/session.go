package sampledb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The layout of a session directory (DIR):
//
//	DIR/lock                         flock'ed by the one process that writes
//	DIR/samples/current/             the session being recorded
//	DIR/samples/current/session.json its metadata (Meta)
//	DIR/samples/current/{root}/...   sample files (Name)
//	DIR/samples/current/jit/PID/...  copies of the processes' JIT data
//	DIR/samples/NAME/                a saved session, the same inside
const (
	samplesDir  = "samples"
	Current     = "current"
	lockFile    = "lock"
	metaFile    = "session.json"
	jitDir      = "jit"
	metaVersion = 1
	// maxMeta bounds the metadata file a reader reads.
	maxMeta = 16 << 20
	// resetPrefix names a session being removed by Reset: renamed out of
	// the way first, so a killed reset leaves no half-empty current.
	resetPrefix = ".reset-"
)

// ErrLocked says another process holds the session directory's lock: a
// daemon is using it.
var ErrLocked = errors.New("session directory in use by another process")

// ErrMismatch says the current session was recorded with other events or
// another --separate than asked for; save or reset it first.
var ErrMismatch = errors.New("current session recorded with other settings")

// Event is one event a session samples.
type Event struct {
	// Name, Count (the period, or the frequency when Freq) and UnitMask
	// are the event as sample file names spell it.
	Name     string `json:"name"`
	Count    uint64 `json:"count"`
	Freq     bool   `json:"freq,omitempty"`
	UnitMask uint64 `json:"unit_mask,omitempty"`
	// Attr is the perf_event_attr the event was opened with, as the
	// kernel took it (perf.data's encoding), if the daemon keeps it.
	Attr []byte `json:"attr,omitempty"`
	// Lost counts the samples of this event the kernel lost
	// (PERF_RECORD_LOST, LOST_SAMPLES).
	Lost uint64 `json:"lost"`
}

// Run is one run of the daemon in a session. A run without a Stop was
// killed: its last interval's counts are lost.
type Run struct {
	Start time.Time `json:"start"`
	Stop  time.Time `json:"stop,omitzero"`
	PID   int       `json:"pid"`
}

// Meta is a session's metadata, DIR/samples/NAME/session.json.
type Meta struct {
	Version  int     `json:"version"`
	Host     string  `json:"host"`
	Separate string  `json:"separate"`
	Events   []Event `json:"events"`
	Runs     []Run   `json:"runs"`
	// Dropped counts samples counted but never written: a sample file
	// that could not be created or written, kept until the daemon had to
	// let go of it.
	Dropped uint64 `json:"dropped"`
	// Updated is the last time counts were flushed.
	Updated time.Time `json:"updated"`
}

// dirLock is a held session directory lock.
type dirLock struct{ f *os.File }

// lockDir takes the lock of session directory dir (creating dir), or
// fails with ErrLocked while another process holds it. The kernel drops
// the lock when its holder exits, killed or not, so a stale lock cannot
// exist.
func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("%s: lock: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock.
func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ValidSessionName says whether name can name a saved session: one
// directory name, not hidden, not current.
func ValidSessionName(name string) error {
	switch {
	case name == "" || name == Current:
		return fmt.Errorf("session name %q: empty or %q", name, Current)
	case len(name) > 255 || strings.ContainsAny(name, "/\x00") || name[0] == '.':
		return fmt.Errorf("session name %q: one directory name, not beginning with a dot", name)
	}
	return nil
}

// Save keeps the current session of dir under name (opcontrol --save) and
// leaves no current one; the daemon must not be running (it holds the
// lock: ask it, DB.Save).
func Save(dir, name string) error {
	l, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer l.unlock()
	return saveCurrent(filepath.Join(dir, samplesDir), name)
}

func saveCurrent(samples, name string) error {
	if err := ValidSessionName(name); err != nil {
		return err
	}
	from, to := filepath.Join(samples, Current), filepath.Join(samples, name)
	if _, err := os.Lstat(from); err != nil {
		return fmt.Errorf("save: no current session: %w", err)
	}
	// The lock makes the check and the rename one step for writers.
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("save: session %q exists", name)
	}
	return os.Rename(from, to)
}

// Reset removes the current session of dir (opcontrol --reset), keeping
// saved ones; the daemon must not be running (DB.Reset).
func Reset(dir string) error {
	l, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer l.unlock()
	return resetCurrent(filepath.Join(dir, samplesDir))
}

func resetCurrent(samples string) error {
	cur := filepath.Join(samples, Current)
	gone := filepath.Join(samples, resetPrefix+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(cur, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(gone)
}

// removeStaleResets finishes resets a killed process began.
func removeStaleResets(samples string) {
	ents, _ := os.ReadDir(samples)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), resetPrefix) {
			os.RemoveAll(filepath.Join(samples, e.Name()))
		}
	}
}

// Sessions lists the sessions in session directory dir, current first if
// there is one, then the saved ones by name.
func Sessions(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, samplesDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	hasCurrent := false
	for _, e := range ents {
		switch n := e.Name(); {
		case !e.IsDir() || strings.HasPrefix(n, "."):
		case n == Current:
			hasCurrent = true
		default:
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if hasCurrent {
		names = append([]string{Current}, names...)
	}
	return names, nil
}

// ReadMeta reads a session's metadata.
func ReadMeta(dir, session string) (Meta, error) {
	var m Meta
	if session != Current {
		if err := ValidSessionName(session); err != nil {
			return m, err
		}
	}
	return readMeta(filepath.Join(dir, samplesDir, session, metaFile))
}

func readMeta(path string) (Meta, error) {
	var m Meta
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return m, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return m, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMeta+1))
	if err != nil {
		return m, err
	}
	if len(b) > maxMeta {
		return m, fmt.Errorf("%s: larger than %d bytes", path, maxMeta)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.Version != metaVersion {
		return m, fmt.Errorf("%s: version %d, this reader knows %d", path, m.Version, metaVersion)
	}
	return m, nil
}

// writeMeta replaces a session's metadata whole: written aside, then
// renamed over the old, so a killed writer leaves the old or the new.
func writeMeta(sessionDir string, m *Meta) error {
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	tmp := filepath.Join(sessionDir, "."+metaFile)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return noSpace(tmp, err)
	}
	return os.Rename(tmp, filepath.Join(sessionDir, metaFile))
}

// JITDir is where a session keeps the copies of process pid's JIT data
// (the daemon copies them there, so reports work after /tmp is cleaned).
func JITDir(dir, session string, pid int) string {
	return filepath.Join(dir, samplesDir, session, jitDir, strconv.Itoa(pid))
}

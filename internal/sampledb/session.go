package sampledb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/trust"
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
	// Unwound counts the call chains unwound from user stacks (a daemon
	// started with -g dwarf, an import of a --call-graph dwarf
	// recording) and JITStops those that stopped in JIT code with
	// neither unwinding information nor a plausible frame pointer: their
	// callers are missing from the call graph.
	Unwound  uint64 `json:"unwound,omitempty"`
	JITStops uint64 `json:"jit_stops,omitempty"`
	// Updated is the last time counts were flushed.
	Updated time.Time `json:"updated"`
}

// dirLock is a held session directory lock, with the directory.
type dirLock struct {
	f *os.File
	// root is the session directory: everything the writer makes in it
	// is made through it.
	root *os.Root
}

// lockDir takes the lock of session directory dir (creating dir), or
// fails with ErrLocked while another process holds it. The kernel drops
// the lock when its holder exits, killed or not, so a stale lock cannot
// exist. The directory is refused if another user could write it or a
// directory above it (trust.OpenOwnDir): they could put links where the
// writer's files go.
func lockDir(dir string) (*dirLock, error) {
	root, err := trust.OpenOwnDir(dir, true)
	if err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	f, err := createOrOpen(root, lockFile, os.O_RDWR)
	if err != nil {
		root.Close()
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		root.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("%s: lock: %w", dir, err)
	}
	return &dirLock{f: f, root: root}, nil
}

// createOrOpen opens name in root, a file the writer keeps (mode 0600):
// created exclusively, or, if it is there, opened without following a
// link and only if it is a regular file of the user running jitprof.
func createOrOpen(root *os.Root, name string, flag int) (*os.File, error) {
	f, err := root.OpenFile(name, flag|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if !errors.Is(err, fs.ErrExist) {
		return f, err
	}
	f, err = trust.OpenEntry(root, name, flag|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file of the user running jitprof", name)
	}
	return f, nil
}

// mkdirIn makes the directory name in root (0700) unless it is there,
// and refuses one that is not a directory: a symlink is never followed.
func mkdirIn(root *os.Root, name string) error {
	if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory (%s)", name, fi.Mode().Type())
	}
	return nil
}

// unlock releases the lock.
func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.root.Close()
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
	return saveCurrent(l.root, name)
}

func saveCurrent(root *os.Root, name string) error {
	if err := ValidSessionName(name); err != nil {
		return err
	}
	from, to := path.Join(samplesDir, Current), path.Join(samplesDir, name)
	if _, err := root.Lstat(from); err != nil {
		return fmt.Errorf("save: no current session: %w", err)
	}
	// The lock makes the check and the rename one step for writers.
	if _, err := root.Lstat(to); err == nil {
		return fmt.Errorf("save: session %q exists", name)
	}
	return root.Rename(from, to)
}

// Reset removes the current session of dir (opcontrol --reset), keeping
// saved ones; the daemon must not be running (DB.Reset).
func Reset(dir string) error {
	l, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer l.unlock()
	return resetCurrent(l.root)
}

func resetCurrent(root *os.Root) error {
	cur := path.Join(samplesDir, Current)
	gone := path.Join(samplesDir, resetPrefix+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := root.Rename(cur, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return root.RemoveAll(gone)
}

// removeStaleResets finishes resets a killed process began.
func removeStaleResets(root *os.Root) {
	d, err := root.Open(samplesDir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if strings.HasPrefix(n, resetPrefix) {
			root.RemoveAll(path.Join(samplesDir, n))
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
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	return decodeMeta(f, path)
}

// decodeMeta reads the metadata file f, named path in errors.
func decodeMeta(f *os.File, path string) (Meta, error) {
	var m Meta
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
func writeMeta(session *os.Root, m *Meta) error {
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	tmp := "." + metaFile
	// A killed writer's leftover: the file is created exclusively.
	session.Remove(tmp)
	f, err := session.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return noSpace(tmp, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		session.Remove(tmp)
		return noSpace(tmp, err)
	}
	return session.Rename(tmp, metaFile)
}

// JITDir is where a session keeps the copies of process pid's JIT data
// (the daemon copies them there, so reports work after /tmp is cleaned).
func JITDir(dir, session string, pid int) string {
	return filepath.Join(dir, samplesDir, session, jitDir, strconv.Itoa(pid))
}

// readMetaIn reads the metadata of the session whose directory is root.
func readMetaIn(root *os.Root) (Meta, error) {
	f, err := root.OpenFile(metaFile, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	return decodeMeta(f, metaFile)
}

// sampleFiles counts the sample files of the session whose directory is
// root, and their size: every regular file but the metadata, hidden
// files (being made, or damaged) and the JIT data's. No link is
// followed.
func sampleFiles(root *os.Root) (n int, size int64) {
	fs.WalkDir(root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case e.IsDir():
			if p == jitDir {
				return fs.SkipDir
			}
		case e.Type().IsRegular() && p != metaFile && !strings.HasPrefix(e.Name(), "."):
			if fi, err := e.Info(); err == nil {
				n++
				size += fi.Size()
			}
		}
		return nil
	})
	return n, size
}

// DefaultDir is the session directory when none is given:
// $JITPROF_SESSION_DIR, else /var/lib/jitprof for root, else
// ~/.local/share/jitprof.
func DefaultDir() string {
	if d := os.Getenv("JITPROF_SESSION_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/jitprof"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "jitprof")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("jitprof-%d", os.Geteuid()), "sessions")
}

package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jitprof/jitprof/internal/archive"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/sessionsrc"
)

// ArchiveFlags is --archive FILE: an archive jitprof archive wrote, read
// instead of a recording (-i) with the files it holds, never this
// machine's.
type ArchiveFlags struct{ path string }

// Register defines --archive on fs.
func (a *ArchiveFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&a.path, "archive", "", "read the archive `FILE` (jitprof archive, daemon save --archive) instead of a recording: its recording or session, with the images, debug and source files and kernel symbols it holds, not this machine's")
}

// Enabled reports whether --archive was given.
func (a *ArchiveFlags) Enabled() bool { return a.path != "" }

// Source opens the archive.
func (a *ArchiveFlags) Source(jit *AnonFlags) (driver.Source, error) { return OpenArchive(a.path, jit) }

// OpenArchive opens the archive at path: a recording's, or a session's,
// read with the JIT options of jit.
func OpenArchive(path string, jit *AnonFlags) (driver.Source, error) {
	return driver.OpenArchive(path, jit.Force, func(dir, name string) (driver.Source, error) {
		return SessionSource(jit, dir, name)
	})
}

// SessionSource is the Source of session name of the sessions
// directory dir.
func SessionSource(jit *AnonFlags, dir, name string) (driver.Source, error) {
	avail, err := sampledb.Sessions(dir)
	if err != nil {
		return nil, err
	}
	spec, err := sampledb.ParseSpec([]string{"session:" + name})
	if err != nil {
		return nil, err
	}
	return sessionsrc.NewSession(dir, spec, avail, jit.Force), nil
}

// TellArchive says what an archive holds and lacks, for cmd's command.
func TellArchive(w io.Writer, cmd, path string, m *archive.Manifest) {
	count := map[string]int{}
	var size int64
	for _, f := range m.Files {
		count[f.Role]++
		size += f.Size
	}
	var parts []string
	for _, r := range []struct{ role, one, many string }{
		{archive.RoleRecording, "the recording", ""}, {archive.RoleSession, "1 session file", "%d session files"},
		{archive.RoleImage, "1 image", "%d images"}, {archive.RoleDebug, "1 debug file", "%d debug files"},
		{archive.RoleSource, "1 source file", "%d source files"}, {archive.RoleKallsyms, "the kernel's symbols", ""},
		{archive.RoleVDSO, "the vDSO", ""},
	} {
		switch n := count[r.role]; {
		case n == 1 || n > 0 && r.many == "":
			parts = append(parts, r.one)
		case n > 1:
			parts = append(parts, fmt.Sprintf(r.many, n))
		}
	}
	fmt.Fprintf(w, "jitprof %s: wrote %s: %s (%.1f MB before compression)\n", cmd, path, strings.Join(parts, ", "), float64(size)/1e6)
	for _, ms := range m.Missing {
		fmt.Fprintf(w, "jitprof %s: not archived: %s: %s\n", cmd, ms.Path, ms.Why)
	}
}

// ArchiveSession writes to out the archive of the saved session name of
// the sessions directory dir, with the files its reports read
// (driver.Archive), and says what it holds on log.
func ArchiveSession(dir, name, out string, log io.Writer) error {
	var jit AnonFlags
	src, err := SessionSource(&jit, dir, name)
	if err != nil {
		return err
	}
	own, err := driver.SessionFiles(dir, name)
	if err != nil {
		src.Close()
		return err
	}
	o := driver.Options{JIT: jit.Options(), Command: "daemon", Log: log}
	m, err := driver.WriteArchive(context.Background(), src, archive.KindSession, name, own, o, out)
	if err != nil {
		return err
	}
	TellArchive(log, "daemon", out, m)
	return nil
}

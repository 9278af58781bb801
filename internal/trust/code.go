package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// FindCode finds name, code jitprof runs in a process of its own, as a
// shell finds a command, but checked: in each of dirs, then in each
// directory of $PATH, in order, the first executable file named name
// that passes OpenCode is returned, open. A candidate that OpenCode
// refuses is passed over, as a shell passes over one it cannot execute,
// so that a file another user could write, found first, neither runs nor
// keeps jitprof from the right one. Relative directories of $PATH are
// left out, as exec.LookPath leaves them. The error wraps
// fs.ErrNotExist when there is no candidate, and ErrUntrusted, with each
// refusal, when every candidate was refused.
func FindCode(name string, dirs ...string) (*File, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	var refused []string
	for _, d := range dirs {
		path := filepath.Join(d, name)
		// Only a file that is there is a candidate: a directory of
		// $PATH may well be a symlink (/bin to /usr/bin), which
		// OpenCode refuses whatever the name.
		if _, err := os.Stat(path); err != nil {
			continue
		}
		f, err := OpenCode(path)
		if errors.Is(err, ErrUntrusted) {
			refused = append(refused, strings.TrimSuffix(err.Error(), ": "+ErrUntrusted.Error()))
			continue
		}
		if err != nil {
			continue // gone since
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&0o111 == 0 {
			f.Close()
			continue
		}
		return f, nil
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("%s: every candidate was refused: %s: %w", name, strings.Join(refused, "; "), ErrUntrusted)
	}
	return nil, &fs.PathError{Op: "find", Path: name, Err: fs.ErrNotExist}
}

// Exec replaces this process with the code f is, run through its
// descriptor, not whatever its path names by then, with argv and env;
// it returns only an error.
func (f *File) Exec(argv, env []string) error {
	return unix.Exec(linux.FDPath(int(f.Fd())), argv, env)
}

// Command anonhandler is an example external anonymous-sample handler for
// jitprof (docs/anon-handlers.md). Installed as jitprof-anon-example on
// PATH, it is used with `jitprof report --anon-handler=example`.
//
// It claims a process when $ANONHANDLER_DIR (default /tmp) holds
// jitsyms-PID.txt, a file of lines "NAME START SIZE" (START and SIZE in
// hexadecimal) that a toy JIT wrote, and names addresses by those ranges,
// without times. It uses only the standard library, as a handler written
// outside this module would.
//
// Another user can write /tmp, and can put a symlink, a FIFO, a hard link
// or a file of their own where the JIT's file should be: claim opens the
// file as a handler should (openOwn): never through a symlink, never
// blocking, and only a regular file of the process's user with one link.
// When jitprof runs as root it runs the handler as that user, without
// privileges; these checks keep the handler honest as root's too.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

type sym struct {
	name        string
	start, size uint64
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<10)
	out := bufio.NewWriter(os.Stdout)
	var syms []sym
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "claim":
			var err error
			syms, err = claim(f)
			switch {
			case err != nil:
				fmt.Fprintf(out, "error %v\n", err)
			case syms == nil:
				fmt.Fprintln(out, "no")
			default:
				fmt.Fprintf(out, "yes example %s\n", path(f))
			}
		case "resolve":
			n := -1
			if len(f) == 2 {
				n, _ = strconv.Atoi(f[1])
			}
			if n < 0 {
				fmt.Fprintf(out, "error bad request %q\n", in.Text())
				break
			}
			for i := 0; i < n && in.Scan(); i++ {
				q := strings.Fields(in.Text())
				if len(q) != 2 {
					fmt.Fprintln(out, "none")
					continue
				}
				addr, err := strconv.ParseUint(q[0], 16, 64)
				if err != nil {
					fmt.Fprintln(out, "none")
					continue
				}
				fmt.Fprintln(out, lookup(syms, addr))
			}
		case "quit":
			out.Flush()
			return
		}
		// Flush after every request: jitprof waits for the answers.
		out.Flush()
	}
}

// path is the symbol file of the process a claim request names: its
// PID NSPID UID ROOT COMM fields are f[1:].
func path(f []string) string {
	dir := os.Getenv("ANONHANDLER_DIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "jitsyms-"+f[1]+".txt")
}

// maxFile bounds the symbol file read.
const maxFile = 64 << 20

// openOwn opens path for reading if it is a regular file of uid's with
// one link, reached without following a symlink at its end (O_NOFOLLOW)
// and without blocking on a FIFO (O_NONBLOCK). Its errors never quote
// the file.
func openOwn(path string, uid int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ELOOP {
			return nil, fmt.Errorf("refusing %s: a symlink", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("refusing %s: not a regular file", path)
	case int(st.Uid) != uid:
		err = fmt.Errorf("refusing %s: owned by uid %d, not by the process's user, uid %d", path, st.Uid, uid)
	case st.Nlink != 1:
		err = fmt.Errorf("refusing %s: %d hard links", path, st.Nlink)
	case fi.Size() > maxFile:
		err = fmt.Errorf("refusing %s: %d bytes, over %d", path, fi.Size(), maxFile)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func claim(f []string) ([]sym, error) {
	if len(f) < 6 {
		return nil, fmt.Errorf("claim needs 5 fields, got %d", len(f)-1)
	}
	// The process's user; -1 when jitprof does not know it: then only
	// this handler's own user's files are read.
	uid, err := strconv.Atoi(f[3])
	if err != nil {
		return nil, fmt.Errorf("bad uid in claim")
	}
	if uid < 0 {
		uid = os.Geteuid()
	}
	file, err := openOwn(path(f), uid)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(file, maxFile))
	file.Close()
	if err != nil {
		return nil, err
	}
	syms := []sym{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s sym
		if _, err := fmt.Sscanf(line, "%s %x %x", &s.name, &s.start, &s.size); err != nil || s.size == 0 {
			return nil, fmt.Errorf("%s:%d: want NAME START SIZE", path(f), i+1)
		}
		syms = append(syms, s)
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].start < syms[j].start })
	return syms, nil
}

func lookup(syms []sym, addr uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].start > addr })
	if i == 0 || addr-syms[i-1].start >= syms[i-1].size {
		return "none"
	}
	s := syms[i-1]
	return fmt.Sprintf("ok %x %x 0 %s", s.start, s.size, s.name)
}

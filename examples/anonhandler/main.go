// Command anonhandler is an example external anonymous-sample handler for
// jitprof (docs/anon-handlers.md). Installed as jitprof-anon-example on
// PATH, it is used with `jitprof report --anon-handler=example`.
//
// It claims a process when $ANONHANDLER_DIR (default /tmp) holds
// jitsyms-PID.txt, a file of lines "NAME START SIZE" (START and SIZE in
// hexadecimal) that a toy JIT wrote, and names addresses by those ranges,
// without times. It uses only the standard library, as a handler written
// outside this module would.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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

func claim(f []string) ([]sym, error) {
	if len(f) < 6 {
		return nil, fmt.Errorf("claim needs 5 fields, got %d", len(f)-1)
	}
	b, err := os.ReadFile(path(f))
	if os.IsNotExist(err) {
		return nil, nil
	}
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

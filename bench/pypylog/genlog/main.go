// Command genlog writes a big PYPYLOG for bench/pypylog/run.sh: the log
// Debian's pypy3 wrote for internal/pypylog/testdata/bridges.py, repeated
// with timestamps going on, loop numbers and addresses moved along (so
// every repetition names new loops and bridges, as a long-running program
// compiling ever more code would), and a gc-minor section between
// repetitions, as a log of several categories has.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"strconv"
	"strings"
)

var (
	marker  = regexp.MustCompile(`^\[([0-9a-f]+)\] `)
	loopNum = regexp.MustCompile(`^(# )?Loop ([0-9]+) `)
	address = regexp.MustCompile(`0x7f[0-9a-f]{10}`)
)

func main() {
	mb := flag.Int("mb", 1024, "size to write, in MiB")
	out := flag.String("o", "", "output file")
	tmpl := flag.String("template", "internal/pypylog/testdata/bridges.log", "the log to repeat")
	flag.Parse()
	b, err := os.ReadFile(*tmpl)
	if err != nil {
		log.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	first, _ := strconv.ParseUint(marker.FindStringSubmatch(lines[0])[1], 16, 64)
	last, _ := strconv.ParseUint(marker.FindStringSubmatch(lines[len(lines)-1])[1], 16, 64)
	span := last - first + 100_000

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	for k := uint64(0); written < int64(*mb)<<20; k++ {
		shift := k * span
		for _, l := range lines {
			if m := marker.FindStringSubmatch(l); m != nil {
				t, _ := strconv.ParseUint(m[1], 16, 64)
				l = fmt.Sprintf("[%x] %s", t+shift, l[len(m[0]):])
			} else {
				if m := loopNum.FindStringSubmatch(l); m != nil {
					n, _ := strconv.Atoi(m[2])
					l = m[1] + "Loop " + strconv.Itoa(n+int(k)*10) + " " + l[len(m[0]):]
				}
				l = address.ReplaceAllStringFunc(l, func(a string) string {
					v, _ := strconv.ParseUint(a[2:], 16, 64)
					return fmt.Sprintf("%#x", v+k%4096*0x100000)
				})
			}
			n, _ := fmt.Fprintln(w, l)
			written += int64(n)
		}
		n, _ := fmt.Fprintf(w, "[%x] {gc-minor\nminor collect, total memory used: %d\nnumber of pinned objects: 0\n[%x] gc-minor}\n", last+shift+10, 400000+k, last+shift+5000)
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

package jitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Cleanup removes the databases in dir whose process is gone: its pid no
// longer exists, is a zombie, or now belongs to a process started at
// another time than the one the header recorded. Databases of live
// processes, files that are not databases, and files that fail the
// default ReadOptions checks are left alone. It returns the paths removed.
func Cleanup(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("jitlog: cleanup: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "anon.")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		h, err := readHeader(path)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				continue // unsafe or unreadable: not ours to remove
			}
			// A file a creator never finished: its name is all we have.
			n, _ := strconv.Atoi(pid)
			h = &Header{PID: uint32(n)}
			if start, _, err := procStat(n); err == nil {
				h.StartTime = start // alive as far as we can tell
			}
		}
		if ProcessAlive(h) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("jitlog: cleanup: %w", err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

func readHeader(path string) (*Header, error) {
	f, size, err := openChecked(path, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewReader(f, size)
	if err != nil {
		return nil, err
	}
	return r.Header(), nil
}

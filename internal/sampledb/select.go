package sampledb

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Selected is one sample file a specification selected.
type Selected struct {
	Session string
	Key     FileKey
	// Name is the file's name within the session (Name(Key)).
	Name string
}

// Selection is what Select found.
type Selection struct {
	Files []Selected
	// Skipped are the names under the sessions' sample trees that are
	// not sample file names (mangled, so safe to print with %q).
	Skipped []string
}

// Select lists the sample files of the session directory dir that spec
// selects, session by session, each in name order. Nothing is opened but
// directories; Open reads a file.
func Select(dir string, spec *Spec) (Selection, error) {
	var sel Selection
	avail, err := Sessions(dir)
	if err != nil {
		return sel, err
	}
	for _, session := range spec.SessionNames(avail) {
		if err := selectSession(dir, session, spec, &sel); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

func selectSession(dir, session string, spec *Spec, sel *Selection) error {
	root, err := os.OpenRoot(filepath.Join(dir, samplesDir, session))
	if err != nil {
		return err
	}
	defer root.Close()
	tops, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	for _, top := range tops {
		// Sample trees begin with a marker; session.json, jit/ and
		// hidden files are not samples.
		if !top.IsDir() || !strings.HasPrefix(top.Name(), "{") {
			continue
		}
		err := walk(root, top.Name(), func(name string, regular bool) {
			k, err := Parse(name)
			if !regular || err != nil {
				sel.Skipped = append(sel.Skipped, session+"/"+name)
				return
			}
			if spec.Match(k) {
				sel.Files = append(sel.Files, Selected{Session: session, Key: k, Name: name})
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// maxDepth bounds the directories walk descends: names are at most three
// images of maxDirs levels and their chunks, well under it.
const maxDepth = 1024

// walk calls f for every entry but directories under root's directory
// name, in name order, skipping hidden entries (files being created,
// damaged files kept aside). It holds a handle per level, so each
// directory costs one open however deep it is (opening by path from the
// root would cost one per level).
func walk(parent *os.Root, name string, f func(name string, regular bool)) error {
	var rec func(r *os.Root, prefix string, depth int) error
	rec = func(r *os.Root, prefix string, depth int) error {
		if depth > maxDepth {
			return fmt.Errorf("%s: deeper than %d directories", prefix, maxDepth)
		}
		ents, err := fs.ReadDir(r.FS(), ".")
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			if !e.IsDir() {
				f(prefix+"/"+n, e.Type().IsRegular())
				continue
			}
			sub, err := r.OpenRoot(n)
			if err != nil {
				return err
			}
			err = rec(sub, prefix+"/"+n, depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	r, err := parent.OpenRoot(name)
	if err != nil {
		return err
	}
	defer r.Close()
	return rec(r, name, 1)
}

// Open maps a selected sample file read-only, checks it, and checks its
// header says what its name says. The daemon may be writing it: the
// Reader sees the counts of when it was opened, or later ones.
func Open(dir string, s Selected) (*Reader, error) {
	if s.Session != Current {
		if err := ValidSessionName(s.Session); err != nil {
			return nil, err
		}
	}
	root, err := os.OpenRoot(filepath.Join(dir, samplesDir, s.Session))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := s.Session + "/" + s.Name
	f, err := root.OpenFile(s.Name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := openMapped(f, name)
	if err != nil {
		return nil, err
	}
	if err := r.Header.agrees(s.Key); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

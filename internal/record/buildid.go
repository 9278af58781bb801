package record

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// buildIDs reads the build-ids of the images samples hit: files that have
// none, or are gone, are left out as perf leaves them out.
func (r *Recorder) buildIDs() []perfdata.BuildID {
	var l []perfdata.BuildID
	if r.kernelHit {
		if id, err := kernelBuildID(); err == nil {
			l = append(l, perfdata.BuildID{Misc: perfdata.MiscKernel | perfdata.MiscBuildIDSize, PID: -1, ID: id, Filename: "[kernel.kallsyms]"})
		}
	}
	var names []string
	for name := range r.hits {
		// Pseudo-files ([vdso], //anon) and deleted files have no file to read.
		if strings.HasPrefix(name, "/") && !strings.HasSuffix(name, " (deleted)") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		// With the rights of the process that ran it: a process can name
		// any path by mapping its own file there in a mount namespace of
		// its own, and must not make root read a file it could not. In
		// such a namespace the path is read as the process sees it, in
		// its root, as perf reads it there: the host's file at that path,
		// if any, is another.
		img := r.hits[name]
		path := name
		if root, ok := r.otherRoot(img.pid); ok {
			path = root + name
		}
		id, err := elfBuildID(path, img.as)
		if err != nil || id == nil {
			continue
		}
		l = append(l, perfdata.BuildID{Misc: perfdata.MiscUser | perfdata.MiscBuildIDSize, PID: -1, ID: id, Filename: name})
	}
	return l
}

// otherRoot returns the root of process pid, /proc/PID/root, when it
// still runs, is the process recorded, and sees another mount namespace
// than jitprof.
func (r *Recorder) otherRoot(pid uint32) (string, bool) {
	id := r.ids[pid]
	if !id.known || pid == 0 {
		return "", false
	}
	if now, err := linux.Host.Identity(int(pid)); err != nil || now.StartTime != id.StartTime {
		return "", false
	}
	if same, err := linux.Host.SameMountNamespace(int(pid)); err != nil || same {
		return "", false
	}
	return linux.Host.RootDir(int(pid)), true
}

// elfBuildID returns the GNU build-id of an ELF file, read with c's
// rights (trust.OpenNamed: never blocking on a FIFO or opening a device),
// or nil if it has none: perf's BUILD_ID feature holds at most 20 bytes.
func elfBuildID(path string, c trust.Cred) ([]byte, error) {
	id, err := symbolize.FileBuildID(path, c)
	if err != nil {
		return nil, err
	}
	return buildIDBytes(id)
}

// kernelBuildID reads the running kernel's build-id from its notes.
func kernelBuildID() ([]byte, error) {
	notes, err := linux.KernelNotes()
	if err != nil {
		return nil, err
	}
	id, err := buildIDBytes(symbolize.NotesBuildID(notes, binary.NativeEndian))
	if err == nil && id == nil {
		err = errors.New("/sys/kernel/notes: no build-id")
	}
	return id, err
}

// buildIDBytes decodes a hex build-id, nil for "" or one longer than
// perf's 20 bytes.
func buildIDBytes(id string) ([]byte, error) {
	if id == "" || len(id) > 40 {
		return nil, nil
	}
	return hex.DecodeString(id)
}

package report

import (
	"path/filepath"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// Keys that separate samples by application, as OProfile's --separate=lib
// and --separate=kernel do: its sample files name an app image, the
// executable of the process, beside the image the sample fell in.
const (
	// KeyApp is the application of every sample (--separate=kernel).
	KeyApp = "app"
	// KeyUserApp is the application of user-space samples; kernel
	// samples are their own application, as OProfile keeps them without
	// --separate=kernel (--separate=lib).
	KeyUserApp = "userapp"
)

// commLen is the kernel's TASK_COMM_LEN less its NUL: a comm is the
// executable's base name cut to this length.
const commLen = 15

// appIndex names each thread's application. The profile keeps no
// process-to-executable table, so it is found from the samples: the
// image the thread ran whose base name the comm was made from; else the
// only executable (not a shared library) the thread ran, which names a
// thread that renamed itself; else, for a process's main thread under
// another comm than its process's application (a child not yet exec'd),
// the one application that comm has in other threads; else the
// application of its process's other threads; and failing all, the comm
// itself.
type appIndex struct {
	p     *profile.Profile
	built bool
	// byThread holds, per thread, an image index, or -2-comm (the comm's
	// string index) when no image was found.
	byThread []int64
}

// key is the app key value of a sample of entry e at frame (-1: none).
func (a *appIndex) key(e *profile.Entry, frame int32, kernelToo bool) int64 {
	if !a.built {
		a.build()
	}
	if frame >= 0 && !kernelToo {
		if im := a.p.FuncOf(frame).Image; a.p.Images[im].Kind == profile.ImageKernel {
			return int64(im)
		}
	}
	return a.byThread[e.Thread]
}

func (a *appIndex) build() {
	a.built = true
	p := a.p
	ran := make([]map[int32]bool, len(p.Threads))
	var stack []int32
	for i := range p.Entries {
		e := &p.Entries[i]
		if ran[e.Thread] == nil {
			ran[e.Thread] = map[int32]bool{}
		}
		stack = p.Stack(stack[:0], e.Stack)
		for _, fr := range stack {
			if im := p.FuncOf(fr).Image; p.Images[im].Kind == profile.ImageFile {
				ran[e.Thread][im] = true
			}
		}
	}
	a.byThread = make([]int64, len(p.Threads))
	byPID := map[uint32]int64{}
	for t := range p.Threads {
		th := &p.Threads[t]
		a.byThread[t] = -2 - int64(th.Comm)
		comm := p.Strings[th.Comm]
		// The lowest image index wins, so the answer does not depend on
		// map order.
		for im := range int32(len(p.Images)) {
			if ran[t][im] && commOf(p.Images[im].Name) == comm {
				a.byThread[t] = int64(im)
				if _, ok := byPID[th.PID]; !ok {
					byPID[th.PID] = int64(im)
				}
				break
			}
		}
	}
	for t := range p.Threads {
		if a.byThread[t] >= 0 {
			continue
		}
		exe, n := int32(-1), 0
		for im := range int32(len(p.Images)) {
			if name := p.Images[im].Name; ran[t][im] && !strings.HasPrefix(name, "[") && !strings.Contains(filepath.Base(name), ".so") {
				exe, n = im, n+1
			}
		}
		if n == 1 {
			a.byThread[t] = int64(exe)
		}
	}
	// The threads still unnamed ran only shared libraries and the kernel.
	// A process's main thread whose comm is not its process's
	// application's is most likely a child between its fork and its exec:
	// it still runs its parent's program, under its parent's comm (perf's
	// comm key puts it there too). So it takes the one application that
	// comm has elsewhere, else the comm itself, never the program its
	// process execs later. Any other thread takes its process's.
	ofComm := map[int32]int64{} // -1: the comm names more than one
	for t := range p.Threads {
		if im := a.byThread[t]; im >= 0 {
			c := p.Threads[t].Comm
			if was, ok := ofComm[c]; ok && was != im {
				im = -1
			}
			ofComm[c] = im
		}
	}
	for t := range p.Threads {
		th := &p.Threads[t]
		if a.byThread[t] >= 0 {
			continue
		}
		im, ok := byPID[th.PID]
		if th.TID == th.PID && (!ok || commOf(p.Images[im].Name) != p.Strings[th.Comm]) {
			im, ok = ofComm[th.Comm]
			ok = ok && im >= 0
		}
		if ok {
			a.byThread[t] = im
		}
	}
}

func commOf(path string) string {
	base := filepath.Base(path)
	if len(base) > commLen {
		base = base[:commLen]
	}
	return base
}

// appName is the text of an app key value.
func appName(p *profile.Profile, v int64) string {
	if v >= 0 {
		return p.Images[v].Name
	}
	return p.Strings[-2-v]
}

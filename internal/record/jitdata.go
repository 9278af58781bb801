package record

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/perfdata"
)

// maxJITData bounds what one recording embeds: JIT data is usually a few
// MB, and a runaway map should cost a warning, not the disk.
const maxJITData = 512 << 20

// embedJITData copies the JIT data files of the recorded processes that
// ran JIT code (anonymous executable memory, or a jitdump marker mapping)
// into jitprof's own feature section, so that reports name JIT code after
// /tmp is cleaned or on another machine. It returns how many files it
// embedded; problems go to notice.
// maxPipeFeature is the most a pipe-mode HEADER_FEATURE record holds:
// a u16 size less its 16-byte head.
const maxPipeFeature = 1<<16 - 1 - 16

func (r *recorder) embedJITData(notice func(string), pipe bool) int {
	pids := make([]uint32, 0, len(r.images.procs))
	for pid, p := range r.images.procs {
		if p.runsJIT() {
			pids = append(pids, pid)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	var entries []jitbundle.Entry
	left := int64(maxJITData)
	for _, pid := range pids {
		p := r.images.procs[pid]
		ap := &anon.Process{PID: int(pid), NSPID: int(pid), UID: os.Getuid()}
		for _, m := range p.maps {
			ap.Mappings = append(ap.Mappings, anon.Mapping{Start: m.start, End: m.end, Path: m.img.name, Exec: true})
		}
		ap.FillLive("/proc")
		es, errs := anon.Collect(ap, left)
		for _, err := range errs {
			if notice != nil {
				notice(err.Error())
			}
		}
		for _, e := range es {
			left -= int64(len(e.Data))
		}
		entries = append(entries, es...)
	}
	if len(entries) == 0 {
		return 0
	}
	b, err := jitbundle.Encode(entries)
	if err != nil {
		if notice != nil {
			notice(fmt.Sprintf("JIT data not embedded: %v", err))
		}
		return 0
	}
	if pipe && len(b) > maxPipeFeature {
		// A stream carries a feature in one record, of 64 KiB at most.
		if notice != nil {
			notice(fmt.Sprintf("JIT data not embedded: its %d KiB do not fit a pipe-mode record (64 KiB); reports read the JIT files themselves, while they last", len(b)>>10))
		}
		return 0
	}
	r.w.Features.SetRaw(perfdata.FeatJitprof, b)
	return len(entries)
}

// runsJIT reports whether a process mapped anonymous executable memory
// or a jitdump file, the marks of a JIT.
func (p *procMaps) runsJIT() bool {
	for _, m := range p.maps {
		n := m.img.name
		if m.anon || strings.HasPrefix(filepath.Base(n), "jit-") && strings.HasSuffix(n, ".dump") {
			return true
		}
	}
	return false
}

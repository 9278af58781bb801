package driver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/hugepages"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// Source is where samples come from: a perf.data recording
// (OpenRecording), a session of the sample database, a live collector.
type Source interface {
	// Name says what is read, such as a perf.data file's path.
	Name() string
	// Load resolves the source's samples into a profile. When bind is
	// not nil the source calls it once with its processes, before it
	// resolves the first sample, and names JIT code with the Binder it
	// returns.
	Load(ctx context.Context, opts LoadOptions, bind func(anonbind.Processes) *anonbind.Binder) (*profile.Profile, error)
	// Warnings are what the source found wrong in its data but read
	// past, for the user.
	Warnings() []string
	// Close releases the source; the profile may point into it.
	Close() error
}

// LoadOptions say what a profile keeps of each sample.
type LoadOptions struct {
	// Lines resolves a source line for every frame (DWARF).
	Lines bool
	// Addresses keeps each frame's image-relative address (annotate).
	Addresses bool
	// LeafOnly keeps only the sampled address of each stack: a flat
	// report needs no callchains.
	LeafOnly bool
	// Times keeps the time of every sample (Entry.Times), where the
	// source has them.
	Times bool
	// Arcs asks a source that keeps caller-callee arcs instead of stacks
	// (a sample database's {cg} files) for them (Profile.Arcs): report
	// -g on a session.
	Arcs bool
	// Progress, when set, is called now and then with how much of the
	// source is read.
	Progress func(done, total int64)
	// Symbolizer finds the images; nil means the machine's files
	// (Files.Symbolizer of an archive's source sets it).
	Symbolizer *symbolize.Symbolizer
}

// Recording is the Source of a perf.data file or pipe-mode stream,
// replayed by internal/perfdatasrc.
type Recording struct {
	path string
	f    *perfdata.File
	// modified is when the file was last written: about when the
	// recording ended.
	modified time.Time
}

// OpenRecording opens the recording at path ("-": a stream on standard
// input), refusing, as perf does, one owned by neither the user running
// jitprof nor root unless force (trust.OpenRecording).
func OpenRecording(path string, force bool) (*Recording, error) {
	fd, err := trust.OpenRecording(path, force)
	if err != nil {
		return nil, err
	}
	var modified time.Time
	if fi, err := fd.Stat(); err == nil && fi.Mode().IsRegular() {
		modified = fi.ModTime()
	}
	var f *perfdata.File
	if path == "-" {
		f, err = perfdata.Open(path)
	} else {
		f, err = perfdata.OpenFile(fd, path)
	}
	if err != nil {
		return nil, err
	}
	if f.Pipe || f.DataSize >= bigRecording {
		adviseHeap(heapBlock(f))
	}
	return &Recording{path: path, f: f, modified: modified}, nil
}

// bigRecording is the size of data from which reading a recording asks
// for huge pages for the heap it is about to fill (internal/hugepages).
// Below it the heap is a few megabytes, and the collection Heap runs
// costs more faults than huge pages save (bench/RESULTS.md). A stream's
// size is not known: it gets them.
const bigRecording = 4 << 20

// heapBlock is how much of the heap to come hugepages.Heap advises for
// reading f: untouched address space, but each of its pages costs the
// runtime a word of metadata, so it is about what the report will use
// (a fifth of the data or less) within 32 and 256 MiB; a stream, of
// unknown size, gets the most.
func heapBlock(f *perfdata.File) int {
	if f.Pipe {
		return 256 << 20
	}
	return int(min(max(f.DataSize/2, 32<<20), 256<<20))
}

// adviseHeap is hugepages.Heap; a test counts the calls.
var adviseHeap = hugepages.Heap

// File is the recording, for the commands that read its records
// themselves (dump, pathtime, pypy).
func (r *Recording) File() *perfdata.File { return r.f }

// Name implements Source.
func (r *Recording) Name() string { return r.path }

// Warnings implements Source.
func (r *Recording) Warnings() []string { return r.f.Warnings() }

// Close implements Source.
func (r *Recording) Close() error { return r.f.Close() }

// Load implements Source. The processes are the recording's, with who
// each was and the JIT data jitprof record copied for it; a file is
// read once more first, to ask external handlers about every JIT
// address ahead, in batches, where a stream's samples go by once and
// are asked about one at a time.
func (r *Recording) Load(ctx context.Context, opts LoadOptions, bind func(anonbind.Processes) *anonbind.Binder) (*profile.Profile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ropts := perfdatasrc.Options{Lines: opts.Lines, Addresses: opts.Addresses, LeafOnly: opts.LeafOnly, Times: opts.Times, Progress: opts.Progress, Symbolizer: opts.Symbolizer}
	if bind != nil {
		// The processes with the recorder's bundle and the recording's
		// span (for handlers that ask: protocol 2's range line; a
		// stream has no features to say it).
		binder := func(tl *perfdatasrc.Timeline) (*anonbind.Binder, error) {
			bundle, err := jitbundle.Load(r.f)
			if err != nil {
				return nil, fmt.Errorf("jitprof's JIT data: %w", err)
			}
			var span anon.TimeRange
			if first, last, err := r.f.Features.SampleTime(); err == nil && first <= last {
				span = anon.TimeRange{From: first, To: last}
			}
			return bind(anonbind.Recorded(tl.Tracker, bundle, span)), nil
		}
		// A DWARF recording read in one pass binds its handlers before
		// the timeline is whole; if it is read the two-pass way after
		// all, Bind binds them again and the early Binder is closed.
		var early *anonbind.Binder
		ropts.BindEarly = func(tl *perfdatasrc.Timeline) (perfdatasrc.EarlyAnon, error) {
			b, err := binder(tl)
			if err != nil || !b.Early() {
				return nil, err
			}
			early = b
			return b, nil
		}
		ropts.Bind = func(tl *perfdatasrc.Timeline) (resolve.AnonResolver, error) {
			if early != nil {
				early.Close()
				early = nil
			}
			b, err := binder(tl)
			if err != nil {
				return nil, err
			}
			if b.Batches() {
				qs := map[uint32][]anon.Query{}
				perfdatasrc.ScanAnon(r.f, tl, opts.LeafOnly, func(pid uint32, addr, time uint64) {
					qs[pid] = append(qs[pid], anon.Query{Addr: addr, Time: time})
				})
				b.Prepare(qs)
			}
			return b, nil
		}
	}
	ropts.Live = func(tl *perfdatasrc.Timeline) func(uint32) (symbolize.Place, bool) {
		bundle, _ := jitbundle.Load(r.f) // without it, who each process was is not known
		return livePlaces(anonbind.Recorded(tl.Tracker, bundle, anon.TimeRange{}))
	}
	p, err := perfdatasrc.Load(r.f, ropts)
	if err != nil {
		return nil, err
	}
	if p.WallNS == 0 {
		// Without perf's CLOCK_DATA (perf record -k; jitprof record
		// writes it), the recording's clock is tied to wall time by
		// its end: the file's last write, or now for a stream.
		end := r.modified
		if end.IsZero() {
			end = time.Now()
		}
		p.WallNS, p.ClockNS = uint64(end.UnixNano()), p.EndNS
	}
	return p, nil
}

// livePlaces says where each recorded process that still runs sees its
// own files, and with whose rights to read them: its recorded user and
// group, or, for a process the recording does not identify, those /proc
// gives now. A pid is the recorded process only if its start time is the
// recorded one or, without one, its command name is (anon.FillLive); a
// process the recording names neither way is not looked for.
func livePlaces(procs anonbind.Processes) func(uint32) (symbolize.Place, bool) {
	var mu sync.Mutex
	seen := map[uint32]*symbolize.Place{}
	return func(pid uint32) (symbolize.Place, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := seen[pid]
		if !ok {
			p := procs.Process(pid)
			if (p.StartTime != 0 || p.Comm != "") && p.FillLive(linux.Host) && p.UID >= 0 {
				gid := p.GID
				if gid < 0 {
					gid = trust.Nobody.GID
				}
				at = &symbolize.Place{Root: p.Root, As: trust.Cred{UID: p.UID, GID: gid}}
			}
			seen[pid] = at
		}
		if at == nil {
			return symbolize.Place{}, false
		}
		return *at, true
	}
}

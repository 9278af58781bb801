package sessionsrc

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// Options say what to read.
type Options struct {
	// Dir is the session directory; Spec picks the sample files.
	Dir  string
	Spec *sampledb.Spec
	// Anon, when set, names JIT code with these handlers; without it
	// anonymous samples are in OProfile's anon buckets.
	Anon  []anon.Handler
	Force bool
	// Lines resolves source lines.
	Lines bool
	// Addresses keeps each frame's image-relative address: a sample
	// file's offsets (annotate, as opannotate reads a session).
	Addresses bool
	// Bind, when set instead of Anon, makes the Binder that names JIT
	// code from the sessions' processes (driver.Source's bind).
	Bind func(anonbind.Processes) *anonbind.Binder
	// Arcs reads the call-graph files into the profile's Arcs.
	Arcs bool
	// Symbolizer finds the images; nil means the machine's files, their
	// function tables cached.
	Symbolizer *symbolize.Symbolizer
}

// Info is what the report says of the sessions besides the profile.
type Info struct {
	Sessions []string
	Files    int
	// Skipped are names in the sample trees that are no sample files;
	// Unreadable the sample files that did not read (with why).
	Skipped    []string
	Unreadable []error
	// CallGraph counts the {cg} files selected: arcs, not samples, which
	// a flat report does not count.
	CallGraph int
}

// loader is the state of one Load: the profile being built and how
// offsets in images resolve into it.
type loader struct {
	b      *profile.Builder
	r      *resolve.Resolver
	procs  *images
	events map[string]int32
	// buildIDs are those of the images plain files were read for: a
	// call-graph file's header has its caller's only.
	buildIDs map[sampledb.Image][]byte
	arcs     map[[3]int32]int // caller, callee, event -> index in Arcs
}

// event is the profile's event of the files of key k.
func (l *loader) event(k sampledb.FileKey) int32 {
	evKey := k.Event + "." + k.CountString()
	ev, ok := l.events[evKey]
	if !ok {
		pe := profile.Event{Name: k.Event}
		if k.Freq {
			pe.Freq = k.Count
		} else {
			pe.Period = k.Count
		}
		ev = l.b.Event(pe)
		l.events[evKey] = ev
	}
	return ev
}

// period is what one sample of the files of key k stands for.
func period(k sampledb.FileKey) uint64 {
	if k.Freq {
		// The kernel adjusts the period to the frequency: a sample
		// stands for about a second over it (cpu-clock counts
		// nanoseconds).
		return uint64(1e9) / max(k.Count, 1)
	}
	return k.Count
}

// place sets s to offset off of image im (in JIT memory, of the code of
// sequence number seq), the idx-th mapping of the loader's images, in
// process pid: file and kernel offsets are addresses of their mapping,
// anonymous ones are from the range's start.
func place(s *resolve.Sample, im sampledb.Image, idx uint64, pid uint32, off, seq uint64) {
	s.PID, s.Time, s.Mode, s.IP, s.Seq, s.BySeq = pid, idx, resolve.ModeUser, off, seq, false
	switch im.Kind {
	case sampledb.ImageKernel:
		s.Mode = resolve.ModeKernel
	case sampledb.ImageAnon, sampledb.ImageJIT:
		s.PID, s.IP = im.TGID, im.Start+off
		s.BySeq = im.Kind == sampledb.ImageJIT
	}
}

// samples adds the counts of the plain sample file rd of key k.
func (l *loader) samples(rd *sampledb.Reader, k sampledb.FileKey) {
	idx := l.procs.add(k.App, k.Dep, rd.Header.BuildID)
	if len(rd.Header.BuildID) > 0 {
		l.buildIDs[k.Dep] = rd.Header.BuildID
	}
	per := period(k)
	s := resolve.Sample{TID: id(k.TID), CPU: cpu(k.CPU), Event: l.event(k)}
	for e := range rd.Entries() {
		place(&s, k.Dep, idx, id(k.TGID), e.Key1, e.Key2)
		s.Count, s.Period = e.Count, e.Count*per
		l.r.Add(&s)
	}
}

// callGraph adds the arcs of the call-graph file rd of key k, each end
// named as a plain sample at its place would be.
func (l *loader) callGraph(rd *sampledb.Reader, k sampledb.FileKey) {
	from := l.procs.add(k.App, k.Dep, rd.Header.BuildID)
	to := l.procs.add(k.App, k.CG, l.buildIDs[k.CG])
	per := period(k)
	ev := l.event(k)
	p := l.b.Meta()
	var s resolve.Sample
	for e := range rd.Entries() {
		off, seq := sampledb.SplitArcEnd(k.Dep, e.Key1)
		place(&s, k.Dep, from, id(k.TGID), off, seq)
		caller := l.r.Frame(&s)
		off, seq = sampledb.SplitArcEnd(k.CG, e.Key2)
		place(&s, k.CG, to, id(k.TGID), off, seq)
		callee := l.r.Frame(&s)
		ak := [3]int32{caller, callee, ev}
		i, ok := l.arcs[ak]
		if !ok {
			i = len(p.Arcs)
			l.arcs[ak] = i
			p.Arcs = append(p.Arcs, profile.Arc{Caller: caller, Callee: callee, Event: ev})
		}
		p.Arcs[i].Count += e.Count
		p.Arcs[i].Period += e.Count * per
	}
}

// Load reads the sample files opts.Spec selects into a profile; the
// Binder (nil without opts.Anon), closed, says how each process's JIT
// code was named.
func Load(opts Options) (*profile.Profile, *anonbind.Binder, Info, error) {
	var info Info
	sel, err := sampledb.Select(opts.Dir, opts.Spec)
	if err != nil {
		return nil, nil, info, err
	}
	info.Skipped = sel.Skipped
	b := profile.NewBuilder()
	procs := &images{}
	src := &sessions{dir: opts.Dir, procs: map[uint32]anon.Process{}}
	var binder *anonbind.Binder
	sym := opts.Symbolizer
	if sym == nil {
		sym = symbolize.New(symbolize.Options{SymbolCache: true})
	}
	ropts := resolve.Options{Symbolizer: sym, Lines: opts.Lines, Addresses: opts.Addresses, LeafOnly: true}
	switch {
	case opts.Bind != nil:
		binder = opts.Bind(src)
	case opts.Anon != nil:
		binder = anonbind.New(src, anonbind.Options{Handlers: opts.Anon, Force: opts.Force})
	}
	if binder != nil {
		ropts.Anon = binder
	}
	l := &loader{b: b, r: resolve.New(b, procs, ropts), procs: procs, events: map[string]int32{},
		buildIDs: map[sampledb.Image][]byte{}, arcs: map[[3]int32]int{}}
	if opts.Arcs {
		b.Meta().Arcs = []profile.Arc{}
	}
	seen := map[string]bool{}
	meta := b.Meta()
	var graphs []sampledb.Selected
	for _, f := range sel.Files {
		if !seen[f.Session] {
			seen[f.Session] = true
			info.Sessions = append(info.Sessions, f.Session)
			m, err := sampledb.ReadMeta(opts.Dir, f.Session)
			if err == nil {
				for _, ev := range m.Events {
					meta.Lost += ev.Lost
				}
				meta.Unwound.Chains += m.Unwound
				meta.Unwound.JITStops += m.JITStops
				meta.Hostname = m.Host
			}
			src.add(f.Session)
		}
		if f.Key.Kind() == sampledb.KeyCallGraph {
			info.CallGraph++
			graphs = append(graphs, f)
			continue
		}
		l.read(opts.Dir, f, &info, l.samples)
	}
	if opts.Arcs {
		// After the plain files, whose headers say the build-ids of
		// the arcs' callees.
		for _, f := range graphs {
			l.read(opts.Dir, f, &info, l.callGraph)
		}
	}
	if len(b.Meta().Events) == 0 {
		b.Event(profile.Event{Name: "cpu-clock"})
	}
	if binder != nil {
		binder.Close()
	}
	return b.Profile(), binder, info, nil
}

// read opens the sample file f and adds its counts with add.
func (l *loader) read(dir string, f sampledb.Selected, info *Info, add func(*sampledb.Reader, sampledb.FileKey)) {
	rd, err := sampledb.Open(dir, f)
	if err != nil {
		info.Unreadable = append(info.Unreadable, err)
		return
	}
	defer rd.Close()
	if f.Key.Kind() != sampledb.KeyCallGraph {
		info.Files++
	}
	add(rd, f.Key)
	if err := rd.Err(); err != nil {
		info.Unreadable = append(info.Unreadable, err)
	}
}

func id(v uint32) uint32 {
	if v == sampledb.All {
		return 0
	}
	return v
}

func cpu(v uint32) int32 {
	if v == sampledb.All {
		return -1
	}
	return int32(v)
}

// images is the resolver's Processes for sample files: each file's image
// is one mapping, found by the index the sample carries as its time
// (sample files keep no times), the file's offsets its addresses.
type images struct {
	maps  []*process.Mapping
	comms []string
}

// add adds the mapping of image dep, in application app, and returns
// its index.
func (im *images) add(app, dep sampledb.Image, buildID []byte) uint64 {
	m := &process.Mapping{ID: int32(len(im.maps)), Exec: true}
	switch dep.Kind {
	case sampledb.ImageFile, sampledb.ImageVDSO:
		m.Path, m.End = dep.Name, math.MaxUint64
		if len(buildID) > 0 {
			m.BuildID = hex.EncodeToString(buildID)
		}
	case sampledb.ImageKernel:
		m.Kernel, m.Path, m.End = true, dep.Name, math.MaxUint64
	default:
		m.Anon, m.PID, m.Start, m.End = true, dep.TGID, dep.Start, dep.End
		m.Path = "//anon"
		if dep.TGID == sampledb.All {
			// The anonymous memory of all the application's
			// processes, counted as one place.
			m.PID, m.End = resolve.AllProcesses, 1
		}
	}
	im.maps = append(im.maps, m)
	comm := filepath.Base(app.Name)
	if app.Kind != sampledb.ImageFile {
		comm = app.String()
		if app.Kind == sampledb.ImageKernel {
			comm = "[kernel]"
		}
	}
	im.comms = append(im.comms, comm)
	return uint64(len(im.maps) - 1)
}

func (im *images) Lookup(pid uint32, addr, time uint64, kernel bool) *process.Mapping {
	if time >= uint64(len(im.maps)) {
		return nil
	}
	m := im.maps[time]
	if addr < m.Start || addr >= m.End {
		return nil
	}
	return m
}

func (im *images) Thread(pid, tid uint32, time uint64) process.Span {
	comm := ""
	if time < uint64(len(im.comms)) {
		comm = im.comms[time]
	}
	return process.Span{Comm: comm, Epoch: time, From: time, To: time + 1}
}

func (im *images) Version() uint64 { return 0 }

// sessions is the anonbind.Processes of the sessions read: who each
// process with JIT data was, and the copies of its data.
type sessions struct {
	dir   string
	procs map[uint32]anon.Process
}

// maxManifest bounds a manifest the reader reads.
const maxManifest = 1 << 20

// add reads the JIT data manifests of a session; a pid two sessions
// have keeps the first's.
func (s *sessions) add(session string) {
	root := filepath.Join(s.dir, "samples", session, "jit")
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil || !e.IsDir() {
			continue
		}
		if _, ok := s.procs[uint32(pid)]; ok {
			continue
		}
		if p, err := readProcess(filepath.Join(root, e.Name()), int(pid)); err == nil {
			s.procs[uint32(pid)] = p
		}
	}
}

func readProcess(dir string, pid int) (anon.Process, error) {
	b, err := readCapped(filepath.Join(dir, sampledb.JITManifestName), maxManifest)
	if err != nil {
		return anon.Process{}, err
	}
	var m sampledb.JITManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return anon.Process{}, err
	}
	if m.PID != pid {
		return anon.Process{}, fmt.Errorf("%s: manifest of pid %d", dir, m.PID)
	}
	p := anon.Process{PID: pid, NSPID: m.NSPID, UID: m.UID, GID: trust.UnknownOwner, StartTime: m.StartTime, Comm: m.Comm,
		Embedded: map[string][]byte{}, Kinds: map[string]string{}}
	for _, f := range m.Files {
		if f.Name == "" || filepath.Base(f.Name) != f.Name || f.Name[0] == '.' {
			continue
		}
		data, err := readCapped(filepath.Join(dir, f.Name), trust.MaxSize)
		if err != nil {
			continue
		}
		p.Embedded[f.Path], p.Kinds[f.Path] = data, f.Kind
	}
	return p, nil
}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, errors.New(path + ": not a regular file within the size limit")
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// Process implements anonbind.Processes.
func (s *sessions) Process(pid uint32) anon.Process {
	if p, ok := s.procs[pid]; ok {
		return p
	}
	return anon.NewProcess(pid, "", nil, nil)
}

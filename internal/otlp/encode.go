package otlp

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"path/filepath"
	"slices"
	"time"

	"github.com/jitprof/jitprof/internal/profile"
)

// Attributes jitprof sends beyond the semantic conventions' (on a JIT
// frame's location).
const (
	// AttrHandler is the anon handler that named JIT code ("jitlog",
	// "jitdump", "perfmap", "pypy", or an external handler's name).
	AttrHandler = "jitprof.jit.handler"
	// AttrGeneration is JIT code's generation (jitlog's sequence number,
	// jitdump's code index), the N of its name's "[gen N]".
	AttrGeneration = "jitprof.jit.generation"
)

// Attribute is a resource attribute with a string value.
type Attribute struct{ Key, Value string }

// Options say what Encode writes besides the profile.
type Options struct {
	// ServiceName is every resource's service.name; "" gives each
	// process Attributes' service.name, else its executable's name.
	ServiceName string
	// Attributes are more resource attributes for every process
	// (OTEL_RESOURCE_ATTRIBUTES); one with the key of an attribute
	// jitprof sets replaces it.
	Attributes []Attribute
	// Machine is the machine jitprof runs on. host.name is the
	// profile's host (Profile.Hostname), else Machine's; host.id is
	// Machine's when the profile was recorded there (or does not say
	// where).
	Machine Machine
	// Version is jitprof's, the instrumentation scope's version.
	Version string
	// End is when a profile whose clock the source did not tie to wall
	// time (Profile.WallNS) ended; zero for now.
	End time.Time
}

// Machine names a machine.
type Machine struct {
	Name string // its host name
	ID   string // its host.id: /etc/machine-id
}

// Encode writes p as an ExportProfilesServiceRequest.
func Encode(p *profile.Profile, opts Options) ([]byte, error) {
	return Append(nil, p, opts)
}

// Append appends p as an ExportProfilesServiceRequest to out: a caller
// that encodes again and again (the daemon's push, every 10 s) reuses
// one buffer rather than growing a new one to the request's size each
// time.
func Append(out []byte, p *profile.Profile, opts Options) ([]byte, error) {
	e := newEncoder(p, opts)
	for _, r := range e.resources() {
		out = appendMessage(out, 1, func(b []byte) []byte { return e.resource(b, r) })
	}
	out = appendMessage(out, 2, e.dictionary)
	return out, nil
}

type encoder struct {
	p    *profile.Profile
	opts Options
	// wallOff converts a time of the recording's clock to Unix
	// nanoseconds: added to it, modulo 2^64 (wallOf).
	wallOff uint64
	procs   map[uint32]profile.Process

	strs    map[string]int32
	strTab  []string
	attrs   map[attr]int32
	attrTab []attr
	// The dictionary's mappings, functions, locations and stacks are the
	// profile's images, functions, frames and stack nodes that samples
	// use, numbered from 1 (0 is the zero entry each table starts
	// with) in the order met; -1 until then.
	images, funcs, frames, nodes         []int32
	imageTab, funcTab, frameTab, nodeTab []int32
	// jitType is the frame type of each JIT image, from the first
	// process met with samples in it; untyped counts the JIT images
	// without one yet: with none, no stack need be looked at for them.
	jitType []string
	untyped int
	// threadAttrs are the attributes of each thread met, by thread
	// (empty: not yet met).
	threadAttrs []packedAttrs
}

// attr is an attribute of the dictionary: a key and a string or an int.
type attr struct {
	key   int32
	s     string
	i     int64
	isInt bool
}

func newEncoder(p *profile.Profile, opts Options) *encoder {
	e := &encoder{p: p, opts: opts, procs: map[uint32]profile.Process{},
		strs: map[string]int32{}, attrs: map[attr]int32{}, jitType: make([]string, len(p.Images)),
		threadAttrs: make([]packedAttrs, len(p.Threads))}
	e.str("")
	e.attrTab = append(e.attrTab, attr{})
	for i := range p.Images {
		if p.Images[i].Kind == profile.ImageAnon {
			e.untyped++
		}
	}
	for _, pr := range p.Processes {
		e.procs[pr.PID] = pr
	}
	fresh := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = -1
		}
		return s
	}
	e.images, e.funcs, e.frames, e.nodes = fresh(len(p.Images)), fresh(len(p.Funcs)), fresh(len(p.Frames)), fresh(len(p.Nodes))
	if p.WallNS != 0 {
		e.wallOff, _ = p.WallTime(0)
	} else {
		end := opts.End
		if end.IsZero() {
			end = time.Now()
		}
		endNS := uint64(end.UnixNano())
		e.wallOff = endNS - p.EndNS
	}
	return e
}

// wallOf converts a time of the recording's clock to Unix nanoseconds.
func (e *encoder) wallOf(t uint64) uint64 { return t + e.wallOff }

func (e *encoder) str(s string) int32 {
	if id, ok := e.strs[s]; ok {
		return id
	}
	id := int32(len(e.strTab))
	e.strTab = append(e.strTab, s)
	e.strs[s] = id
	return id
}

func (e *encoder) strAttr(key, v string) int32 { return e.attr(attr{key: e.str(key), s: v}) }
func (e *encoder) intAttr(key string, v int64) int32 {
	return e.attr(attr{key: e.str(key), i: v, isInt: true})
}

func (e *encoder) attr(a attr) int32 {
	if id, ok := e.attrs[a]; ok {
		return id
	}
	id := int32(len(e.attrTab))
	e.attrTab = append(e.attrTab, a)
	e.attrs[a] = id
	return id
}

// resourceData is one process's samples, by event.
type resourceData struct {
	pid      uint32
	comm     string
	profiles []*profileData
}

// profileData is the samples of one process and event.
type profileData struct {
	event   int32
	samples []sampleData
	// index finds the sample of a stack node and thread, when the
	// profile has entries of one stack and thread on several CPUs.
	index         map[[2]int32]int
	count, period uint64
	entries       int // the profile's entries: its samples, or more
	// timed says every entry kept the time of each of its samples.
	timed bool
}

// sampleData is an OTLP sample: the entries of one stack and thread,
// whatever their CPU.
type sampleData struct {
	node, thread int32
	count        uint64
	times        []uint64
}

// resources groups the profile's entries by process and event, in the
// order of pids and of events.
func (e *encoder) resources() []*resourceData {
	p := e.p
	byPID := map[uint32]*resourceData{}
	// byThread is the resource of each thread met: a lookup by pid for
	// every entry was a tenth of encoding the daemon's push.
	byThread := make([]*resourceData, len(p.Threads))
	// Entries of one CPU (or none, as the daemon's push) are of one
	// stack and thread each, as the Builder keys them: each is a
	// sample, without looking its stack and thread up.
	oneCPU := true
	for i := range p.Entries {
		if p.Entries[i].CPU != p.Entries[0].CPU {
			oneCPU = false
			break
		}
	}
	// First the profile of each entry, and how many each has; then
	// their samples, in one array, each profile's part of it as long
	// as its entries: a profile's samples appended one by one, grown
	// again and again, were a third of grouping the push's entries.
	of := make([]*profileData, len(p.Entries))
	var out []*resourceData
	n := 0
	for i := range p.Entries {
		en := &p.Entries[i]
		if en.Count == 0 {
			continue
		}
		th := &p.Threads[en.Thread]
		r := byThread[en.Thread]
		if r == nil {
			if r = byPID[th.PID]; r == nil {
				r = &resourceData{pid: th.PID}
				byPID[th.PID] = r
				out = append(out, r)
			}
			byThread[en.Thread] = r
		}
		if th.TID == th.PID || r.comm == "" {
			r.comm = p.Strings[th.Comm]
		}
		var pd *profileData
		if j := slices.IndexFunc(r.profiles, func(x *profileData) bool { return x.event == en.Event }); j >= 0 {
			pd = r.profiles[j]
		} else {
			pd = &profileData{event: en.Event, timed: true}
			if !oneCPU {
				pd.index = map[[2]int32]int{}
			}
			r.profiles = append(r.profiles, pd)
		}
		pd.count += en.Count
		pd.period += en.Period
		pd.entries++
		n++
		of[i] = pd
		e.typeJIT(en.Stack, th.PID, p.Strings[th.Comm])
	}
	all := make([]sampleData, n)
	for _, r := range out {
		for _, pd := range r.profiles {
			pd.samples, all = all[:0:pd.entries], all[pd.entries:]
		}
	}
	for i := range p.Entries {
		pd := of[i]
		if pd == nil {
			continue
		}
		en := &p.Entries[i]
		j, ok := len(pd.samples), false
		if !oneCPU {
			k := [2]int32{en.Stack, en.Thread}
			if j, ok = pd.index[k]; !ok {
				j = len(pd.samples)
				pd.index[k] = j
			}
		}
		if !ok {
			pd.samples = append(pd.samples, sampleData{node: en.Stack, thread: en.Thread})
		}
		s := &pd.samples[j]
		s.count += en.Count
		if pd.timed {
			ts := en.Times
			if uint64(len(ts)) != en.Count {
				pd.timed = false
			}
			if s.times == nil && slices.IsSorted(ts) {
				// The entry's own, as sample sorts them: one
				// entry a sample when the profile has no CPUs
				// (the daemon's push), whose times need no copy.
				// The full slice expression makes an append copy.
				s.times = ts[:len(ts):len(ts)]
			} else {
				s.times = append(s.times, ts...)
			}
		}
	}
	slices.SortFunc(out, func(a, b *resourceData) int { return cmp.Compare(a.pid, b.pid) })
	for _, r := range out {
		slices.SortFunc(r.profiles, func(a, b *profileData) int { return cmp.Compare(a.event, b.event) })
	}
	return out
}

// typeJIT gives the JIT images of a stack of process pid without a
// frame type the type of pid's runtime.
func (e *encoder) typeJIT(node int32, pid uint32, comm string) {
	p := e.p
	for ; node >= 0 && e.untyped > 0; node = p.Nodes[node].Parent {
		f := p.FuncOf(p.Nodes[node].Frame)
		if im := &p.Images[f.Image]; im.Kind == profile.ImageAnon && e.jitType[f.Image] == "" {
			e.jitType[f.Image] = jitFrameType(im.Handler, e.procs[pid].Exe, comm)
			e.untyped--
		}
	}
}

// resource appends a ResourceProfiles message's body.
func (e *encoder) resource(b []byte, r *resourceData) []byte {
	b = appendMessage(b, 1, func(b []byte) []byte { // Resource
		for _, kv := range e.resourceAttrs(r) {
			b = appendMessage(b, 1, func(b []byte) []byte { // KeyValue
				b = appendString(b, 1, kv.key)
				return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.attr) })
			})
		}
		return b
	})
	return appendMessage(b, 2, func(b []byte) []byte { // ScopeProfiles
		b = appendMessage(b, 1, func(b []byte) []byte { // InstrumentationScope
			b = appendString(b, 1, "jitprof")
			if e.opts.Version != "" {
				b = appendString(b, 2, e.opts.Version)
			}
			return b
		})
		for _, pd := range r.profiles {
			b = appendMessage(b, 2, func(b []byte) []byte { return e.profile(b, r, pd) })
		}
		return b
	})
}

type keyValue struct {
	key string
	attr
}

// resourceAttrs are the attributes of a process's resource.
func (e *encoder) resourceAttrs(r *resourceData) []keyValue {
	pr := e.procs[r.pid]
	exeName := r.comm
	if pr.Exe != "" {
		exeName = filepath.Base(pr.Exe)
	}
	var kvs []keyValue
	set := func(k string, a attr) {
		if i := slices.IndexFunc(kvs, func(kv keyValue) bool { return kv.key == k }); i >= 0 {
			kvs[i].attr = a
		} else {
			kvs = append(kvs, keyValue{k, a})
		}
	}
	set("service.name", attr{s: exeName})
	m := e.opts.Machine
	if host := cmp.Or(e.p.Hostname, m.Name); host != "" {
		set("host.name", attr{s: host})
	}
	if m.ID != "" && (e.p.Hostname == "" || e.p.Hostname == m.Name) {
		set("host.id", attr{s: m.ID})
	}
	set("process.pid", attr{i: int64(r.pid), isInt: true})
	if exeName != "" {
		set("process.executable.name", attr{s: exeName})
	}
	if pr.Exe != "" {
		set("process.executable.path", attr{s: pr.Exe})
	}
	if pr.BuildID != "" {
		set("process.executable.build_id.gnu", attr{s: pr.BuildID})
	}
	for _, a := range e.opts.Attributes {
		set(a.Key, attr{s: a.Value})
	}
	if e.opts.ServiceName != "" {
		set("service.name", attr{s: e.opts.ServiceName})
	}
	return kvs
}

// appendAnyValue appends an AnyValue's body.
func appendAnyValue(b []byte, a attr) []byte {
	if a.isInt {
		// int_value is a oneof: written even when 0.
		return binary.AppendUvarint(appendTag(b, 3, wireVarint), uint64(a.i))
	}
	return appendString(b, 1, a.s)
}

// castagnoli is CRC-32C's table, which amd64's and arm64's CRC
// instructions compute.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sample, value and period types.
const (
	typeSamples = "samples"
	unitCount   = "count"
	typeCPU     = "cpu"
	unitNanos   = "nanoseconds"
)

// profile appends a Profile message's body: the samples of one process
// and event.
func (e *encoder) profile(b []byte, r *resourceData, pd *profileData) []byte {
	p := e.p
	ev := p.Events[pd.event]
	b = appendMessage(b, 1, func(b []byte) []byte { return e.valueType(b, typeSamples, unitCount) })
	at := len(b)
	for i := range pd.samples {
		b = appendMessage(b, 2, func(b []byte) []byte { return e.sample(b, &pd.samples[i], pd.timed) })
	}
	// The ID is a hash of the content: of who and when, and of the
	// samples' bytes through their CRC-32C (the processor's CRC
	// instruction; FNV-128 over the bytes themselves cost some 25
	// instructions a byte, 5M a push of BenchmarkPushChurn) and their
	// length.
	id := fnv.New128a()
	fmt.Fprintf(id, "%s\x00%d\x00%s\x00%d\x00%d\x00%d\x00%d\x00", cmp.Or(p.Hostname, e.opts.Machine.Name), r.pid, ev.Name, p.StartNS, p.WallNS,
		crc32.Checksum(b[at:], castagnoli), len(b)-at)
	start := e.wallOf(p.StartNS)
	b = appendFixed64(b, 3, start)
	// The samples' times fall in [time, time+duration): the last one
	// is at EndNS.
	b = appendVarint(b, 4, p.EndNS-p.StartNS+1)
	// A count of samples, each of one period of the event: for the
	// clock events (cpu-clock, task-clock), CPU nanoseconds. In
	// frequency mode the kernel sets each sample's period: the
	// profile's is their mean, so that samples times period is the
	// CPU time they stand for.
	b = appendMessage(b, 5, func(b []byte) []byte {
		if isClock(ev.Name) {
			return e.valueType(b, typeCPU, unitNanos)
		}
		return e.valueType(b, ev.Name, unitCount)
	})
	period := ev.Period
	if period == 0 && pd.count > 0 {
		period = (pd.period + pd.count/2) / pd.count
	}
	b = appendVarint(b, 6, period)
	return appendBytes(b, 7, id.Sum(nil))
}

// isClock reports whether an event counts time: perf's software clock
// events, whose period is in nanoseconds.
func isClock(event string) bool {
	for _, c := range []string{"cpu-clock", "task-clock"} {
		if len(event) >= len(c) && event[:len(c)] == c {
			return true
		}
	}
	return false
}

func (e *encoder) valueType(b []byte, typ, unit string) []byte {
	b = appendVarint(b, 1, uint64(e.str(typ)))
	return appendVarint(b, 2, uint64(e.str(unit)))
}

// sample appends a Sample message's body: the count of samples, or
// their times alone, each a sample of value 1 as the profiles proto
// says of a sample with timestamps and no values (what the
// OpenTelemetry eBPF profiler sends, and Pyroscope reads: one value for
// each time it rejects as a length other than the sample types').
func (e *encoder) sample(b []byte, s *sampleData, timed bool) []byte {
	p := e.p
	th := &p.Threads[s.thread]
	b = appendVarint(b, 1, uint64(e.stack(s.node)))
	at := &e.threadAttrs[s.thread]
	if at.n == 0 {
		// Once a thread, as the field's bytes: looking its attributes
		// up for every sample was a fifth of encoding the daemon's
		// push, and packing them again a tenth of what was left.
		ids := []int32{e.intAttr("thread.id", int64(th.TID)), e.strAttr("thread.name", p.Strings[th.Comm])}
		at.n = uint8(len(appendPacked(at.b[:0], 2, ids)))
	}
	b = append(b, at.b[:at.n]...)
	if !timed {
		return appendPacked(b, 4, []int64{int64(s.count)})
	}
	slices.Sort(s.times)
	b = binary.AppendUvarint(appendTag(b, 5, wireBytes), uint64(8*len(s.times)))
	at0 := len(b)
	b = slices.Grow(b, 8*len(s.times))[:at0+8*len(s.times)]
	for i, t := range s.times {
		binary.LittleEndian.PutUint64(b[at0+8*i:], e.wallOf(t))
	}
	return b
}

// packedAttrs is a sample's attribute_indices field as encoded: a tag,
// a length and two varints of at most 5 bytes.
type packedAttrs struct {
	n uint8
	b [12]byte
}

// stack returns the dictionary's stack of the stack ending at node.
func (e *encoder) stack(node int32) int32 {
	if node < 0 {
		return 0 // the zero Stack: no frames
	}
	if e.nodes[node] < 0 {
		e.nodeTab = append(e.nodeTab, node)
		e.nodes[node] = int32(len(e.nodeTab))
	}
	return e.nodes[node]
}

// location returns the dictionary's location of a frame.
func (e *encoder) location(frame int32) int32 {
	if e.frames[frame] < 0 {
		e.frameTab = append(e.frameTab, frame)
		e.frames[frame] = int32(len(e.frameTab))
	}
	return e.frames[frame]
}

func (e *encoder) function(fn int32) int32 {
	if e.funcs[fn] < 0 {
		e.funcTab = append(e.funcTab, fn)
		e.funcs[fn] = int32(len(e.funcTab))
	}
	return e.funcs[fn]
}

func (e *encoder) mapping(im int32) int32 {
	if e.images[im] < 0 {
		e.imageTab = append(e.imageTab, im)
		e.images[im] = int32(len(e.imageTab))
	}
	return e.images[im]
}

// dictionary appends the ProfilesDictionary's body. The tables are
// filled in dependency order (stacks name locations, which name
// functions and mappings), and each starts with its zero entry.
func (e *encoder) dictionary(b []byte) []byte {
	p := e.p
	var stacks []byte
	stacks = appendBytes(stacks, 7, nil)
	var locs []int32
	for _, node := range e.nodeTab {
		locs = locs[:0]
		for n := node; n >= 0; n = p.Nodes[n].Parent {
			locs = append(locs, e.location(p.Nodes[n].Frame))
		}
		stacks = appendMessage(stacks, 7, func(b []byte) []byte { return appendPacked(b, 1, locs) })
	}
	var locations []byte
	locations = appendBytes(locations, 2, nil)
	for _, fr := range e.frameTab {
		locations = appendMessage(locations, 2, func(b []byte) []byte { return e.locationBody(b, fr) })
	}
	var functions []byte
	functions = appendBytes(functions, 3, nil)
	for _, fn := range e.funcTab {
		f := &p.Funcs[fn]
		functions = appendMessage(functions, 3, func(b []byte) []byte {
			b = appendVarint(b, 1, uint64(e.str(f.Name)))
			return appendVarint(b, 3, uint64(e.str(f.File)))
		})
	}
	var mappings []byte
	mappings = appendBytes(mappings, 1, nil)
	for _, im := range e.imageTab {
		mappings = appendMessage(mappings, 1, func(b []byte) []byte { return e.mappingBody(b, im) })
	}
	b = append(b, mappings...)
	b = append(b, locations...)
	b = append(b, functions...)
	// link_table[0], the only link: 16 and 8 zero bytes, which codecs
	// that check the IDs' lengths accept.
	b = appendMessage(b, 4, func(b []byte) []byte {
		b = appendBytes(b, 1, make([]byte, 16))
		return appendBytes(b, 2, make([]byte, 8))
	})
	for _, s := range e.strTab {
		b = appendString(b, 5, s)
	}
	for _, a := range e.attrTab {
		b = appendMessage(b, 6, func(b []byte) []byte {
			if a == (attr{}) {
				return b
			}
			b = appendVarint(b, 1, uint64(a.key))
			return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, a) })
		})
	}
	return append(b, stacks...)
}

// locationBody appends a Location's body: the frame's mapping, its
// function and line, and what ran it.
func (e *encoder) locationBody(b []byte, frame int32) []byte {
	p := e.p
	fr := &p.Frames[frame]
	f := &p.Funcs[fr.Func]
	im := &p.Images[f.Image]
	b = appendVarint(b, 1, uint64(e.mapping(f.Image)))
	b = appendMessage(b, 3, func(b []byte) []byte { // Line
		b = appendVarint(b, 1, uint64(e.function(fr.Func)))
		return appendVarint(b, 2, uint64(fr.Line))
	})
	typ := frameType(im.Kind)
	if im.Kind == profile.ImageAnon {
		typ = e.jitType[f.Image]
	}
	var attrs []int32
	if typ != "" {
		attrs = append(attrs, e.strAttr("profile.frame.type", typ))
	}
	if im.Handler != "" {
		attrs = append(attrs, e.strAttr(AttrHandler, im.Handler))
	}
	if f.Gen != 0 {
		attrs = append(attrs, e.intAttr(AttrGeneration, int64(f.Gen)))
	}
	return appendPacked(b, 4, attrs)
}

// mappingBody appends a Mapping's body: the image's first mapping, its
// name and build-id.
func (e *encoder) mappingBody(b []byte, image int32) []byte {
	im := &e.p.Images[image]
	b = appendVarint(b, 1, im.Start)
	b = appendVarint(b, 2, im.Limit)
	b = appendVarint(b, 3, im.Offset)
	b = appendVarint(b, 4, uint64(e.str(im.Name)))
	if im.BuildID != "" {
		b = appendPacked(b, 5, []int32{e.strAttr("process.executable.build_id.gnu", im.BuildID)})
	}
	return b
}

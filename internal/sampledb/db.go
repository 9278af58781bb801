package sampledb

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// EventID is an event's index in Options.Events.
type EventID uint16

// Sample is one sample (or call-graph arc) as the daemon decoded and
// resolved it: seed 003's transient. The DB keeps of it what --separate
// keeps.
type Sample struct {
	Event EventID
	// App is the process's executable (zero for a kernel thread); Image
	// the image the sample fell in (a call-graph arc's caller); CGTo a
	// call-graph arc's callee image, zero for a plain sample.
	App, Image, CGTo ImageID
	TGID, TID, CPU   uint32
	// Key1 and Key2 are what the file counts: the offset in Image and 0;
	// in anonymous or JIT memory the offset from the range's start and
	// the sequence number of the code live there (0 if unknown); for an
	// arc, the caller's offset in Image and the callee's in CGTo.
	Key1, Key2 uint64
}

// Options configure a DB.
type Options struct {
	Separate Separate
	// Events are the events sampled; a Sample names one by its index.
	Events []Event
	// MaxOpen bounds the sample files kept open and mapped (and their
	// counts in memory) between flushes; the least recently used are
	// closed at a flush. Default DefaultMaxOpen.
	MaxOpen int
	// Host names the machine in the session's metadata (default: the
	// host name).
	Host string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxFiles bounds the sample files of the current session, MaxBytes
	// their total size (0: no bound), so that no process, however many
	// files or keys its samples make, fills the disk. At a bound, a
	// sample that needs a new file, or a new key in a file that would
	// have to grow, is dropped and counted (Stats.Refused); the files
	// and keys already there go on counting.
	MaxFiles int
	MaxBytes int64
}

// DefaultMaxOpen is the default bound of open sample files: well under
// the usual limit of 1024 descriptors.
const DefaultMaxOpen = 512

// maxVariants bounds the binaries one path can have in a session.
const maxVariants = 32

// Errors of Add, preallocated: the ingest path does not allocate.
var (
	ErrUnknownImage = errors.New("sample names an unknown or forgotten image")
	ErrUnknownEvent = errors.New("sample names an unknown event")
	ErrSecondKey    = errors.New("sample has a second key in a file keyed by offset")
	// ErrImageChanged says every variant of a path is taken by another
	// binary: the samples are dropped.
	ErrImageChanged = errors.New("too many binaries at one path")
	// ErrSessionFull says a sample would take the session past
	// Options.MaxFiles or MaxBytes: it is dropped.
	ErrSessionFull = errors.New("session at its bound of sample files or bytes")
)

// Stats are a DB's counters.
type Stats struct {
	// Samples were added; Flushed reached files; Dropped never will (see
	// Meta.Dropped).
	Samples, Flushed, Dropped uint64
	// Files are the sample files with counts in memory, Open those open
	// and mapped, Dirty those with counts not yet flushed.
	Files, Open, Dirty int
	// Images are the images the DB knows.
	Images int
	// Flushes counts flushes; FlushErrors those that failed for some file.
	Flushes, FlushErrors uint64
	// DiskFiles and DiskBytes are the current session's sample files
	// and their size; Refused counts the samples (and arcs) dropped at
	// Options.MaxFiles or MaxBytes, which Dropped includes.
	DiskFiles int
	DiskBytes int64
	Refused   uint64
}

// DB is the sample database of one session directory, for the one process
// that writes it (it holds the directory's lock). Add counts in memory;
// Flush writes the counts to the sample files. A DB is not safe for
// concurrent use: the daemon's ingest loop owns it.
type DB struct {
	dir  string
	lock *dirLock // and the session directory's root
	opts Options
	now  func() time.Time
	meta Meta
	cur  *os.Root // samples/current

	images images
	files  fileTable
	last   *sfile
	dirty  []*sfile
	names  map[string]*sfile // open files by name
	tick   uint64
	stats  Stats
	space  space
	closed bool
}

// space is what the current session's sample files take, against the
// bounds of Options.
type space struct {
	files    int
	bytes    int64
	maxFiles int
	maxBytes int64
}

// reserve takes room for files more files and bytes more bytes, or says
// ErrSessionFull.
func (s *space) reserve(files int, bytes int64) error {
	if s == nil {
		return nil
	}
	if s.maxFiles > 0 && s.files+files > s.maxFiles || s.maxBytes > 0 && s.bytes+bytes > s.maxBytes {
		return ErrSessionFull
	}
	s.files += files
	s.bytes += bytes
	return nil
}

// fileKey is what a sample file is looked up by, as Add computes it:
// --separate has already put All and the image itself where it does
// not split.
type fileKey struct {
	app, dep, cg   ImageID
	event          EventID
	tgid, tid, cpu uint32
}

// sfile is a sample file the DB has counts for.
type sfile struct {
	key     fileKey
	deltas  deltas
	w       *wfile // nil until the first flush opens it
	name    string
	lastUse uint64 // the flush tick it last got a sample in
	dirty   bool
	// refused: the file could not be made within the session's bounds;
	// its samples are dropped.
	refused bool
}

// Create opens the session directory dir for writing (creating it), taking
// its lock (ErrLocked if a daemon holds it), and continues its current
// session, or starts one. A current session recorded with other events or
// another --separate is ErrMismatch.
func Create(dir string, opts Options) (*DB, error) {
	if len(opts.Events) == 0 || len(opts.Events) > 1<<16 {
		return nil, fmt.Errorf("sample database: %d events (1 to %d)", len(opts.Events), 1<<16)
	}
	for _, ev := range opts.Events {
		k := FileKey{App: Image{Kind: ImageKernel, Name: "k"}, Dep: Image{Kind: ImageKernel, Name: "k"},
			Event: ev.Name, Count: ev.Count, Freq: ev.Freq, UnitMask: ev.UnitMask}
		if _, err := Name(k); err != nil {
			return nil, fmt.Errorf("sample database: event %q: %w", ev.Name, err)
		}
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = DefaultMaxOpen
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	opts.Events = slices.Clone(opts.Events)
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	db := &DB{
		dir:    dir,
		lock:   lock,
		opts:   opts,
		now:    opts.Now,
		images: newImages(),
		names:  map[string]*sfile{},
	}
	if err := mkdirIn(lock.root, samplesDir); err != nil {
		lock.unlock()
		return nil, err
	}
	removeStaleResets(lock.root)
	if err := db.openCurrent(); err != nil {
		lock.unlock()
		return nil, err
	}
	return db, nil
}

// openCurrent continues the current session or starts one, and records
// this run in its metadata.
func (db *DB) openCurrent() error {
	cur := path.Join(samplesDir, Current)
	if err := mkdirIn(db.lock.root, cur); err != nil {
		return err
	}
	root, err := db.lock.root.OpenRoot(cur)
	if err != nil {
		return err
	}
	m, err := readMetaIn(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m = Meta{Version: metaVersion, Host: db.opts.Host, Separate: db.opts.Separate.String(), Events: slices.Clone(db.opts.Events)}
		for i := range m.Events {
			m.Events[i].Lost = 0
		}
	case err != nil:
		root.Close()
		return err
	default:
		if err := db.agrees(&m); err != nil {
			root.Close()
			return err
		}
	}
	m.Runs = append(m.Runs, Run{Start: db.now(), PID: os.Getpid()})
	if err := writeMeta(root, &m); err != nil {
		root.Close()
		return err
	}
	db.meta, db.cur = m, root
	db.space = space{maxFiles: db.opts.MaxFiles, maxBytes: db.opts.MaxBytes}
	db.space.files, db.space.bytes = sampleFiles(root)
	return nil
}

func (db *DB) agrees(m *Meta) error {
	if m.Separate != db.opts.Separate.String() {
		return fmt.Errorf("%w: --separate=%s, not %s", ErrMismatch, m.Separate, db.opts.Separate)
	}
	same := slices.EqualFunc(m.Events, db.opts.Events, func(a, b Event) bool {
		return a.Name == b.Name && a.Count == b.Count && a.Freq == b.Freq && a.UnitMask == b.UnitMask
	})
	if !same {
		return fmt.Errorf("%w: other events", ErrMismatch)
	}
	return nil
}

// FileImage returns the image of a mapped file, by its kernel identity if
// the DB has seen it (the dcookie cache), else by its path. A path seen
// before with another build-id (or, without build-ids, another mtime) is
// another image: its samples go to a file of another variant.
func (db *DB) FileImage(ident FileIdent, path string, info ImageInfo) (ImageID, error) {
	return db.images.intern(Image{Kind: ImageFile, Name: path}, ident, info)
}

// LookupFile returns the image of a file identity seen before.
func (db *DB) LookupFile(ident FileIdent) (ImageID, bool) {
	id, ok := db.images.byIdent[ident]
	return id, ok && db.images.get(id) != nil
}

// VDSOImage returns the image of the vDSO; info's build-id tells one
// kernel's from another's.
func (db *DB) VDSOImage(info ImageInfo) (ImageID, error) {
	return db.images.intern(Image{Kind: ImageVDSO, Name: VDSOName}, FileIdent{}, info)
}

// KernelImage returns the image of the kernel or a module, by name.
func (db *DB) KernelImage(name string, info ImageInfo) (ImageID, error) {
	return db.images.intern(Image{Kind: ImageKernel, Name: name}, FileIdent{}, info)
}

// AnonImage returns the image of an anonymous mapping [start, end) of
// process tgid that no JIT data names; name is the mapping's name
// ("anon" if it has none, as OProfile calls it).
func (db *DB) AnonImage(tgid uint32, start, end uint64, name string) (ImageID, error) {
	if name == "" {
		name = "anon"
	}
	return db.images.intern(Image{Kind: ImageAnon, Name: name, TGID: tgid, Start: start, End: end}, FileIdent{}, ImageInfo{})
}

// AppAnonImage returns the image of the anonymous memory named name of
// every process of an application that no JIT data names: nothing can
// name an offset in it, so its samples are counted as one place of the
// application's (key 0), not per process and range, which would make a
// file per short-lived process.
func (db *DB) AppAnonImage(name string) (ImageID, error) {
	if name == "" {
		name = "anon"
	}
	return db.images.intern(Image{Kind: ImageAnon, Name: name, TGID: All}, FileIdent{}, ImageInfo{})
}

// JITImage returns the image of JIT code in the anonymous mapping [start,
// end) of process tgid, whose sequence numbers come from the named JIT
// data handler (jitlog, jitdump, perfmap, ...).
func (db *DB) JITImage(handler string, tgid uint32, start, end uint64) (ImageID, error) {
	if handler == "" {
		return 0, fmt.Errorf("%w: empty JIT handler name", ErrName)
	}
	return db.images.intern(Image{Kind: ImageJIT, Name: handler, TGID: tgid, Start: start, End: end}, FileIdent{}, ImageInfo{})
}

// ImageOf says what an image ID stands for.
func (db *DB) ImageOf(id ImageID) (Image, ImageInfo, bool) {
	if e := db.images.get(id); e != nil {
		return e.im, e.info, true
	}
	return Image{}, ImageInfo{}, false
}

// ForgetProcess releases the anonymous and JIT images of an exited
// process; their IDs are refused from now on. Call it on the process's
// exit, so a daemon that runs for weeks does not keep every mapping it
// ever saw.
func (db *DB) ForgetProcess(tgid uint32) { db.images.forgetProcess(tgid) }

// Forget releases an image no mapping uses any more.
func (db *DB) Forget(id ImageID) { db.images.forget(id) }

// Add counts one sample in memory. It allocates nothing once the sample's
// file and key have been seen; errors are for samples that name what the
// DB does not know.
func (db *DB) Add(s *Sample) error {
	kind, ok := db.images.kind(s.Image)
	if !ok {
		return ErrUnknownImage
	}
	if int(s.Event) >= len(db.opts.Events) {
		return ErrUnknownEvent
	}
	sep := db.opts.Separate
	k := fileKey{app: s.Image, dep: s.Image, cg: s.CGTo, event: s.Event, tgid: All, tid: All, cpu: All}
	if s.App != 0 && sep.keepsApp(kind) {
		if _, ok := db.images.kind(s.App); !ok {
			return ErrUnknownImage
		}
		k.app = s.App
	}
	if s.CGTo != 0 {
		if _, ok := db.images.kind(s.CGTo); !ok {
			return ErrUnknownImage
		}
	} else if s.Key2 != 0 && kind != ImageAnon && kind != ImageJIT {
		return ErrSecondKey
	}
	if sep&SeparateThread != 0 {
		k.tgid, k.tid = s.TGID, s.TID
	}
	if sep&SeparateCPU != 0 {
		k.cpu = s.CPU
	}
	sf := db.last
	if sf == nil || sf.key != k {
		if sf = db.files.get(&k); sf == nil {
			sf = db.newFile(k)
		}
		db.last = sf
	}
	sf.lastUse = db.tick
	if sf.refused {
		db.stats.Refused++
		db.stats.Dropped++
		return ErrSessionFull
	}
	sf.deltas.add(s.Key1, s.Key2, 1)
	if !sf.dirty {
		sf.dirty = true
		db.dirty = append(db.dirty, sf)
	}
	db.stats.Samples++
	return nil
}

func (db *DB) newFile(k fileKey) *sfile {
	sf := &sfile{key: k}
	for _, id := range [...]ImageID{k.app, k.dep, k.cg} {
		db.images.ref(id)
	}
	db.files.put(sf)
	return sf
}

// AddLost counts samples of an event the kernel lost.
func (db *DB) AddLost(ev EventID, n uint64) {
	if int(ev) < len(db.meta.Events) {
		db.meta.Events[ev].Lost += n
	}
}

// AddUnwound counts call chains unwound from user stacks, and those of
// them that stopped in JIT code (Meta.Unwound, Meta.JITStops).
func (db *DB) AddUnwound(chains, jitStops uint64) {
	db.meta.Unwound += chains
	db.meta.JITStops += jitStops
}

// Flush writes every count added since the last flush to its sample file
// (creating files), then closes the least recently used files beyond
// MaxOpen and writes the session's metadata. A file that cannot be
// written (ErrNoSpace: a full disk) keeps its counts for the next flush;
// the error says how many files failed and why the first did. Counts are
// in the files once Flush returns, so a daemon killed later loses only
// what it added since.
func (db *DB) Flush() error {
	db.tick++
	db.stats.Flushes++
	var first error
	failed := 0
	dirty := db.dirty
	n := 0
	for _, sf := range dirty {
		if err := db.flushFile(sf); err != nil {
			if first == nil {
				first = err
			}
			failed++
			dirty[n] = sf
			n++
			continue
		}
		sf.dirty = false
	}
	clear(dirty[n:])
	db.dirty = dirty[:n]
	db.evict()
	db.trimKeys()
	db.meta.Updated = db.now()
	db.meta.Dropped = db.stats.Dropped
	var err error
	if failed > 0 {
		err = fmt.Errorf("flush: %d of %d sample files not written, the first: %w", failed, len(dirty), first)
	}
	if merr := writeMeta(db.cur, &db.meta); merr != nil {
		err = errors.Join(err, fmt.Errorf("flush: session metadata: %w", merr))
	}
	if err != nil {
		db.stats.FlushErrors++
	}
	return err
}

// flushFile adds a file's deltas to it. Counts reach the file one key at
// a time, each a whole store or insert: a flush stopped anywhere (an
// error, a kill) leaves a valid file and the deltas not yet written. When
// the file cannot grow (a full disk), the keys it holds are still counted
// and the new ones wait; at the session's bound of bytes they are
// dropped, and a file that would be one too many is refused.
func (db *DB) flushFile(sf *sfile) (err error) {
	if sf.w == nil {
		if err := db.open(sf); err != nil {
			switch {
			case errors.Is(err, ErrImageChanged):
				db.drop(sf)
			case errors.Is(err, ErrSessionFull):
				// Kept, refusing, until evicted: a sample for it
				// then costs no allocation.
				n := sf.deltas.pending()
				db.stats.Refused += n
				db.stats.Dropped += n
				sf.deltas = deltas{}
				sf.refused = true
				return nil
			}
			return err
		}
	}
	w, d := sf.w, &sf.deltas
	// kept is how many of d.dirty stay dirty (moved to its front), done
	// how many were looked at: a fault can stop the loop anywhere.
	kept, done := 0, 0
	defer func() {
		d.dirty = append(d.dirty[:kept], d.dirty[done:]...)
		if errors.Is(err, ErrFault) {
			// The mapping is suspect (the file was truncated under
			// it?): open and check it again next time.
			db.closeFile(sf)
		}
	}()
	defer faultGuard(&w.mem, &err)()
	var growErr error
	for _, i := range d.dirty {
		s := &d.slots[i]
		node := uint64(s.node)
		if node == 0 {
			node = w.find(s.k1, s.k2)
		}
		if node != 0 {
			w.add(node, s.delta)
		} else if growErr == nil {
			node, growErr = w.insert(s.k1, s.k2, s.delta)
		}
		switch {
		case node != 0:
			s.node = uint32(node)
			db.stats.Flushed += s.delta
		case errors.Is(growErr, ErrSessionFull):
			// A new key in a file the session's bound keeps from
			// growing: dropped, not kept waiting for room that will
			// not come.
			db.stats.Refused += s.delta
			db.stats.Dropped += s.delta
		default:
			d.dirty[kept] = i // waits for room
			kept++
			done++
			continue
		}
		s.delta = 0
		done++
	}
	if errors.Is(growErr, ErrSessionFull) {
		return nil // what could be counted was; the rest is Refused
	}
	return growErr
}

// open opens or creates an sfile's sample file: the first variant of its
// name that is free or holds the same binary.
func (db *DB) open(sf *sfile) error {
	k, info := db.fileKeyOf(sf.key)
	for v := range maxVariants {
		k.Variant = uint8(v)
		name, err := Name(k)
		if err != nil {
			return err
		}
		if db.names[name] != nil {
			continue
		}
		w, h, err := openFile(db.cur, name)
		if errors.Is(err, fs.ErrNotExist) {
			w, err = db.create(name, k, info)
		} else if err == nil {
			if err = h.agrees(k); err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			} else if !info.same(ImageInfo{BuildID: h.BuildID, Mtime: h.Mtime}) {
				w.close()
				continue
			}
		}
		if errors.Is(err, ErrFormat) {
			// A damaged file is kept aside for a look, not counted
			// into, nor read by reports (hidden names are skipped).
			if w != nil {
				w.close()
			}
			dir, base := path.Split(name)
			if rerr := db.cur.Rename(name, dir+".damaged-"+strconv.FormatInt(db.now().UnixNano(), 10)+"-"+base[:min(len(base), 200)]); rerr != nil {
				return err
			}
			w, err = db.create(name, k, info)
		}
		if err != nil {
			return err
		}
		w.space = &db.space
		sf.w, sf.name = w, name
		db.names[name] = sf
		db.stats.Open++
		return nil
	}
	name, _ := Name(k)
	return fmt.Errorf("%s: %w (%d variants)", name, ErrImageChanged, maxVariants)
}

// create creates a sample file within the session's bounds.
func (db *DB) create(name string, k FileKey, info ImageInfo) (*wfile, error) {
	size := fileSize(minCapacity)
	if err := db.space.reserve(1, size); err != nil {
		return nil, err
	}
	w, err := createFile(db.cur, name, ptr(headerFor(k, info, db.now())))
	if err != nil {
		db.space.files--
		db.space.bytes -= size
	}
	return w, err
}

func ptr[T any](v T) *T { return &v }

// fileKeyOf spells out a file's key and the identity of its image.
func (db *DB) fileKeyOf(k fileKey) (FileKey, ImageInfo) {
	ev := db.opts.Events[k.event]
	fk := FileKey{Event: ev.Name, Count: ev.Count, Freq: ev.Freq, UnitMask: ev.UnitMask, TGID: k.tgid, TID: k.tid, CPU: k.cpu}
	fk.App = db.images.get(k.app).im
	dep := db.images.get(k.dep)
	fk.Dep = dep.im
	if k.cg != 0 {
		fk.CG = db.images.get(k.cg).im
	}
	return fk, dep.info
}

// evict closes the least recently used flushed files while there are
// more than MaxOpen; and should files that cannot be written pile up
// (a full disk), lets go of the oldest beyond four times that, counting
// their samples as dropped.
func (db *DB) evict() {
	if db.files.len() <= db.opts.MaxOpen {
		return
	}
	all := db.files.all()
	slices.SortFunc(all, func(a, b *sfile) int { return cmp.Compare(a.lastUse, b.lastUse) })
	// Down to 7/8 of the bound, so that the next flushes need not sort.
	target := db.opts.MaxOpen - db.opts.MaxOpen/8
	for _, sf := range all {
		if db.files.len() <= target {
			return
		}
		if !sf.dirty {
			db.remove(sf)
		}
	}
	for _, sf := range all {
		if db.files.len() <= 4*db.opts.MaxOpen {
			return
		}
		if db.files.get(&sf.key) == sf {
			db.drop(sf)
		}
	}
}

// maxKeys bounds the keys the DB keeps in memory between flushes, with
// their nodes, over all files: about 11 MB. Past it, the tables of the
// biggest files with nothing pending are let go, to be built again by
// the samples that come (a key counted again then costs a chain walk in
// its file at the next flush). A process whose samples each land on a
// new key (a long run through anonymous code) would otherwise grow the
// daemon for as long as it runs.
const maxKeys = 1 << 18

func (db *DB) trimKeys() {
	total := 0
	all := db.files.all()
	for _, sf := range all {
		total += sf.deltas.n
	}
	if total <= maxKeys {
		return
	}
	slices.SortFunc(all, func(a, b *sfile) int { return cmp.Compare(b.deltas.n, a.deltas.n) })
	for _, sf := range all {
		if total <= maxKeys/2 {
			return
		}
		if !sf.dirty {
			total -= sf.deltas.n
			sf.deltas = deltas{}
		}
	}
}

// drop lets go of a file whose counts cannot be written.
func (db *DB) drop(sf *sfile) {
	db.stats.Dropped += sf.deltas.pending()
	if sf.dirty {
		sf.dirty = false
		db.dirty = slices.DeleteFunc(db.dirty, func(x *sfile) bool { return x == sf })
	}
	db.remove(sf)
}

// remove forgets a flushed file.
func (db *DB) remove(sf *sfile) {
	db.closeFile(sf)
	db.files.remove(sf)
	for _, id := range [...]ImageID{sf.key.app, sf.key.dep, sf.key.cg} {
		db.images.unref(id)
	}
	if db.last == sf {
		db.last = nil
	}
}

func (db *DB) closeFile(sf *sfile) {
	if sf.w == nil {
		return
	}
	sf.w.close()
	sf.w = nil
	delete(db.names, sf.name)
	db.stats.Open--
	// The node indices were this file's; a file opened again (checked
	// anew) is looked up afresh.
	for i := range sf.deltas.slots {
		sf.deltas.slots[i].node = 0
	}
}

// removeAll forgets every file, flushed or not.
func (db *DB) removeAll() {
	for _, sf := range db.files.all() {
		db.remove(sf)
	}
	clear(db.dirty)
	db.dirty = db.dirty[:0]
}

// endRun records the run's end in the metadata.
func (db *DB) endRun() error {
	db.meta.Runs[len(db.meta.Runs)-1].Stop = db.now()
	db.meta.Updated = db.now()
	db.meta.Dropped = db.stats.Dropped
	return writeMeta(db.cur, &db.meta)
}

// Save flushes, keeps the current session under name (opcontrol --save)
// and starts a new current session.
func (db *DB) Save(name string) error {
	if err := ValidSessionName(name); err != nil {
		return err
	}
	if _, err := db.lock.root.Lstat(path.Join(samplesDir, name)); err == nil {
		return fmt.Errorf("save: session %q exists", name)
	}
	if err := db.Flush(); err != nil {
		return err
	}
	db.removeAll()
	if err := db.endRun(); err != nil {
		return err
	}
	db.cur.Close()
	err := saveCurrent(db.lock.root, name)
	db.meta = Meta{}
	if oerr := db.openCurrent(); oerr != nil {
		return errors.Join(err, oerr)
	}
	return err
}

// Reset drops every count of the current session, flushed or not
// (opcontrol --reset), and starts a new one.
func (db *DB) Reset() error {
	db.removeAll()
	db.cur.Close()
	err := resetCurrent(db.lock.root)
	db.meta = Meta{}
	if oerr := db.openCurrent(); oerr != nil {
		return errors.Join(err, oerr)
	}
	return err
}

// JITRoot makes and opens the directory where the daemon copies process
// pid's JIT data (DIR/samples/current/jit/PID): the copies are made
// through it, relative to the directory, never through a path.
func (db *DB) JITRoot(pid int) (*os.Root, error) {
	if err := mkdirIn(db.cur, jitDir); err != nil {
		return nil, err
	}
	name := path.Join(jitDir, strconv.Itoa(pid))
	if err := mkdirIn(db.cur, name); err != nil {
		return nil, err
	}
	return db.cur.OpenRoot(name)
}

// ReadJIT reads file name of process pid's directory of the current
// session (JITRoot's), whole, through the directory and without
// following a link: the daemon's own copies, read again while it runs
// (the OTLP push names PyPy's loops by the numbered dump of its log).
// A file of more than limit bytes is an error; one not there wraps
// fs.ErrNotExist.
func (db *DB) ReadJIT(pid int, name string, limit int64) ([]byte, error) {
	f, err := db.cur.OpenFile(path.Join(jitDir, strconv.Itoa(pid), name), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", path.Join(jitDir, strconv.Itoa(pid), name), limit)
	}
	return b, nil
}

// Root is the session directory, for the files the daemon keeps beside
// the samples (its pid file, its socket). The DB closes it.
func (db *DB) Root() *os.Root { return db.lock.root }

// Dir is the session directory.
func (db *DB) Dir() string { return db.dir }

// Meta is the current session's metadata as the next flush will write it.
func (db *DB) Meta() Meta { return db.meta }

// Stats returns the DB's counters.
func (db *DB) Stats() Stats {
	s := db.stats
	s.Files, s.Dirty = db.files.len(), len(db.dirty)
	s.DiskFiles, s.DiskBytes = db.space.files, db.space.bytes
	s.Images = len(db.images.e) - 1 - len(db.images.free)
	return s
}

// Close flushes, closes every file, records the run's end and releases the
// directory's lock. The flush's error is returned; the lock is released
// anyway.
func (db *DB) Close() error {
	if db.closed {
		return nil
	}
	db.closed = true
	err := db.Flush()
	db.removeAll()
	if merr := db.endRun(); merr != nil && err == nil {
		err = merr
	}
	db.cur.Close()
	db.lock.unlock()
	return err
}

package delivery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/trust"
)

// A spooled batch is a file of the spool's directory named for its
// sequence number ("%016x.otlp", so names sort as batches were put),
// written under a temporary name (".%016x.tmp") and renamed, so that a
// batch is there whole or not at all, but for a crash of the machine
// (write). It starts with a header:
// spoolMagic, the length of the batch (8 bytes, little endian) and its
// CRC-32 (IEEE, 4 bytes), then 4 zero bytes.
const (
	spoolMagic  = "JPOTLPB1"
	spoolHeader = 24
	spoolSuffix = ".otlp"
)

// Spool is a directory of batches waiting to be sent, at most Max bytes
// of them: putting one more drops the oldest, which are counted. Every
// file is opened relative to the directory's descriptor, following no
// symlink, and read only when it is a regular file of jitprof's user
// with one link; what is not a batch of the spool's is left alone.
type Spool struct {
	dir *os.File
	max int64

	mu    sync.Mutex
	files []spooled // oldest first
	bytes int64
	next  uint64
	busy  uint64 // the batch being sent (Oldest), 0 for none
	// last is the file of the batch put last, kept in memory until
	// it is removed or another is put, so that Oldest need not read
	// back what it has just written: the Sender sends each batch soon
	// after it is put. The file stays the copy that lasts.
	last struct {
		seq  uint64
		file []byte
	}
	// Batches and bytes dropped: the oldest, to keep the bound; batches
	// larger than the bound; files that were not whole batches.
	dropped, droppedBytes uint64
}

type spooled struct {
	seq  uint64
	size int64
}

// ErrEmpty is Oldest's error when no batch waits.
var ErrEmpty = errors.New("no batch waits")

// OpenSpoolDir opens the spool in the directory path, making it (mode
// 0700) when it is not there; the directory must be jitprof's user's,
// reached without a symlink, and writable by no one else.
func OpenSpoolDir(path string, maxBytes int64) (*Spool, error) {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("spool: %w", err)
	}
	dir, err := trust.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return openOwnSpool(dir, path, maxBytes)
}

// OpenSpoolIn opens the spool in the directory name of root (one entry,
// made mode 0700 when it is not there), as OpenSpoolDir does: the
// daemon's spool, in its session directory, which trust.OpenOwnDir
// opened.
func OpenSpoolIn(root *os.Root, name string, maxBytes int64) (*Spool, error) {
	if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("spool: %w", err)
	}
	dir, err := trust.OpenEntry(root, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return openOwnSpool(dir, name, maxBytes)
}

// openOwnSpool opens the spool in dir once it is found to be jitprof's
// user's and writable by no one else.
func openOwnSpool(dir *os.File, path string, maxBytes int64) (*Spool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		dir.Close()
		return nil, fmt.Errorf("spool: %s: %w", path, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		dir.Close()
		return nil, fmt.Errorf("spool: refusing %s: owned by uid %d with mode %#o: want jitprof's user's (uid %d), writable by no one else", path, st.Uid, st.Mode&0o777, os.Geteuid())
	}
	return OpenSpool(dir, maxBytes)
}

// OpenSpool opens the spool in the open directory dir, which it then
// owns, keeping at most maxBytes bytes. It finds the batches an earlier run
// left, and removes the files of batches it was writing.
func OpenSpool(dir *os.File, maxBytes int64) (*Spool, error) {
	s := &Spool{dir: dir, max: maxBytes, next: 1}
	names, err := s.names()
	if err != nil {
		dir.Close()
		return nil, err
	}
	for _, name := range names {
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			unix.Unlinkat(s.fd(), name, 0) // a batch whose writing a crash cut
			continue
		}
		seq, ok := parseName(name)
		if !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(s.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		s.files = append(s.files, spooled{seq, st.Size})
		s.bytes += st.Size
		s.next = max(s.next, seq+1)
	}
	slices.SortFunc(s.files, func(a, b spooled) int { return cmpSeq(a.seq, b.seq) })
	s.mu.Lock()
	s.evict()
	s.mu.Unlock()
	return s, nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Spool) fd() int { return int(s.dir.Fd()) }

// names lists the directory's entries.
func (s *Spool) names() ([]string, error) {
	if _, err := s.dir.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	names, err := s.dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return names, nil
}

func spoolName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, spoolSuffix) }

func parseName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, spoolSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil && seq > 0
}

// Close closes the spool's directory; the batches stay.
func (s *Spool) Close() error { return s.dir.Close() }

// Put adds a batch, dropping the oldest batches (not the one being sent)
// while the spool holds more than its bound. A batch larger than the
// bound is dropped at once, and counted.
func (s *Spool) Put(batch []byte) error {
	size := int64(spoolHeader + len(batch))
	s.mu.Lock()
	if size > s.max || len(batch) > MaxBatch {
		s.dropped++
		s.droppedBytes += uint64(size)
		s.mu.Unlock()
		return fmt.Errorf("spool: a batch of %d bytes, over the spool's bound of %d: dropped", size, s.max)
	}
	seq := s.next
	s.next++
	s.mu.Unlock()

	// Written outside the lock: Oldest and Remove go on meanwhile.
	file := appendBatch(make([]byte, 0, size), batch)
	if err := s.write(seq, file); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last.seq, s.last.file = seq, file
	s.files = append(s.files, spooled{seq, size})
	slices.SortFunc(s.files, func(a, b spooled) int { return cmpSeq(a.seq, b.seq) })
	s.bytes += size
	s.evict()
	return nil
}

// write writes the file of batch seq (appendBatch's) under a temporary
// name and renames it. Neither the file nor the directory is synced:
// a batch survives the daemon's exit, crash or restart (its pages are
// the kernel's), not a crash of the machine, as the Collector's own
// persistent queue by default (the file_storage extension's fsync:
// false). The syncs were a third of the spooling of a daemon pushing at
// 1 kHz, and each a wait the Go runtime's sysmon thread polled through.
// A batch a machine's crash left short or unwritten fails its length or
// checksum when read (parseBatch): dropped and counted, not sent.
func (s *Spool) write(seq uint64, file []byte) error {
	tmp, name := "."+strings.TrimSuffix(spoolName(seq), spoolSuffix)+".tmp", spoolName(seq)
	fd, err := unix.Openat(s.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(file)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(s.fd(), tmp, s.fd(), name)
	}
	if err != nil {
		unix.Unlinkat(s.fd(), tmp, 0)
		return fmt.Errorf("spool: writing a batch: %w", err)
	}
	return nil
}

// evict drops the oldest batches but the busy one while the spool is over
// its bound. s.mu is held.
func (s *Spool) evict() {
	for i := 0; s.bytes > s.max && i < len(s.files); {
		f := s.files[i]
		if f.seq == s.busy {
			i++
			continue
		}
		s.removeAt(i)
		s.dropped++
		s.droppedBytes += uint64(f.size)
	}
}

// removeAt removes the i-th batch's file. s.mu is held.
func (s *Spool) removeAt(i int) {
	f := s.files[i]
	unix.Unlinkat(s.fd(), spoolName(f.seq), 0)
	if s.last.seq == f.seq {
		s.last.seq, s.last.file = 0, nil
	}
	s.files = slices.Delete(s.files, i, i+1)
	s.bytes -= f.size
}

// Oldest returns the oldest batch and marks it busy until Remove or
// Release: Put does not drop it meanwhile. The batch is the caller's to
// read, not to change. A file that is not a whole
// batch is dropped, counted, and reported as the error (the next call
// goes on with the next batch); ErrEmpty says no batch waits.
func (s *Spool) Oldest() (uint64, []byte, error) {
	s.mu.Lock()
	if len(s.files) == 0 {
		s.mu.Unlock()
		return 0, nil, ErrEmpty
	}
	f := s.files[0]
	s.busy = f.seq
	if s.last.seq == f.seq {
		// Its bytes as written: the file's are read only after a
		// restart, or once a later batch was put.
		batch := s.last.file[spoolHeader:]
		s.mu.Unlock()
		return f.seq, batch, nil
	}
	s.mu.Unlock()
	batch, err := s.read(f.seq)
	if err != nil {
		s.mu.Lock()
		if i := slices.IndexFunc(s.files, func(x spooled) bool { return x.seq == f.seq }); i >= 0 {
			s.removeAt(i)
			s.dropped++
			s.droppedBytes += uint64(f.size)
		}
		s.busy = 0
		s.mu.Unlock()
		return 0, nil, err
	}
	return f.seq, batch, nil
}

// read reads and checks batch seq.
func (s *Spool) read(seq uint64) ([]byte, error) {
	name := spoolName(seq)
	f, err := trust.OpenInDir(s.dir, name, trust.Rule{Owner: trust.UnknownOwner, Limit: spoolHeader + MaxBatch})
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, f.Size))
	if err != nil {
		return nil, fmt.Errorf("spool: %s: %w", name, err)
	}
	batch, err := parseBatch(b)
	if err != nil {
		return nil, fmt.Errorf("spool: %s: %w: dropped", name, err)
	}
	return batch, nil
}

// appendBatch appends a spooled file's content: the header, then batch.
func appendBatch(b, batch []byte) []byte {
	b = append(b, spoolMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(batch)))
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(batch))
	b = binary.LittleEndian.AppendUint32(b, 0)
	return append(b, batch...)
}

// parseBatch checks a spooled file's header and returns its batch.
func parseBatch(b []byte) ([]byte, error) {
	if len(b) < spoolHeader || string(b[:8]) != spoolMagic || binary.LittleEndian.Uint32(b[20:]) != 0 {
		return nil, fmt.Errorf("not a spooled batch")
	}
	n := binary.LittleEndian.Uint64(b[8:])
	if n != uint64(len(b)-spoolHeader) {
		return nil, fmt.Errorf("a batch of %d bytes in %d", n, len(b)-spoolHeader)
	}
	batch := b[spoolHeader:]
	if crc32.ChecksumIEEE(batch) != binary.LittleEndian.Uint32(b[16:]) {
		return nil, fmt.Errorf("its checksum does not match")
	}
	return batch, nil
}

// Remove removes batch seq: sent, or rejected for good.
func (s *Spool) Remove(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.IndexFunc(s.files, func(x spooled) bool { return x.seq == seq }); i >= 0 {
		s.removeAt(i)
	}
	if s.busy == seq {
		s.busy = 0
	}
}

// Release keeps batch seq for a later attempt.
func (s *Spool) Release(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == seq {
		s.busy = 0
	}
	s.evict()
}

// SpoolStats says what a spool holds and has dropped.
type SpoolStats struct {
	Queued, QueuedBytes   uint64
	Dropped, DroppedBytes uint64
}

// Stats says what the spool holds and has dropped since it was opened.
func (s *Spool) Stats() SpoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SpoolStats{uint64(len(s.files)), uint64(s.bytes), s.dropped, s.droppedBytes}
}

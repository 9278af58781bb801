package trust

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// Cred is a user whose rights a read is made with: the user a recorded
// process ran as, or the owner of the file whose data named the path.
type Cred struct{ UID, GID int }

// Root is root's Cred.
var Root = Cred{0, 0}

// Nobody is the Cred of data whose origin is not known at all (a copy in
// a build-id cache): a read with its rights gets only what every user may
// read.
var Nobody = Cred{65534, 65534}

// Unknown is the Cred of data whose user is not known: the read is made
// with the rights of the user running jitprof.
var Unknown = Cred{UnknownOwner, UnknownOwner}

// CredOf is the owner of the file st describes.
func CredOf(st *unix.Stat_t) Cred { return Cred{int(st.Uid), int(st.Gid)} }

// OpenNamed opens path, a file that data named rather than the user
// running jitprof (an image a recorded process mapped, its debug file, a
// source file named by an image's debug info), for reading:
//
//   - only a regular file: the path is opened O_PATH, which neither
//     blocks on a FIFO nor wakes a device, and read only once fstat says
//     it is regular;
//   - with c's rights, not jitprof's: when jitprof runs as root and c is
//     another user, the open is made on a thread whose filesystem uid and
//     gid are c's and which has no supplementary groups, so the kernel
//     checks every directory on the path and the file itself as it would
//     for c. A user's binary whose debug info names /etc/shadow, or a
//     process that mapped its own file at a path that names a root-only
//     file on the host, gets nothing that user could not read.
//
// Symlinks are followed, with c's rights: the paths come from the
// kernel (mappings) and from compilers (source files), where symlinked
// directories are common, and a link to a file c cannot read is refused
// like the file. limit bounds the size (0: no bound beyond the
// filesystem's).
func OpenNamed(path string, c Cred, limit int64) (*File, error) {
	if c.UID == UnknownOwner || os.Geteuid() != 0 || c.UID == 0 {
		return openNamed(path, limit)
	}
	return asUser(c).open(path, limit)
}

// openNamed opens path with this thread's rights: O_PATH, fstat, then a
// reopen through /proc/self/fd of the inode that was checked.
func openNamed(path string, limit int64) (*File, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG {
		return nil, refuse(path, "not a regular file ("+TypeName(t)+")", false)
	}
	if limit > 0 && st.Size > limit {
		return nil, refuse(path, fmt.Sprintf("%d bytes, over the limit of %d", st.Size, limit), false)
	}
	fd, err := unix.Open(linux.FDPath(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return nil, refuse(path, "changed while it was opened", false)
	}
	return &File{File: os.NewFile(uintptr(fd), path), Size: st2.Size, Owner: CredOf(&st2)}, nil
}

// opener is a goroutine locked to a thread of its own that opens files
// with one user's filesystem rights. Credentials are per thread in Linux
// and the raw setfsuid, setfsgid and setgroups calls change only the
// calling thread's, so the rest of jitprof keeps root's; the goroutine
// never unlocks its thread, which therefore never runs other code.
type opener struct {
	reqs chan openReq
	err  error // why the thread could not take the user's rights
}

type openReq struct {
	path  string
	limit int64
	reply chan openReply
}

type openReply struct {
	f   *File
	err error
}

var (
	openersMu sync.Mutex
	openers   = map[Cred]*opener{}
)

// asUser returns the opener of c, starting it on first use.
func asUser(c Cred) *opener {
	openersMu.Lock()
	defer openersMu.Unlock()
	if o := openers[c]; o != nil {
		return o
	}
	o := &opener{reqs: make(chan openReq)}
	ready := make(chan struct{})
	go o.run(c, ready)
	<-ready
	openers[c] = o
	return o
}

func (o *opener) run(c Cred, ready chan<- struct{}) {
	runtime.LockOSThread()
	// No UnlockOSThread: should a call below fail half-way, the thread
	// must not go back to the runtime with mixed credentials. A locked
	// goroutine that exits takes its thread with it.
	o.err = dropTo(c)
	close(ready)
	for r := range o.reqs {
		if o.err != nil {
			r.reply <- openReply{err: &fs.PathError{Op: "open", Path: r.path, Err: o.err}}
			continue
		}
		f, err := openNamed(r.path, r.limit)
		r.reply <- openReply{f, err}
	}
}

// dropTo gives this thread c's filesystem uid and gid and no
// supplementary groups. Changing the filesystem uid from 0 also drops the
// capabilities that override file permissions (capabilities(7)).
func dropTo(c Cred) error {
	if err := unix.Setgroups(nil); err != nil {
		return fmt.Errorf("dropping supplementary groups: %w", err)
	}
	gid := c.GID
	if gid < 0 {
		gid = c.UID
	}
	if err := unix.Setfsgid(gid); err != nil {
		return fmt.Errorf("taking gid %d's rights: %w", gid, err)
	}
	if err := unix.Setfsuid(c.UID); err != nil {
		return fmt.Errorf("taking uid %d's rights: %w", c.UID, err)
	}
	// setfsuid and setfsgid return the previous id and fail silently
	// for a bad one, so a second call reads the one in force.
	if got, _ := unix.SetfsuidRetUid(c.UID); got != c.UID {
		return fmt.Errorf("could not take uid %d's rights (filesystem uid is %d)", c.UID, got)
	}
	if got, _ := unix.SetfsgidRetGid(gid); got != gid {
		return fmt.Errorf("could not take gid %d's rights (filesystem gid is %d)", gid, got)
	}
	return nil
}

func (o *opener) open(path string, limit int64) (*File, error) {
	reply := make(chan openReply, 1)
	o.reqs <- openReq{path, limit, reply}
	r := <-reply
	return r.f, r.err
}

// OpenRecording opens a recording given on jitprof's command line (-i),
// as perf does: one owned neither by the user running jitprof nor by
// root is refused unless force (perf's -f, jitprof's --force), because
// what it names (images, JIT data) is then read with jitprof's rights on
// that owner's word. "-" is standard input, which is not checked. A path
// that is neither a regular file nor a FIFO is refused.
//
// The path is opened O_PATH and checked before it is opened for
// reading: a FIFO another user planted would block a reader's open until
// someone wrote it, and opening a device, even O_NONBLOCK, runs its
// driver. A FIFO that passes (yours, root's, or --force) is opened as
// FIFOs are, waiting for its writer, and read as a stream.
func OpenRecording(path string, force bool) (*os.File, error) {
	if path == "-" {
		return os.Stdin, nil
	}
	// The path is the user's: symlinks in it are followed, as perf
	// follows them.
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	t := st.Mode & unix.S_IFMT
	if t != unix.S_IFREG && t != unix.S_IFIFO {
		return nil, refuse(path, "not a regular file or a pipe ("+TypeName(t)+")", false)
	}
	if me := os.Geteuid(); !force && st.Uid != 0 && int(st.Uid) != me {
		return nil, refuse(path, fmt.Sprintf("owned by uid %d, neither by the user running jitprof (uid %d) nor by root, as perf requires", st.Uid, me), true)
	}
	fd, err := unix.Open(linux.FDPath(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return nil, refuse(path, "changed while it was opened", false)
	}
	return os.NewFile(uintptr(fd), path), nil
}

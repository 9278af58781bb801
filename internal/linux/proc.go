package linux

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoProcess means the process does not exist, or exited while it was
// being read; a caller walking /proc skips it.
var ErrNoProcess = errors.New("no such process")

// Process is what /proc says of a process: the input from which a recorder
// synthesizes COMM and MMAP2 records for processes that were running before
// recording began.
type Process struct {
	PID  int // the thread group id
	PPID int
	Comm string
	// Identity is who the process is: the recorder keeps it to judge the
	// process's JIT data files by, also after the process has exited.
	Identity
	Threads []Thread
	Maps    []Mapping
}

// Identity is what /proc says of who a process is.
type Identity struct {
	// UID and GID are the process's filesystem ids, the owner of the
	// files it creates (its effective ids unless it called setfsuid), as
	// seen from the reader's user namespace.
	UID, GID int
	// NSPID is the process's pid in its own pid namespace, the pid a JIT
	// in a container writes into its file names.
	NSPID int
	// StartTime is field 22 of /proc/PID/stat, clock ticks since boot:
	// with the pid, it tells the process from a later one with its pid.
	StartTime uint64
}

// Proc is a proc file system: this machine's (the zero Proc, Host) or a
// copy a test made, at Root. Every read of /proc goes through one.
type Proc struct {
	// Root is where it is mounted; "" is /proc.
	Root string
}

// Host is this machine's proc file system, at /proc.
var Host Proc

func (p Proc) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// Dir is process pid's directory, /proc/PID.
func (p Proc) Dir(pid int) string { return p.root() + "/" + strconv.Itoa(pid) }

// RootDir is process pid's root directory as this process reaches it,
// /proc/PID/root: where the files the process names are, in a container
// or another mount namespace too.
func (p Proc) RootDir(pid int) string { return p.Dir(pid) + "/root" }

// Identity reads pid's Identity. A process that is gone gives an error
// wrapping ErrNoProcess.
func (p Proc) Identity(pid int) (Identity, error) {
	dir := p.Dir(pid)
	status, err := readProc(dir + "/status")
	if err == nil {
		var id Identity
		if id, _, _, err = parseStatus(status); err != nil {
			err = fmt.Errorf("%s/%w", dir, err)
		} else if id.StartTime, err = readStartTime(dir); err == nil {
			return id, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		err = fmt.Errorf("%w: %w", ErrNoProcess, err)
	}
	return Identity{}, fmt.Errorf("process %d: %w", pid, err)
}

// readProc reads a small file of /proc, such as a process's status or
// stat, in four system calls: os.ReadFile takes six (it asks the
// poller to take the file and stats it for its size, which /proc gives
// as 0) and grows its buffer twice. The daemon reads two for each
// process the machine starts.
func readProc(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 4096)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// parseStatus reads what a Process needs of /proc/PID/status: Tgid,
// PPid, and the Uid, Gid and NSpid lines of an Identity.
func parseStatus(b []byte) (id Identity, tgid, ppid int, err error) {
	tgid, ppid, id.UID, id.GID = -1, -1, -1, -1
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "Tgid":
			tgid, err = atoiNonNeg(f[0])
		case "PPid":
			ppid, err = atoiNonNeg(f[0])
		case "Uid", "Gid":
			// Real, effective, saved set, filesystem.
			if len(f) != 4 {
				return id, 0, 0, fmt.Errorf("status: %s: %d fields, want 4", k, len(f))
			}
			dst := &id.UID
			if k == "Gid" {
				dst = &id.GID
			}
			*dst, err = atoiNonNeg(f[3])
		case "NSpid":
			// Outermost first; the last is the process's own namespace.
			id.NSPID, err = atoiNonNeg(f[len(f)-1])
		}
		if err != nil {
			return id, 0, 0, fmt.Errorf("status: %s: %w", k, err)
		}
	}
	if tgid < 0 || ppid < 0 || id.UID < 0 || id.GID < 0 {
		return id, 0, 0, errors.New("status: no Tgid, PPid, Uid or Gid")
	}
	if id.NSPID == 0 {
		id.NSPID = tgid // kernels before 4.1 have no NSpid line
	}
	return id, tgid, ppid, nil
}

// atoiNonNeg is strconv.Atoi for ids, which are never negative.
func atoiNonNeg(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return n, err
}

// readStartTime reads field 22 of dir/stat.
func readStartTime(dir string) (uint64, error) {
	f, err := statFields(dir)
	if err != nil {
		return 0, err
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/stat: start time: %w", dir, err)
	}
	return start, nil
}

// statFields returns the fields of dir/stat from the third on, at least
// 20 of them: f[0] is field 3, so field 22 is f[19].
func statFields(dir string) ([][]byte, error) {
	b, err := readProc(dir + "/stat")
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s/stat: no command name", dir)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) == 0 {
		return nil, fmt.Errorf("%s/stat: %d fields, want at least 22", dir, len(f)+2)
	}
	return f, nil
}

// Thread is one thread of a process.
type Thread struct {
	TID  int
	Comm string
}

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Pgoff      uint64
	Prot       uint32 // PROT_READ, PROT_WRITE, PROT_EXEC
	Flags      uint32 // MAP_PRIVATE or MAP_SHARED
	Major      uint32
	Minor      uint32
	Inode      uint64
	// Path as perf names it: the file, a pseudo-name such as [vdso],
	// [heap] or "/memfd:name (deleted)", or "//anon" for anonymous memory,
	// where JIT code lives.
	Path string
}

// AnonPath is perf's name for anonymous mappings.
const AnonPath = "//anon"

// PIDs lists the processes (thread groups).
func (p Proc) PIDs() ([]int, error) {
	return numericDir(p.root())
}

func numericDir(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// TaskIDs lists the threads of process pid, from /proc/PID/task; a
// process that is gone gives ErrNoProcess.
func (p Proc) TaskIDs(pid int) ([]int, error) {
	tids, err := numericDir(p.Dir(pid) + "/task")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil, ErrNoProcess
	}
	return tids, err
}

// ReadProcess reads pid's identity, threads and mappings. Threads that exit
// while it reads are left out; if the process itself exits the error is
// ErrNoProcess, and another user's process that the caller may not read
// gives an error wrapping fs.ErrPermission.
func (pr Proc) Process(pid int) (Process, error) {
	p, err := pr.readProcess(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			err = fmt.Errorf("%w: %w", ErrNoProcess, err)
		}
		return Process{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return p, nil
}

func (pr Proc) readProcess(pid int) (Process, error) {
	dir := pr.Dir(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Process{}, err
	}
	var p Process
	if p.Identity, p.PID, p.PPID, err = parseStatus(status); err != nil {
		return Process{}, fmt.Errorf("%s/%w", dir, err)
	}
	if p.StartTime, err = readStartTime(dir); err != nil {
		return Process{}, err
	}
	if p.Comm, err = readComm(dir); err != nil {
		return Process{}, err
	}
	tids, err := pr.TaskIDs(pid)
	if err != nil {
		return Process{}, err
	}
	for _, tid := range tids {
		comm, err := readComm(fmt.Sprintf("%s/task/%d", dir, tid))
		if err != nil {
			continue // the thread exited
		}
		p.Threads = append(p.Threads, Thread{TID: tid, Comm: comm})
	}
	maps, err := os.ReadFile(dir + "/maps")
	if err != nil {
		return Process{}, err
	}
	if p.Maps, err = parseMaps(maps); err != nil {
		return Process{}, fmt.Errorf("%s/maps: %w", dir, err)
	}
	// A process that died while we read has an empty maps file and
	// no status; check it is still there so we do not report it as a
	// process with no mappings.
	if _, err := os.Stat(dir + "/status"); err != nil {
		return Process{}, err
	}
	return p, nil
}

// maxMaps bounds what Maps reads of /proc/PID/maps: 65,530 mappings
// (vm.max_map_count's default) of about 100 bytes each.
const maxMaps = 8 << 20

// Maps reads process pid's mappings, and nothing else of it: at most
// maxMaps bytes of /proc/PID/maps, whole lines.
func (p Proc) Maps(pid int) ([]Mapping, error) {
	path := p.Dir(pid) + "/maps"
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMaps))
	if err != nil {
		return nil, err
	}
	if len(b) == maxMaps {
		b = b[:bytes.LastIndexByte(b, '\n')+1] // the rest is not read
	}
	maps, err := parseMaps(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return maps, nil
}

func readComm(dir string) (string, error) {
	b, err := os.ReadFile(dir + "/comm")
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b, []byte("\n"))), nil
}

// parseMaps parses /proc/PID/maps, whose lines are
// "start-end perms offset major:minor inode      path".
func parseMaps(b []byte) ([]Mapping, error) {
	var maps []Mapping
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		m, err := parseMapsLine(strings.TrimSuffix(line, "\n"))
		if err != nil {
			// Not the line: its path is whatever name the process
			// gave a file.
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		maps = append(maps, m)
	}
	return maps, nil
}

func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	var f [5]string
	rest := line
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		var ok bool
		f[i], rest, ok = strings.Cut(rest, " ")
		if !ok && i < 4 {
			return m, errors.New("too few fields")
		}
	}
	// The path is what follows the inode and its padding; it may
	// contain spaces.
	m.Path = strings.TrimLeft(rest, " ")
	if m.Path == "" {
		m.Path = AnonPath
	}
	// Errors say which field is bad, not what it holds: a path can
	// shift into the fields before it on a malformed line.
	num := func(s string, base, bits int, what string) (uint64, error) {
		v, err := strconv.ParseUint(s, base, bits)
		if err != nil {
			return 0, fmt.Errorf("bad %s", what)
		}
		return v, nil
	}
	start, end, ok := strings.Cut(f[0], "-")
	if !ok {
		return m, errors.New("bad range")
	}
	var err error
	if m.Start, err = num(start, 16, 64, "start"); err != nil {
		return m, err
	}
	if m.End, err = num(end, 16, 64, "end"); err != nil {
		return m, err
	}
	if m.End <= m.Start {
		return m, errors.New("empty range")
	}
	if len(f[1]) != 4 {
		return m, errors.New("bad permissions")
	}
	for i, bit := range []uint32{unix.PROT_READ, unix.PROT_WRITE, unix.PROT_EXEC} {
		if f[1][i] != '-' {
			m.Prot |= bit
		}
	}
	m.Flags = unix.MAP_PRIVATE
	if f[1][3] == 's' {
		m.Flags = unix.MAP_SHARED
	}
	if m.Pgoff, err = num(f[2], 16, 64, "offset"); err != nil {
		return m, err
	}
	maj, min, ok := strings.Cut(f[3], ":")
	if !ok {
		return m, errors.New("bad device")
	}
	ma, err := num(maj, 16, 32, "device")
	if err != nil {
		return m, err
	}
	mi, err := num(min, 16, 32, "device")
	if err != nil {
		return m, err
	}
	m.Major, m.Minor = uint32(ma), uint32(mi)
	if m.Inode, err = num(f[4], 10, 64, "inode"); err != nil {
		return m, err
	}
	return m, nil
}

// Comm returns the name of process pid, as /proc/PID/comm gives it.
func (p Proc) Comm(pid int) (string, error) {
	return readComm(p.Dir(pid))
}

// Exe returns the path of process pid's executable, /proc/PID/exe's
// target.
func (p Proc) Exe(pid int) (string, error) {
	return os.Readlink(p.Dir(pid) + "/exe")
}

// Cmdline returns process pid's arguments, from /proc/PID/cmdline.
func (p Proc) Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(p.Dir(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// maxEnviron bounds what Getenv reads of a process's environment: the
// kernel lets a program start with up to a quarter of its stack limit of
// arguments and environment (2 MiB by default), and a variable past the
// first MiB is not looked for.
const maxEnviron = 1 << 20

// maxValue bounds a value Getenv returns: PATH_MAX, for what it is
// asked for is a path.
const maxValue = 4096

// Getenv returns the value of the variable name in the environment
// process pid started with (/proc/PID/environ), the first if it is there
// twice, as the C library's getenv finds it; ok is false when it is not
// there, or is past maxEnviron, or its value is longer than maxValue.
// Nothing else of the environment, which may hold secrets, is kept. Only
// the process's user and root may read it.
func (p Proc) Getenv(pid int, name string) (value string, ok bool, err error) {
	path := p.Dir(pid) + "/environ"
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	b := make([]byte, 0, 16<<10)
	for len(b) < maxEnviron {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b))
		}
		n, err := f.Read(b[len(b):min(cap(b), maxEnviron)])
		b = b[:len(b)+n]
		if err != nil || n == 0 {
			break
		}
	}
	if len(b) == maxEnviron {
		// Cut: the last entry may be part of one.
		b = b[:bytes.LastIndexByte(b, 0)+1]
	}
	value, ok = environValue(b, name)
	return value, ok && len(value) <= maxValue, nil
}

// environValue finds name=VALUE among the NUL-ended entries of env (the
// last may lack its NUL).
func environValue(env []byte, name string) (string, bool) {
	for len(env) > 0 {
		entry, rest, _ := bytes.Cut(env, []byte{0})
		env = rest
		if v, ok := bytes.CutPrefix(entry, []byte(name)); ok && len(v) > 0 && v[0] == '=' {
			return string(v[1:]), true
		}
	}
	return "", false
}

// Cwd returns process pid's working directory, /proc/PID/cwd's target,
// as a path in this process's mount namespace.
func (p Proc) Cwd(pid int) (string, error) {
	return os.Readlink(p.Dir(pid) + "/cwd")
}

// Stat returns, from /proc/PID/stat, a process's state (field 3: 'R',
// 'S', 'Z' for a zombie, ...) and its start time (field 22), which tells
// it from a later process with its pid.
func (p Proc) Stat(pid int) (start uint64, state byte, err error) {
	dir := p.Dir(pid)
	f, err := statFields(dir)
	if err != nil {
		return 0, 0, err
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%s/stat: start time: %w", dir, err)
	}
	return start, f[0][0], nil
}

// SameMountNamespace says whether process pid sees the mount namespace
// this process sees: then a path names the same file for both.
func (p Proc) SameMountNamespace(pid int) (bool, error) {
	var theirs, ours unix.Stat_t
	if err := unix.Stat(p.Dir(pid)+"/ns/mnt", &theirs); err != nil {
		return false, err
	}
	if err := unix.Stat(p.root()+"/self/ns/mnt", &ours); err != nil {
		return false, err
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino, nil
}

// SeesHostFiles says whether process pid names files as this process
// does: it is in this process's mount namespace and not chrooted (its
// root, /proc/PID/root, is "/"). Then a path it gives, and its working
// directory as /proc/PID/cwd reads, name the same file for both.
func (p Proc) SeesHostFiles(pid int) (bool, error) {
	same, err := p.SameMountNamespace(pid)
	if err != nil || !same {
		return false, err
	}
	root, err := os.Readlink(p.RootDir(pid))
	return err == nil && root == "/", err
}

// SetID says whether process pid runs with ids other than those of the
// user who started it: a real uid or gid other than its filesystem one
// (a set-user-ID or set-group-ID program, or one that changed its ids).
// Its environment is the word of the user who ran it, not of the user
// its files are judged by.
func (p Proc) SetID(pid int) (bool, error) {
	path := p.Dir(pid) + "/status"
	b, err := readProc(path)
	if err != nil {
		return false, err
	}
	seen := 0
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		if k != "Uid" && k != "Gid" {
			continue
		}
		// Real, effective, saved set, filesystem.
		f := strings.Fields(v)
		if len(f) != 4 {
			return false, fmt.Errorf("%s: %s: %d fields, want 4", path, k, len(f))
		}
		if f[0] != f[3] {
			return true, nil
		}
		seen++
	}
	if seen != 2 {
		return false, fmt.Errorf("%s: no Uid or Gid", path)
	}
	return false, nil
}

// maxFDs bounds the descriptors HoldsOpen looks at: a program opens the
// files it keeps open for all its life (a log) among its first.
const maxFDs = 4096

// HoldsOpen says whether process pid has the file (dev, ino) open: one
// of its first maxFDs descriptors (/proc/PID/fd, in the order of their
// numbers) is it. Each is stat'ed, never opened: opening a FIFO's would
// wait for a writer, a device's may do something.
func (p Proc) HoldsOpen(pid int, dev, ino uint64) (bool, error) {
	dir := p.Dir(pid) + "/fd"
	d, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	for seen := 0; seen < maxFDs; {
		names, err := d.Readdirnames(min(256, maxFDs-seen))
		for _, n := range names {
			var st unix.Stat_t
			if unix.Stat(dir+"/"+n, &st) == nil && uint64(st.Dev) == dev && st.Ino == ino {
				return true, nil
			}
		}
		seen += len(names)
		if err != nil || len(names) == 0 {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return false, err
		}
	}
	return false, nil
}

// SelfExe is this process's executable as the kernel keeps it open: the
// path re-executes the same file after the one at its path changed.
const SelfExe = "/proc/self/exe"

// FDPath is the path that reopens or executes this process's open
// descriptor fd, /proc/self/fd/FD: a file reached by its descriptor, not
// again by its path.
func FDPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// SelfCwd is this process's working directory as /proc gives it.
const SelfCwd = "/proc/self/cwd"

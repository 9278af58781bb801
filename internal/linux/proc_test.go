package linux

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		line string
		want Mapping
	}{
		{"55d4c0a00000-55d4c0a2f000 r-xp 00004000 fd:01 1835 /usr/bin/my prog",
			Mapping{Start: 0x55d4c0a00000, End: 0x55d4c0a2f000, Pgoff: 0x4000, Prot: unix.PROT_READ | unix.PROT_EXEC,
				Flags: unix.MAP_PRIVATE, Major: 0xfd, Minor: 1, Inode: 1835, Path: "/usr/bin/my prog"}},
		{"7f1c00000000-7f1c00100000 rwxp 00000000 00:00 0 ",
			Mapping{Start: 0x7f1c00000000, End: 0x7f1c00100000, Prot: 7, Flags: unix.MAP_PRIVATE, Path: AnonPath}},
		{"7f1c00000000-7f1c00001000 r-xs 00000000 00:01 4242                       /memfd:jit (deleted)",
			Mapping{Start: 0x7f1c00000000, End: 0x7f1c00001000, Prot: unix.PROT_READ | unix.PROT_EXEC,
				Flags: unix.MAP_SHARED, Minor: 1, Inode: 4242, Path: "/memfd:jit (deleted)"}},
		{"7ffd5a1e0000-7ffd5a1e2000 r-xp 00000000 00:00 0                          [vdso]",
			Mapping{Start: 0x7ffd5a1e0000, End: 0x7ffd5a1e2000, Prot: unix.PROT_READ | unix.PROT_EXEC, Flags: unix.MAP_PRIVATE, Path: "[vdso]"}},
		{"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
			Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Prot: unix.PROT_EXEC, Flags: unix.MAP_PRIVATE, Path: "[vsyscall]"}},
	}
	for _, tt := range tests {
		got, err := parseMapsLine(tt.line)
		if err != nil || got != tt.want {
			t.Errorf("parseMapsLine(%q)\n = %+v, %v\nwant %+v", tt.line, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "x-y r-xp 0 00:00 0", "0-1 r-x 0 00:00 0", "0-1 r-xp 0 0000 0", "0-1 r-xp 0 00:00", "0-1 r-xp zz 00:00 0"} {
		if _, err := parseMapsLine(bad); err == nil {
			t.Errorf("parseMapsLine(%q): no error", bad)
		}
	}
}

func TestReadProcessSelf(t *testing.T) {
	p, err := Host.Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() || p.PPID != os.Getppid() || !strings.HasPrefix(filepath.Base(exe), p.Comm) || p.Comm == "" {
		t.Errorf("pid %d ppid %d comm %q; want %d %d and a prefix of %s", p.PID, p.PPID, p.Comm, os.Getpid(), os.Getppid(), filepath.Base(exe))
	}
	var self bool
	for _, th := range p.Threads {
		self = self || th.TID == unix.Gettid()
	}
	if !self || len(p.Threads) < 2 {
		t.Errorf("threads %v lack this thread %d", p.Threads, unix.Gettid())
	}
	var text, vdso bool
	for _, m := range p.Maps {
		if m.End <= m.Start {
			t.Errorf("mapping %+v ends before it starts", m)
		}
		text = text || m.Path == exe && m.Prot&unix.PROT_EXEC != 0 && m.Inode != 0
		vdso = vdso || m.Path == "[vdso]"
	}
	if !text || !vdso {
		t.Errorf("maps lack executable text of %s (%v) or [vdso] (%v): %+v", exe, text, vdso, p.Maps)
	}
}

func TestReadProcessGone(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Host.Process(cmd.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("ReadProcess of an exited pid: %v, want ErrNoProcess", err)
	}
}

func TestAllPIDs(t *testing.T) {
	pids, err := Host.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	var self, one bool
	for _, p := range pids {
		self = self || p == os.Getpid()
		one = one || p == 1
	}
	if !self || !one {
		t.Errorf("Host.PIDs() has self %v, init %v", self, one)
	}
}

func TestKernelText(t *testing.T) {
	tests := []struct {
		in   string
		want Kernel
		err  bool
	}{
		{"ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000010 t foo\nffffffff82276508 T _etext\n",
			Kernel{Text: 0xffffffff81000000, Stext: 0xffffffff81000000, Etext: 0xffffffff82276508}, false},
		{"0000000000000000 T _text\n0000000000000000 T _stext\n", Kernel{Hidden: true}, false},
		{"ffffffffc0000000 t foo [mod]\n", Kernel{}, true},
		{"ffffffffc0000000 t _text [mod]\n", Kernel{}, true}, // a module's, not the kernel's
		{"zz T _text\n", Kernel{}, true},
	}
	for _, tt := range tests {
		got, err := kernelText([]byte(tt.in))
		if (err != nil) != tt.err || err == nil && (got.Text != tt.want.Text || got.Stext != tt.want.Stext || got.Etext != tt.want.Etext || got.Hidden != tt.want.Hidden) {
			t.Errorf("kernelText(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseModules(t *testing.T) {
	mods, err := parseModules([]byte("kvm_intel 380928 0 - Live 0xffffffffc0a00000\nkvm 1146880 1 kvm_intel, Live 0x0000000000000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{{"kvm_intel", 0xffffffffc0a00000, 380928}, {"kvm", 0, 1146880}}
	if len(mods) != 2 || mods[0] != want[0] || mods[1] != want[1] {
		t.Errorf("got %+v, want %+v", mods, want)
	}
	if _, err := parseModules([]byte("short 1 2\n")); err == nil {
		t.Error("short line: no error")
	}
}

func TestKernelMapping(t *testing.T) {
	k, err := KernelMapping()
	if err != nil {
		t.Fatal(err)
	}
	restrict, err := readIntFile("/proc/sys/kernel/kptr_restrict")
	if err != nil {
		t.Fatal(err)
	}
	paranoid, err := Paranoid()
	if err != nil {
		t.Fatal(err)
	}
	// As kallsyms_show_value in kernel/kallsyms.c decides.
	hidden := restrict >= 2 || os.Geteuid() != 0 && (restrict == 1 || paranoid > 1)
	if k.Hidden != hidden {
		t.Fatalf("Hidden %v with kptr_restrict %d, perf_event_paranoid %d, euid %d", k.Hidden, restrict, paranoid, os.Geteuid())
	}
	if !hidden && (k.Text == 0 || k.Etext <= k.Text || k.Stext < k.Text) {
		t.Errorf("kernel text %+v", k)
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tnode\nTgid:\t4242\nNgid:\t0\nPid:\t4242\nPPid:\t1\n" +
		"Uid:\t0\t1000\t0\t1001\nGid:\t0\t100\t0\t101\nNSpid:\t4242\t7\n"
	id, tgid, ppid, err := parseStatus([]byte(status))
	want := Identity{UID: 1001, GID: 101, NSPID: 7}
	if err != nil || id != want || tgid != 4242 || ppid != 1 {
		t.Errorf("parseStatus = %+v tgid %d ppid %d, %v; want %+v, 4242, 1", id, tgid, ppid, err, want)
	}
	for _, bad := range []string{
		"Tgid:\t1\nPPid:\t0\nGid:\t0\t0\t0\t0\n",                   // no Uid
		"Tgid:\t1\nPPid:\t0\nUid:\t0\t0\nGid:\t0\t0\t0\t0\n",       // short Uid
		"Tgid:\t1\nPPid:\t0\nUid:\tx\tx\tx\tx\nGid:\t0\t0\t0\t0\n", // not a number
	} {
		if _, _, _, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("parseStatus(%q): no error", bad)
		}
	}
}

func TestReadIdentitySelf(t *testing.T) {
	id, err := Host.Identity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if id.UID != os.Geteuid() || id.GID != os.Getegid() || id.NSPID == 0 || id.StartTime == 0 {
		t.Errorf("identity %+v; want uid %d gid %d, a pid and a start time", id, os.Geteuid(), os.Getegid())
	}
	p, err := Host.Process(os.Getpid())
	if err != nil || p.Identity != id {
		t.Errorf("ReadProcess identity %+v, %v; ReadIdentity said %+v", p.Identity, err, id)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Host.Identity(cmd.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("identity of an exited process: %v, want ErrNoProcess", err)
	}
}

// TestParseErrors: errors name the line by number and never quote it: a
// maps line holds a path any user chose.
func TestParseErrors(t *testing.T) {
	if _, err := parseMaps([]byte("0-1000 r-xp 0 00:00 0 /a\n1000-1000 r-xp 0 00:00 0 /secret\n")); err == nil || !strings.Contains(err.Error(), "line 2: empty range") {
		t.Errorf("empty range: err = %v", err)
	}
	if _, err := parseMaps([]byte("0-1000 r-xp 0 00:00 /secret path\n")); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad inode: err = %v, want one that does not quote the line", err)
	}
	if _, err := parseModules([]byte("secret 1 0 - Live\n")); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("short module line: err = %v, want one that does not quote the line", err)
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-1,5,3-3", []int{0, 1, 3, 5}},
		{"2,0,2", []int{0, 2}},
		{"", nil},
		{"1-", nil},
		{"3-1", nil},
		{"a", nil},
		{"-1", nil},
		{"0-99999999", nil},
		{"65535", []int{65535}},
		{"65536", nil},
		// Ranges each below the old bound on a range's width once
		// made a set of millions of CPUs.
		{strings.Repeat("1000000-1065535,", 50) + "0", nil},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if (err != nil) != (tt.want == nil) || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestOnlineCPUs(t *testing.T) {
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 || cpus[0] < 0 {
		t.Fatalf("OnlineCPUs() = %v", cpus)
	}
}

// TestProcFake: every read of a process goes under the Proc's root, so a
// copy of /proc in a test stands for the machine's.
func TestProcFake(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "4242")
	for name, data := range map[string]string{
		"status":         "Name:\tjit\nTgid:\t4242\nPPid:\t1\nUid:\t0\t1000\t0\t1001\nGid:\t0\t100\t0\t101\nNSpid:\t4242\t7\n",
		"stat":           "4242 (a (jit) b) S 1 " + strings.Repeat("0 ", 17) + "98765 0 0\n",
		"comm":           "jit\n",
		"cmdline":        "jitprof\x00daemon\x00run\x00",
		"environ":        "HOME=/root\x00PYPYLOGX=no\x00PYPYLOG=jit-backend-addr:/tmp/a=b.log\x00PYPYLOG=second\x00PATH=/bin\x00",
		"maps":           "7f1c00000000-7f1c00001000 r-xs 00000000 00:01 4242                       /memfd:jit (deleted)\n",
		"task/4242/comm": "jit\n",
		"task/4243/comm": "worker\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/opt/jit/bin/jit", filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/home/jit", filepath.Join(dir, "cwd")); err != nil {
		t.Fatal(err)
	}
	p := Proc{Root: root}
	if pids, err := p.PIDs(); err != nil || !slices.Equal(pids, []int{4242}) {
		t.Errorf("PIDs() = %v, %v", pids, err)
	}
	if id, err := p.Identity(4242); err != nil || id != (Identity{UID: 1001, GID: 101, NSPID: 7, StartTime: 98765}) {
		t.Errorf("Identity = %+v, %v", id, err)
	}
	if c, err := p.Comm(4242); err != nil || c != "jit" {
		t.Errorf("Comm = %q, %v", c, err)
	}
	if a, err := p.Cmdline(4242); err != nil || !slices.Equal(a, []string{"jitprof", "daemon", "run"}) {
		t.Errorf("Cmdline = %q, %v", a, err)
	}
	if v, ok, err := p.Getenv(4242, "PYPYLOG"); err != nil || !ok || v != "jit-backend-addr:/tmp/a=b.log" {
		t.Errorf("Getenv(PYPYLOG) = %q, %v, %v: want the first PYPYLOG's value", v, ok, err)
	}
	if v, ok, err := p.Getenv(4242, "PYPY"); err != nil || ok {
		t.Errorf("Getenv(PYPY) = %q, %v, %v: want none", v, ok, err)
	}
	if c, err := p.Cwd(4242); err != nil || c != "/home/jit" {
		t.Errorf("Cwd = %q, %v", c, err)
	}
	if e, err := p.Exe(4242); err != nil || e != "/opt/jit/bin/jit" {
		t.Errorf("Exe = %q, %v", e, err)
	}
	if start, state, err := p.Stat(4242); err != nil || start != 98765 || state != 'S' {
		t.Errorf("Stat = %d, %c, %v", start, state, err)
	}
	pr, err := p.Process(4242)
	if err != nil || len(pr.Threads) != 2 || pr.Threads[1].Comm != "worker" || len(pr.Maps) != 1 || pr.Maps[0].Path != "/memfd:jit (deleted)" {
		t.Errorf("Process = %+v, %v", pr, err)
	}
	if m, err := p.Maps(4242); err != nil || len(m) != 1 || m[0].Path != "/memfd:jit (deleted)" || m[0].Start != 0x7f1c00000000 {
		t.Errorf("Maps = %+v, %v", m, err)
	}
	if r := p.RootDir(4242); r != root+"/4242/root" {
		t.Errorf("RootDir = %q", r)
	}
	if _, err := p.Identity(1); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Identity of a process not there: %v, want ErrNoProcess", err)
	}
}

// TestReadProc: readProc reads what os.ReadFile reads, of files of /proc
// and of one larger than its first buffer, and says a missing file does
// not exist.
func TestReadProc(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/proc/self/status", "/proc/self/stat", big} {
		got, err := readProc(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// /proc/self is the test's: the counts of its status move.
		if path == big && !bytes.Equal(got, want) || len(got) == 0 || !bytes.HasPrefix(got, want[:min(len(want), 10)]) {
			t.Errorf("%s: readProc read %d bytes, os.ReadFile %d", path, len(got), len(want))
		}
	}
	if _, err := readProc(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestHoldsOpen: this process holds a file it opened, not one it closed
// or never opened, and the stat of its pipe's descriptors (which an open
// of would wait) does not stop the search.
func TestHoldsOpen(t *testing.T) {
	dir := t.TempDir()
	held, other := filepath.Join(dir, "held"), filepath.Join(dir, "other")
	for _, p := range []string{held, other} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for path, want := range map[string]bool{held: true, other: false} {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		if got, err := Host.HoldsOpen(os.Getpid(), uint64(st.Dev), st.Ino); err != nil || got != want {
			t.Errorf("HoldsOpen(%s) = %v, %v; want %v", filepath.Base(path), got, err, want)
		}
	}
}

// TestProcFakeIDsAndRoot: a process whose real uid or gid is not its
// filesystem one runs set-id; one chrooted, or in another mount
// namespace, does not see the host's files at their paths.
func TestProcFakeIDsAndRoot(t *testing.T) {
	root := t.TempDir()
	mk := func(pid, status, rootLink, ns string) {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rootLink, filepath.Join(dir, "root")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ns, filepath.Join(dir, "ns", "mnt")); err != nil {
			t.Fatal(err)
		}
	}
	plain := "Uid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n"
	mk("self", plain, "/", "/proc/self/ns/mnt")
	mk("1", plain, "/", "/proc/self/ns/mnt")
	mk("2", "Uid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n", "/srv/jail", "/proc/self/ns/mnt")
	mk("3", "Uid:\t1000\t1000\t1000\t1000\nGid:\t100\t50\t50\t50\n", "/", "/proc/self/ns/net")
	p := Proc{Root: root}
	for pid, want := range map[int][2]bool{1: {false, true}, 2: {true, false}, 3: {true, false}} {
		if got, err := p.SetID(pid); err != nil || got != want[0] {
			t.Errorf("SetID(%d) = %v, %v; want %v", pid, got, err, want[0])
		}
		if got, err := p.SeesHostFiles(pid); err != nil || got != want[1] {
			t.Errorf("SeesHostFiles(%d) = %v, %v; want %v", pid, got, err, want[1])
		}
	}
	if got, err := Host.SeesHostFiles(os.Getpid()); err != nil || !got {
		t.Errorf("SeesHostFiles(self) = %v, %v", got, err)
	}
}

// TestGetenvBounds: an environment cut at maxEnviron drops its last,
// partial entry, and a value longer than a path is not returned.
func TestGetenvBounds(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pad := "PAD=" + strings.Repeat("x", maxEnviron-len("PAD=")-len("\x00LOG=/tmp/a")) + "\x00"
	env := pad + "LOG=/tmp/a.log\x00LONG=" + strings.Repeat("y", maxValue+1) + "\x00"
	if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Proc{Root: root}
	if v, ok, err := p.Getenv(7, "LOG"); err != nil || ok {
		t.Errorf("Getenv(LOG), cut at the bound: %q, %v, %v; want none", v, ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "environ"), []byte("LONG="+strings.Repeat("y", maxValue+1)+"\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := p.Getenv(7, "LONG"); err != nil || ok {
		t.Errorf("Getenv(LONG) = %d bytes, %v, %v; want none", len(v), ok, err)
	}
}

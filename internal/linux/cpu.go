package linux

import (
	"bufio"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OnlineCPUs returns the CPUs the kernel has online, from
// /sys/devices/system/cpu/online.
func OnlineCPUs() ([]int, error) { return cpuList("online") }

// PossibleCPUs returns the CPUs the kernel could bring online, from
// /sys/devices/system/cpu/possible.
func PossibleCPUs() ([]int, error) { return cpuList("possible") }

func cpuList(which string) ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/" + which)
	if err != nil {
		return nil, fmt.Errorf("%s cpus: %w", which, err)
	}
	cpus, err := ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s cpus: %w", which, err)
	}
	return cpus, nil
}

// maxCPUs bounds CPU numbers: far above any kernel's NR_CPUS (8192 on
// x86-64), and low enough that a list such as "0-65535,70000-135535,..."
// cannot make a huge set.
const maxCPUs = 1 << 16

// ParseCPUList parses the kernel's cpu list format, also used by perf -C:
// comma-separated CPUs and inclusive ranges, e.g. "0-3,5". The result is
// sorted and has no duplicates.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("cpu list: empty")
	}
	var set [maxCPUs / 64]uint64
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		if b >= maxCPUs {
			return nil, fmt.Errorf("cpu list %q: cpu %d is past the largest possible, %d", s, b, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			if set[c/64]&(1<<(c%64)) == 0 {
				set[c/64] |= 1 << (c % 64)
				n++
			}
		}
	}
	cpus := make([]int, 0, n)
	for i, w := range set {
		for ; w != 0; w &= w - 1 {
			cpus = append(cpus, i*64+bits.TrailingZeros64(w))
		}
	}
	return cpus, nil
}

// CPUInfo returns the CPUDESC and, on x86, the CPUID strings perf writes
// into a recording's header, from /proc/cpuinfo; "" when it cannot tell.
func CPUInfo() (desc, id string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the first CPU is enough
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	desc = strings.Join(strings.Fields(kv["model name"]), " ")
	if v := kv["vendor_id"]; v != "" {
		id = strings.Join([]string{v, kv["cpu family"], kv["model"], kv["stepping"]}, ",")
	}
	return desc, id
}

// MemTotal returns the machine's memory in kB, from /proc/meminfo; 0 when
// it cannot tell.
func MemTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kB, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kB
		}
	}
	return 0
}

// Uname is what uname(2) says of the machine.
type Uname struct {
	Hostname string // uname -n
	Release  string // uname -r: the kernel's release
	Machine  string // uname -m: the architecture
}

// ReadUname returns what uname(2) says.
func ReadUname() (Uname, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Uname{}, err
	}
	return Uname{
		Hostname: unix.ByteSliceToString(u.Nodename[:]),
		Release:  unix.ByteSliceToString(u.Release[:]),
		Machine:  unix.ByteSliceToString(u.Machine[:]),
	}, nil
}

package linux

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParanoidPath is the sysctl that says who may use perf events.
const ParanoidPath = "/proc/sys/kernel/perf_event_paranoid"

// Paranoid returns the value of /proc/sys/kernel/perf_event_paranoid: at 2
// (the usual default) unprivileged users may only profile their own
// processes in user space; below that also the kernel (1) or any CPU (0, -1).
func Paranoid() (int, error) {
	return readIntFile(ParanoidPath)
}

func readIntFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// MaxSampleRate returns /proc/sys/kernel/perf_event_max_sample_rate, the
// highest sampling frequency the kernel allows (perf record -F max).
func MaxSampleRate() (int, error) {
	return readIntFile("/proc/sys/kernel/perf_event_max_sample_rate")
}

// KptrRestrict returns /proc/sys/kernel/kptr_restrict, which decides who
// sees kernel addresses in kallsyms.
func KptrRestrict() (int, error) {
	return readIntFile("/proc/sys/kernel/kptr_restrict")
}

// CapLastCap returns /proc/sys/kernel/cap_last_cap, the highest
// capability this kernel knows.
func CapLastCap() (int, error) {
	return readIntFile("/proc/sys/kernel/cap_last_cap")
}

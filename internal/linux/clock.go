package linux

import (
	"os"
	"strings"
)

// ClockSource returns the clock source the kernel keeps time with
// ("tsc", "kvm-clock", "hpet", ...).
func ClockSource() (string, error) {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return strings.TrimSpace(string(b)), err
}

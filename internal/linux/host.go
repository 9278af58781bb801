package linux

import (
	"os"
	"strings"
)

// MachineID returns the machine's ID, as systemd keeps it in
// /etc/machine-id (or D-Bus in /var/lib/dbus/machine-id): 32 lowercase
// hex digits, what OpenTelemetry's host.id is on Linux; "" when neither
// file holds one.
func MachineID() string {
	for _, path := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if id := strings.TrimSpace(string(b)); isMachineID(id) {
			return id
		}
	}
	return ""
}

func isMachineID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

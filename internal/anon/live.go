package anon

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// FillLive fills in what only a running process can tell: its owner, where
// its files are (its root, which differs in a container) and its pid in
// its own namespace. procRoot is normally "/proc". It reports false, and
// changes nothing, when the process is gone or its pid now runs another
// program (a Comm that does not match).
func (p *Process) FillLive(procRoot string) bool {
	dir := procRoot + "/" + strconv.Itoa(p.PID)
	comm, err := os.ReadFile(dir + "/comm")
	if err != nil || p.Comm != "" && strings.TrimSpace(string(comm)) != p.Comm {
		return false
	}
	if st, err := os.Stat(dir); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			p.UID = int(sys.Uid)
		}
	}
	p.Root = dir + "/root"
	if status, err := os.ReadFile(dir + "/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "NSpid:" {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
					p.NSPID = n
				}
			}
		}
	}
	return true
}

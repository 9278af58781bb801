package anon

import (
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// FillLive fills in what only a running process can tell: where its files
// are (its root, which differs in a container or another mount namespace),
// its pid in its own namespace and, when the recording did not say, its
// user. procRoot is normally "/proc". It reports false, and changes
// nothing, when the process is gone or its pid now belongs to another
// process: another start time than p.StartTime or, when that is unknown,
// another command name than p.Comm.
func (p *Process) FillLive(procRoot string) bool {
	id, err := linux.ReadIdentity(procRoot, p.PID)
	if err != nil {
		return false
	}
	dir := procRoot + "/" + strconv.Itoa(p.PID)
	if p.StartTime != 0 {
		if id.StartTime != p.StartTime {
			return false
		}
	} else if p.Comm != "" {
		comm, err := linux.ReadComm(procRoot, p.PID)
		if err != nil || strings.TrimSpace(comm) != p.Comm {
			return false
		}
	}
	// The uid the recorder saw wins: a process started through su was
	// root when it was forked and its user's when its JIT wrote.
	if p.UID == trust.UnknownOwner {
		p.UID, p.GID = id.UID, id.GID
	}
	p.StartTime = id.StartTime
	p.NSPID = id.NSPID
	p.Root = dir + "/root"
	return true
}

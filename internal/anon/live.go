package anon

import (
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// FillLive fills in what only a running process can tell: where its files
// are (its root, which differs in a container or another mount namespace),
// its pid in its own namespace and, when the recording did not say, its
// user, from proc (linux.Host, or a copy in tests). It reports false, and changes
// nothing, when the process is gone or its pid now belongs to another
// process: another start time than p.StartTime or, when that is unknown,
// another command name than p.Comm.
func (p *Process) FillLive(proc linux.Proc) bool {
	id, err := proc.Identity(p.PID)
	if err != nil {
		return false
	}
	if p.StartTime != 0 {
		if id.StartTime != p.StartTime {
			return false
		}
	} else if p.Comm != "" {
		comm, err := proc.Comm(p.PID)
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
	p.Root = proc.RootDir(p.PID)
	return true
}

package pathtime

import "github.com/jitprof/jitprof/jitlog"

// Region describes a region named by a jitlog code load.
type Region struct {
	Seq  uint64 // the jitlog sequence number: the generation of the code
	Name string
	Addr uint64
	Size uint64
}

// FromJitlog turns one record of a jitlog database, read in log order,
// into an event when it is an enter or an exit, and keeps the region a
// code load names in regions, by sequence number. Regions are jitlog
// generations: code re-generated under the same name is a new region.
// One record at a time, so that a database of any size can be streamed.
func FromJitlog(rec jitlog.Record, regions map[uint64]Region) (Event, bool) {
	switch v := rec.(type) {
	case *jitlog.LoadRecord:
		regions[v.Seq] = Region{Seq: v.Seq, Name: v.Name, Addr: v.Addr, Size: v.Size}
	case *jitlog.EnterRecord:
		return Event{Time: v.Time, Thread: uint64(v.TID), Region: v.Seq}, true
	case *jitlog.ExitRecord:
		return Event{Time: v.Time, Thread: uint64(v.TID), Exit: true}, true
	}
	return Event{}, false
}

package pathtime

import "github.com/jitprof/jitprof/jitlog"

// Region describes a region named by a jitlog code load.
type Region struct {
	Seq  uint64
	Name string
	Addr uint64
	Size uint64
}

// FromJitlog turns a jitlog database's records into events, in log order,
// and the regions they name, by sequence number. Regions are jitlog
// generations: code re-generated under the same name is a new region.
func FromJitlog(recs []jitlog.Record) ([]Event, map[uint64]Region) {
	var events []Event
	regions := map[uint64]Region{}
	for _, r := range recs {
		switch v := r.(type) {
		case *jitlog.LoadRecord:
			regions[v.Seq] = Region{Seq: v.Seq, Name: v.Name, Addr: v.Addr, Size: v.Size}
		case *jitlog.EnterRecord:
			events = append(events, Event{Time: v.Time, Thread: uint64(v.TID), Region: v.Seq})
		case *jitlog.ExitRecord:
			events = append(events, Event{Time: v.Time, Thread: uint64(v.TID), Exit: true})
		}
	}
	return events, regions
}

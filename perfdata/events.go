package perfdata

import "fmt"

// genericEvents are perf's names of the generic software and hardware
// events (tools/perf/util/evsel.c's evsel__sw_names and evsel__hw_names,
// with the aliases parse-events takes): the first name of each is the
// one perf prints.
var genericEvents = [...]struct {
	typ    uint32
	config uint64
	names  []string
}{
	{TypeSoftware, 0, []string{"cpu-clock"}},
	{TypeSoftware, 1, []string{"task-clock"}},
	{TypeSoftware, 2, []string{"page-faults", "faults"}},
	{TypeSoftware, 3, []string{"context-switches", "cs"}},
	{TypeSoftware, 4, []string{"cpu-migrations", "migrations"}},
	{TypeSoftware, 5, []string{"minor-faults"}},
	{TypeSoftware, 6, []string{"major-faults"}},
	{TypeSoftware, 7, []string{"alignment-faults"}},
	{TypeSoftware, 8, []string{"emulation-faults"}},
	{TypeSoftware, 9, []string{"dummy"}},
	{TypeHardware, 0, []string{"cycles", "cpu-cycles"}},
	{TypeHardware, 1, []string{"instructions"}},
	{TypeHardware, 2, []string{"cache-references"}},
	{TypeHardware, 3, []string{"cache-misses"}},
	{TypeHardware, 4, []string{"branches", "branch-instructions"}},
	{TypeHardware, 5, []string{"branch-misses"}},
	{TypeHardware, 6, []string{"bus-cycles"}},
	{TypeHardware, 7, []string{"stalled-cycles-frontend"}},
	{TypeHardware, 8, []string{"stalled-cycles-backend"}},
	{TypeHardware, 9, []string{"ref-cycles"}},
}

// LookupEvent returns the type and config of the generic event perf
// calls name (perf record -e NAME).
func LookupEvent(name string) (typ uint32, config uint64, ok bool) {
	for _, e := range genericEvents {
		for _, n := range e.names {
			if n == name {
				return e.typ, e.config, true
			}
		}
	}
	return 0, 0, false
}

// EventName is the name of an attr's event: the one the file gives it,
// else perf's for a generic event, else "event:TYPE:CONFIG".
func EventName(a *Attr) string {
	if a.Name != "" {
		return a.Name
	}
	for _, e := range genericEvents {
		if e.typ == a.Type && e.config == a.Config {
			return e.names[0]
		}
	}
	return fmt.Sprintf("event:%d:%#x", a.Type, a.Config)
}

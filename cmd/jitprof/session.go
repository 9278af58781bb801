package main

import (
	"errors"
	"fmt"

	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/report"
)

// sessionGraph checks the options of report --session -g: a session
// keeps caller-callee arcs, not stacks, so its call graph is OProfile's
// (callers and callees of each function) in text or JSON. The other
// formats need whole stacks, which arcs cannot be joined into without
// inventing them; rows are functions, so sort keys and perf's filters
// (which the profile specification's tgid:, tid:, cpu: and image: do
// for sessions) do not apply.
func sessionGraph(f driver.Format, view driver.View, filter report.Filter) error {
	switch {
	case f != driver.Text && f != driver.JSON:
		return fmt.Errorf("--session -g: a session's call graph is caller-callee arcs, written as text or json, not %s (which needs whole stacks: record them with jitprof record -g)", f)
	case len(view.SortKeys) > 0 || view.Separate != "" || view.Merge != "":
		return errors.New("--session -g: the call graph is by function: --sort, --separate and --merge do not apply (select with the profile specification: tgid:, tid:, cpu:, image:)")
	case len(filter.Comms)+len(filter.PIDs)+len(filter.TIDs)+len(filter.DSOs)+len(filter.CPUs) > 0:
		return errors.New("--session -g: select samples with the profile specification (tgid:, tid:, cpu:, image:), not perf's filters")
	}
	return nil
}

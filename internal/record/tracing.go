package record

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/perfdata"
)

// tracingData reads from tracefs what perf needs to decode a
// tracepoint's samples, the TRACING_DATA feature, as perf record writes
// it: the ring buffer's headers, the tracepoint's format and the printk
// formats. It returns nil for other events.
func tracingData(ev perfevent.Event) (*perfdata.TracingData, error) {
	dir := ev.TracepointDir // ROOT/events/SUBSYS/NAME
	if dir == "" {
		return nil, nil
	}
	events := filepath.Dir(filepath.Dir(dir))
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s: its format is needed in the file: %w", ev.Name, err)
		}
		return b, nil
	}
	td := &perfdata.TracingData{
		Version:   "0.6",
		BigEndian: binary.NativeEndian.Uint16([]byte{0, 1}) == 1,
		LongSize:  uint8(unsafe.Sizeof(uintptr(0))),
		PageSize:  uint32(os.Getpagesize()),
	}
	var err error
	if td.HeaderPage, err = read(filepath.Join(events, "header_page")); err != nil {
		return nil, err
	}
	if td.HeaderEvent, err = read(filepath.Join(events, "header_event")); err != nil {
		return nil, err
	}
	format, err := read(filepath.Join(dir, "format"))
	if err != nil {
		return nil, err
	}
	if subsys := filepath.Base(filepath.Dir(dir)); subsys == "ftrace" {
		td.Ftrace = [][]byte{format}
	} else {
		td.Systems = []perfdata.TraceSystem{{Name: subsys, Formats: [][]byte{format}}}
	}
	// Only %s arguments of trace_printk need these; perf reads on
	// without them, and so may a report.
	td.Printk, _ = os.ReadFile(filepath.Join(filepath.Dir(events), "printk_formats"))
	return td, nil
}

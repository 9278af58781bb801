package dump

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/perfdata"
)

// Options select what Write prints.
type Options struct {
	// Stats prints only the record counts and lost-sample totals.
	Stats bool
	// HeaderOnly prints the header, attrs and features but no records.
	HeaderOnly bool
}

// Stats are the record counts of a file.
type Stats struct {
	Counts      map[perfdata.RecordType]uint64
	Total       uint64
	LostEvents  uint64 // sum of LOST records' counts: samples the ring dropped
	LostSamples uint64 // sum of LOST_SAMPLES records' counts
}

// Write prints f to w. It reads f's records, so f can be read only once
// in pipe mode.
func Write(w io.Writer, f *perfdata.File, opts Options) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	defer bw.Flush()
	if opts.Stats {
		st, err := Count(f)
		if err != nil {
			return err
		}
		writeStats(bw, st, f)
		return nil
	}
	writeHeader(bw, f)
	if opts.HeaderOnly {
		return nil
	}
	// perf counts the offsets of pipe-mode data from the end of its
	// header, also in a file.
	var base int64
	if f.PipeLayout {
		base = f.DataOffset
	}
	r := f.Records()
	for r.Next() {
		writeRecord(bw, r.Record(), r.Size(), base)
	}
	if err := r.Err(); err != nil {
		bw.Flush()
		return err
	}
	if f.Pipe {
		// Pipe-mode features arrive with the records.
		writeFeatures(bw, f)
	}
	for _, w := range f.Warnings() {
		fmt.Fprintf(bw, "# warning: %s\n", termtext.Escape(w))
	}
	return nil
}

// Count reads every record of f and counts them.
func Count(f *perfdata.File) (*Stats, error) {
	st := &Stats{Counts: map[perfdata.RecordType]uint64{}}
	r := f.Records()
	for r.Next() {
		rec := r.Record()
		st.Counts[rec.Type()]++
		st.Total++
		switch v := rec.(type) {
		case *perfdata.Lost:
			st.LostEvents += v.Lost
		case *perfdata.LostSamples:
			st.LostSamples += v.Lost
		}
	}
	return st, r.Err()
}

func writeStats(w io.Writer, st *Stats, f *perfdata.File) {
	types := make([]perfdata.RecordType, 0, len(st.Counts))
	for t := range st.Counts {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	fmt.Fprintf(w, "Aggregated stats:\n%20s events: %10d\n", "TOTAL", st.Total)
	for _, t := range types {
		fmt.Fprintf(w, "%20s events: %10d  (%4.1f%%)\n", t, st.Counts[t], 100*float64(st.Counts[t])/float64(max(st.Total, 1)))
	}
	fmt.Fprintf(w, "lost samples: %d in LOST records, %d in LOST_SAMPLES records\n", st.LostEvents, st.LostSamples)
	for _, m := range f.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", termtext.Escape(m))
	}
}

func writeHeader(w io.Writer, f *perfdata.File) {
	order := "little-endian"
	if f.Swapped {
		order = "big-endian (byte-swapped)"
	}
	switch {
	case f.Pipe:
		fmt.Fprintf(w, "# pipe-mode stream, %s\n", order)
	case f.PipeLayout:
		fmt.Fprintf(w, "# pipe-mode data in a file, %s, %#x bytes of records after its header\n", order, f.DataSize)
	default:
		fmt.Fprintf(w, "# perf.data PERFILE2, %s, data at %#x size %#x\n", order, f.DataOffset, f.DataSize)
	}
	for i, a := range f.Attrs {
		writeAttr(w, i, a)
	}
	if !f.Pipe {
		writeFeatures(w, f)
	}
}

func writeAttr(w io.Writer, i int, a *perfdata.Attr) {
	period := "sample_period"
	if a.Freq() {
		period = "sample_freq"
	}
	fmt.Fprintf(w, "# attr %d: name %q type %d config %#x size %d %s %d\n", i, a.Name, a.Type, a.Config, a.Size, period, a.SamplePeriod)
	fmt.Fprintf(w, "#   sample_type %v read_format %v\n", a.SampleType, a.ReadFormat)
	fmt.Fprintf(w, "#   flags %v precise_ip %d clockid %d sample_max_stack %d\n", a.Flags, a.PreciseIP(), a.ClockID, a.SampleMaxStack)
	fmt.Fprintf(w, "#   ids %v\n", a.IDs)
}

func writeFeatures(w io.Writer, f *perfdata.File) {
	fs := &f.Features
	for _, feat := range fs.List() {
		fmt.Fprintf(w, "# feature %v: %s\n", feat, describeFeature(fs, feat))
	}
	if len(f.EventTypes) > 0 {
		fmt.Fprintf(w, "# event_types: %d bytes\n", len(f.EventTypes))
	}
	b, err := jitbundle.Load(f)
	switch {
	case err != nil:
		fmt.Fprintf(w, "# jitprof JIT data: unreadable: %s\n", termtext.Escape(err.Error()))
	case b != nil:
		fmt.Fprintf(w, "# jitprof JIT data: %d processes, %d files\n", len(b.Processes), len(b.Files))
		for _, p := range b.Processes {
			fmt.Fprintf(w, "#   process %d: nspid %d uid %d gid %d start %d\n", p.PID, p.NSPID, p.UID, p.GID, p.StartTime)
		}
		for _, e := range b.Files {
			fmt.Fprintf(w, "#   file of %d: %s %s, %d bytes\n", e.PID, termtext.Escape(e.Kind), termtext.Escape(e.Path), len(e.Data))
		}
	}
}

// describeFeature is table-driven by feature bit; features without a
// typed reader show their size.
func describeFeature(fs *perfdata.Features, feat perfdata.Feature) string {
	raw, _ := fs.Raw(feat)
	errOr := func(s string, err error) string {
		if err != nil {
			return "unreadable: " + termtext.Escape(err.Error())
		}
		return s
	}
	switch feat {
	case perfdata.FeatHostname, perfdata.FeatOSRelease, perfdata.FeatVersion, perfdata.FeatArch, perfdata.FeatCPUDesc, perfdata.FeatCPUID:
		s, err := fs.String(feat)
		return errOr(termtext.Escape(s), err)
	case perfdata.FeatNrCPUs:
		a, o, err := fs.NrCPUs()
		return errOr(fmt.Sprintf("%d available, %d online", a, o), err)
	case perfdata.FeatTotalMem:
		v, err := fs.TotalMem()
		return errOr(fmt.Sprintf("%d kB", v), err)
	case perfdata.FeatCmdline:
		l, err := fs.Cmdline()
		return errOr(termtext.Escape(strings.Join(l, " ")), err)
	case perfdata.FeatClockID:
		v, err := fs.ClockResolution()
		return errOr(fmt.Sprintf("clock resolution %d ns", v), err)
	case perfdata.FeatClockData:
		c, err := fs.ClockData()
		return errOr(fmt.Sprintf("clockid %d: wall %d ns = clock %d ns", c.ClockID, c.WallNS, c.ClockNS), err)
	case perfdata.FeatSampleTime:
		a, b, err := fs.SampleTime()
		return errOr(fmt.Sprintf("first %d last %d", a, b), err)
	case perfdata.FeatBuildID:
		l, err := fs.BuildIDs()
		var sb strings.Builder
		for _, b := range l {
			fmt.Fprintf(&sb, "\n#   %x pid %d %s", b.ID, b.PID, termtext.Escape(b.Filename))
		}
		return errOr(fmt.Sprintf("%d images%s", len(l), sb.String()), err)
	case perfdata.FeatEventDesc:
		l, err := fs.EventDescs()
		var names []string
		for _, d := range l {
			names = append(names, fmt.Sprintf("%s ids %v", termtext.Escape(d.Name), d.IDs))
		}
		return errOr(strings.Join(names, "; "), err)
	case perfdata.FeatCPUTopology:
		t, err := fs.CPUTopology()
		if err != nil {
			return errOr("", err)
		}
		return fmt.Sprintf("cores %v threads %v", t.CoreSiblings, t.ThreadSiblings)
	}
	return fmt.Sprintf("%d bytes", len(raw))
}

var modes = []string{"unknown", "kernel", "user", "hypervisor", "guest-kernel", "guest-user", "mode6", "mode7"}

func writeRecord(w io.Writer, rec perfdata.Record, size int, base int64) {
	c := rec.Base()
	fmt.Fprintf(w, "%#x [%#x]: %v", c.Offset-base, size, rec.Type())
	if c.Has(perfdata.SampleTime) {
		fmt.Fprintf(w, " time %d", c.Time)
	}
	if c.Has(perfdata.SampleCPU) {
		fmt.Fprintf(w, " cpu %d", c.CPU)
	}
	switch v := rec.(type) {
	case *perfdata.Sample:
		fmt.Fprintf(w, " %s pid %d/%d ip %#x period %d", modes[v.CPUMode()], v.PID, v.TID, v.IP, v.Period)
		if v.Has(perfdata.SampleAddr) {
			fmt.Fprintf(w, " addr %#x", v.Addr)
		}
		if v.Has(perfdata.SampleID) || v.Has(perfdata.SampleIdentifier) {
			fmt.Fprintf(w, " id %d", v.ID)
		}
		fmt.Fprintln(w)
		if v.Has(perfdata.SampleCallchain) {
			fmt.Fprintf(w, "  callchain nr %d\n", len(v.Callchain))
			for i, ip := range v.Callchain {
				fmt.Fprintf(w, "    %2d: %016x%s\n", i, ip, contextName(ip))
			}
		}
		if len(v.Raw) > 0 {
			fmt.Fprintf(w, "  raw %d bytes\n", len(v.Raw))
		}
		for i, b := range v.Branches {
			fmt.Fprintf(w, "  branch %d: %#x -> %#x flags %#x\n", i, b.From, b.To, b.Flags)
		}
		return
	case *perfdata.HeaderAttr:
		fmt.Fprintf(w, " type %d config %#x sample_type %v ids %v", v.EventAttr.Type, v.EventAttr.Config, v.EventAttr.SampleType, v.EventAttr.IDs)
	case *perfdata.HeaderBuildID:
		fmt.Fprintf(w, " %x pid %d %s", v.BuildID.ID, v.BuildID.PID, termtext.Escape(v.BuildID.Filename))
	case *perfdata.IDIndex:
		fmt.Fprintf(w, " nr %d", len(v.Entries))
		for _, e := range v.Entries {
			fmt.Fprintf(w, "\n  id %d idx %d cpu %d tid %d", e.ID, e.Idx, int64(e.CPU), int64(e.TID))
		}
	case *perfdata.TimeConv:
		fmt.Fprintf(w, " shift %d mult %d zero %d", v.TimeShift, v.TimeMult, v.TimeZero)
	case *perfdata.HeaderFeature:
		fmt.Fprintf(w, " %v %d bytes", v.Feature, len(v.Data))
	case *perfdata.Unknown:
		fmt.Fprintf(w, " %d bytes", len(v.Data))
		if len(v.Payload) > 0 {
			fmt.Fprintf(w, " + %d bytes of payload", len(v.Payload))
		}
	default:
		// The kernel's records, shown by their layouts.
		if b, ok := perfdata.AppendFields(nil, rec, termtext.Escape); ok {
			w.Write(b)
		}
	}
	fmt.Fprintln(w)
}

func contextName(ip uint64) string {
	switch ip {
	case perfdata.CallchainHV:
		return " (context: hypervisor)"
	case perfdata.CallchainKernel:
		return " (context: kernel)"
	case perfdata.CallchainUser:
		return " (context: user)"
	case perfdata.CallchainGuest:
		return " (context: guest)"
	case perfdata.CallchainGuestKernel:
		return " (context: guest kernel)"
	case perfdata.CallchainGuestUser:
		return " (context: guest user)"
	}
	return ""
}

package perfdata_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestFeaturesRoundTrip sets every typed feature, writes, reads them back,
// and checks perf report --header-only shows them.
func TestFeaturesRoundTrip(t *testing.T) {
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 4000, Flags: perfdata.FlagFreq | perfdata.FlagSampleIDAll,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod, IDs: []uint64{3, 4}}
	strs := map[perfdata.Feature]string{
		perfdata.FeatHostname: "testhost", perfdata.FeatOSRelease: "6.99.0-test", perfdata.FeatVersion: "jitprof-test",
		perfdata.FeatArch: "x86_64", perfdata.FeatCPUDesc: "Test CPU @ 1GHz", perfdata.FeatCPUID: "GenuineIntel,6,1,1",
	}
	topo := &perfdata.CPUTopology{CoreSiblings: []string{"0-3"}, ThreadSiblings: []string{"0-1", "2-3"},
		CoreID: []uint32{0, 0, 1, 1}, SocketID: []uint32{0, 0, 0, 0}, DieSiblings: []string{"0-3"}, DieID: []uint32{0, 0, 0, 0}}
	clock := perfdata.ClockData{Version: 1, ClockID: 1, WallNS: 1700000000000000000, ClockNS: 5000}
	ids := []perfdata.BuildID{
		{Misc: perfdata.MiscUser, PID: -1, ID: []byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, Filename: "/usr/bin/true"},
		{Misc: perfdata.MiscKernel | perfdata.MiscBuildIDSize, PID: -1, ID: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Filename: "[kernel.kallsyms]"},
	}
	path := perftest.WriteData(t, []*perfdata.Attr{a}, nil, func(fs *perfdata.Features) {
		for feat, s := range strs {
			fs.SetString(feat, s)
		}
		fs.SetNrCPUs(4, 2)
		fs.SetTotalMem(123456)
		fs.SetCmdline([]string{"jitprof", "record", "--", "a b"})
		fs.SetEventDescs([]perfdata.EventDesc{{Attr: *a, Name: "cpu-clock", IDs: a.IDs}})
		fs.SetCPUTopology(topo)
		fs.SetClockResolution(1)
		fs.SetClockData(clock)
		fs.SetSampleTime(100, 200)
		fs.SetBuildIDs(ids)
	})

	pf, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	g := &pf.Features
	for feat, want := range strs {
		if got, err := g.String(feat); err != nil || got != want {
			t.Errorf("%v: %q, %v; want %q", feat, got, err, want)
		}
	}
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	av, on, err := g.NrCPUs()
	check("NRCPUS", [2]uint32{av, on}, [2]uint32{4, 2}, err)
	mem, err := g.TotalMem()
	check("TOTAL_MEM", mem, uint64(123456), err)
	cmd, err := g.Cmdline()
	check("CMDLINE", cmd, []string{"jitprof", "record", "--", "a b"}, err)
	descs, err := g.EventDescs()
	if err == nil && len(descs) == 1 {
		check("EVENT_DESC", []any{descs[0].Name, descs[0].IDs, descs[0].Attr.SampleType}, []any{"cpu-clock", a.IDs, a.SampleType}, nil)
	} else {
		t.Errorf("EVENT_DESC: %v, %v", descs, err)
	}
	gotTopo, err := g.CPUTopology()
	check("CPU_TOPOLOGY", gotTopo, topo, err)
	res, err := g.ClockResolution()
	check("CLOCKID", res, uint64(1), err)
	cd, err := g.ClockData()
	check("CLOCK_DATA", cd, clock, err)
	first, last, err := g.SampleTime()
	check("SAMPLE_TIME", [2]uint64{first, last}, [2]uint64{100, 200}, err)
	bids, err := g.BuildIDs()
	check("BUILD_ID", bids, ids, err)
	if pf.Attrs[0].Name != "cpu-clock" {
		t.Errorf("attr name %q from EVENT_DESC, want cpu-clock", pf.Attrs[0].Name)
	}

	hdr := perftest.Run(t, perftest.Perf(t), "report", "--header-only", "--force", "-i", path)
	for _, want := range []string{"hostname : testhost", "os release : 6.99.0-test", "arch : x86_64", "nrcpus online : 2", "nrcpus avail : 4",
		"cpudesc : Test CPU @ 1GHz", "total memory : 123456 kB", "cmdline : jitprof record -- a b", "event : name = cpu-clock", "sample duration :"} {
		if !strings.Contains(hdr, want) {
			t.Errorf("perf report --header-only lacks %q:\n%s", want, hdr)
		}
	}
	bl := perftest.Run(t, perftest.Perf(t), "buildid-list", "--force", "-i", path)
	if !strings.Contains(bl, "aabbccddeeff000102030405060708090a0b0c0d /usr/bin/true") {
		t.Errorf("perf buildid-list:\n%s", bl)
	}
}

func TestTracingDataRoundTrip(t *testing.T) {
	for _, c := range []struct {
		version string
		big     bool
	}{{"0.6", false}, {"0.6", true}, {"0.5", false}} {
		td := &perfdata.TracingData{
			Version: c.version, BigEndian: c.big, LongSize: 8, PageSize: 4096,
			HeaderPage: []byte("\tfield: u64 timestamp;\n"), HeaderEvent: []byte("# compressed entry header\n"),
			Ftrace: [][]byte{[]byte("name: function\n")},
			Systems: []perfdata.TraceSystem{
				{Name: "sched", Formats: [][]byte{[]byte("name: sched_switch\n"), []byte("name: sched_wakeup\n")}},
				{Name: "irq", Formats: [][]byte{[]byte("name: irq_handler_entry\n")}},
			},
			Printk: []byte("0xffffffff81000000 : \"hello\"\n"),
		}
		if c.version == "0.6" {
			td.SavedCmdline = []byte("1 init\n")
		}
		var fs perfdata.Features
		fs.SetTracingData(td)
		got, err := fs.TracingData()
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !reflect.DeepEqual(got, td) {
			t.Errorf("%+v: read back\n%+v\nwant\n%+v", c, got, td)
		}
		raw, _ := fs.Raw(perfdata.FeatTracingData)
		for n := range len(raw) {
			fs.SetRaw(perfdata.FeatTracingData, raw[:n])
			if _, err := fs.TracingData(); err == nil {
				t.Errorf("%+v: cut to %d of %d bytes, it parses", c, n, len(raw))
				break
			}
		}
	}
}

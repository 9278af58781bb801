package perfdata_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// fullAttr has every sample_type bit the kernel can emit, so the round
// trip covers every field of a SAMPLE and of the sample_id trailer.
func fullAttr() *perfdata.Attr {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIdentifier | perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime |
			perfdata.SampleAddr | perfdata.SampleRead | perfdata.SampleCallchain | perfdata.SampleID |
			perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleStreamID | perfdata.SampleRaw |
			perfdata.SampleBranchStack | perfdata.SampleRegsUser | perfdata.SampleStackUser |
			perfdata.SampleWeightStruct | perfdata.SampleDataSrc | perfdata.SampleTransaction |
			perfdata.SampleRegsIntr | perfdata.SamplePhysAddr | perfdata.SampleAux | perfdata.SampleCgroup |
			perfdata.SampleDataPageSize | perfdata.SampleCodePageSize,
		ReadFormat:       perfdata.ReadGroup | perfdata.ReadID | perfdata.ReadLost | perfdata.ReadTotalTimeEnabled | perfdata.ReadTotalTimeRunning,
		Flags:            perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagComm | perfdata.FlagTask,
		BranchSampleType: perfdata.BranchSampleHWIndex,
		SampleRegsUser:   0b1011,
		SampleRegsIntr:   0b11,
		SampleStackUser:  64,
		IDs:              []uint64{77},
	}
	return a
}

func allRecords(a *perfdata.Attr) []perfdata.Record {
	c := func(misc uint16) perfdata.Common {
		return perfdata.Common{Misc: misc, Attr: a, PID: 5, TID: 6, Time: 1234, ID: 77, StreamID: 78, CPU: 1}
	}
	u := func() perfdata.Common { return perfdata.Common{} }
	return []perfdata.Record{
		&perfdata.Sample{Common: c(perfdata.MiscUser | perfdata.MiscExactIP), IP: 0x401000, Addr: 0xdead, Period: 999,
			Read:      perfdata.ReadValues{TimeEnabled: 10, TimeRunning: 9, Values: []perfdata.ReadValue{{Value: 1, ID: 77, Lost: 0}, {Value: 2, ID: 79, Lost: 3}}},
			Callchain: []uint64{perfdata.CallchainUser, 0x401000, 0x402000}, Raw: []byte{1, 2, 3, 4, 5},
			BranchHWIdx: 3, Branches: []perfdata.Branch{{From: 1, To: 2, Flags: 3}, {From: 4, To: 5, Flags: 6}},
			RegsUserABI: 2, RegsUser: []uint64{1, 2, 3}, StackUser: bytes.Repeat([]byte{7}, 64), StackDyn: 40,
			Weight: 0x0001000200000003, DataSrc: 0x55, Transaction: 0x66, RegsIntrABI: 2, RegsIntr: []uint64{8, 9},
			PhysAddr: 0x1000, Cgroup: 42, DataPage: 4096, CodePage: 4096, Aux: []byte{9, 9, 9, 9, 9, 9, 9, 9}},
		&perfdata.Mmap{Common: c(perfdata.MiscUser), PID: 5, TID: 5, Addr: 0x400000, Len: 0x1000, Pgoff: 0, Filename: "/bin/true"},
		&perfdata.Mmap{Common: c(perfdata.MiscUser), Version2: true, PID: 5, TID: 5, Addr: 0x400000, Len: 0x1000, Pgoff: 0x1000, Maj: 8, Min: 1, Ino: 1234, InoGeneration: 5, Prot: 5, Flags: 2, Filename: "/usr/lib/libfoo.so"},
		&perfdata.Mmap{Common: c(perfdata.MiscUser | perfdata.MiscMmapBuildID), Version2: true, PID: 5, TID: 5, Addr: 0x7f0000, Len: 0x2000, BuildID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, Prot: 5, Flags: 2, Filename: "/usr/lib/libbar.so"},
		&perfdata.Comm{Common: c(perfdata.MiscCommExec), PID: 5, TID: 5, Comm: "exec'd"},
		&perfdata.Fork{Common: c(0), PID: 5, PPID: 1, TID: 6, PTID: 1, ForkTime: 100},
		&perfdata.Exit{Common: c(0), PID: 5, PPID: 1, TID: 6, PTID: 1, ExitTime: 200},
		&perfdata.Lost{Common: c(0), LostID: 77, Lost: 12},
		&perfdata.LostSamples{Common: c(0), Lost: 7},
		&perfdata.Throttle{Common: c(0), ThrottleTime: 1, ThrottleID: 77, ThrottleStrID: 78},
		&perfdata.Throttle{Common: c(0), Unthrottle: true, ThrottleTime: 2, ThrottleID: 77, ThrottleStrID: 78},
		&perfdata.Switch{Common: c(perfdata.MiscSwitchOut)},
		&perfdata.Switch{Common: c(0), CPUWide: true, NextPrevPID: 9, NextPrevTID: 10},
		&perfdata.Ksymbol{Common: c(0), Addr: 0xffffffffc0000000, Len: 100, KsymType: 1, Name: "bpf_prog_x"},
		&perfdata.BPFEvent{Common: c(0), BPFType: 1, BPFID: 3, Tag: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		&perfdata.Cgroup{Common: c(0), CgroupID: 42, Path: "/sys/fs/cgroup/x"},
		&perfdata.Namespaces{Common: c(0), PID: 5, TID: 5, Namespaces: []perfdata.NamespaceLink{{Dev: 1, Ino: 2}, {Dev: 3, Ino: 4}}},
		&perfdata.TextPoke{Common: c(0), Addr: 0xffffffff81000000, Old: []byte{0x90, 0x90}, New: []byte{0xcc, 0xcc, 0xcc}},
		&perfdata.Read{Common: c(0), PID: 5, TID: 6, Values: perfdata.ReadValues{TimeEnabled: 1, TimeRunning: 1, Values: []perfdata.ReadValue{{Value: 5, ID: 77}}}},
		&perfdata.Aux{Common: c(0), AuxOffset: 1, AuxSize: 2, AuxFlags: 3},
		&perfdata.ItraceStart{Common: c(0), PID: 5, TID: 6},
		&perfdata.AuxOutputHWID{Common: c(0), HWID: 4},
		&perfdata.HeaderBuildID{Common: perfdata.Common{Misc: perfdata.MiscUser | perfdata.MiscBuildIDSize}, BuildID: perfdata.BuildID{Misc: perfdata.MiscUser | perfdata.MiscBuildIDSize, PID: -1, ID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Filename: "/usr/bin/x"}},
		&perfdata.FinishedRound{},
		&perfdata.IDIndex{Entries: []perfdata.IDIndexEntry{{ID: 77, Idx: 0, CPU: 1, TID: 6}}},
		&perfdata.TimeConv{TimeShift: 10, TimeMult: 20, TimeZero: 30, Ext: true, TimeCycles: 40, TimeMask: 50, CapUserTimeZero: true},
		&perfdata.FinishedInit{},
		&perfdata.Unknown{Common: u(), RecType: perfdata.RecordStatRound, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}
}

// TestRoundTripEveryRecord writes every record type the package knows,
// with every sample field, reads them back and compares field by field.
func TestRoundTripEveryRecord(t *testing.T) {
	a := fullAttr()
	recs := allRecords(a)
	pf := perftest.OpenData(t, []*perfdata.Attr{a}, recs)
	rd := pf.Records()
	for i := 0; rd.Next(); i++ {
		got := rd.Record()
		want := recs[i]
		if got.Type() != want.Type() {
			t.Fatalf("record %d: %v, want %v", i, got.Type(), want.Type())
		}
		// Offsets and attrs are filled by the reader; the rest must match.
		got.Base().Offset = 0
		if want.Type().IsUser() {
			got.Base().Attr = nil
		} else {
			got.Base().Attr = a
			want.Base().Attr = a
		}
		if normalize(got) != normalize(want) || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("record %d (%v):\n got %+v\nwant %+v", i, got.Type(), got, want)
		}
	}
	if rd.Err() != nil {
		t.Fatal(rd.Err())
	}
}

// normalize is the record's encoding, which must also round-trip.
func normalize(r perfdata.Record) string {
	b, _ := perfdata.AppendRecord(nil, r)
	return string(b)
}

// TestPerfCountsEveryRecord writes the kernel and user records into one
// file and checks perf report --stats counts each as we wrote it.
func TestPerfCountsEveryRecord(t *testing.T) {
	perftest.Perf(t)
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleID | perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagComm | perfdata.FlagTask,
		IDs:        []uint64{77},
	}
	c := perfdata.Common{Attr: a, PID: 5, TID: 5, Time: 1000, ID: 77}
	recs := []perfdata.Record{
		&perfdata.Comm{Common: c, PID: 5, TID: 5, Comm: "x"},
		&perfdata.Mmap{Common: c, Version2: true, PID: 5, TID: 5, Addr: 0x400000, Len: 0x1000, Prot: 5, Flags: 2, Filename: "/bin/true"},
		&perfdata.Fork{Common: c, PID: 6, PPID: 5, TID: 6, PTID: 5},
		&perfdata.Sample{Common: c, IP: 0x400010, Period: 1000, Callchain: []uint64{perfdata.CallchainUser, 0x400010}},
		&perfdata.Lost{Common: c, LostID: 77, Lost: 3},
		&perfdata.LostSamples{Common: c, Lost: 4},
		&perfdata.Throttle{Common: c, ThrottleTime: 1000, ThrottleID: 77},
		&perfdata.Throttle{Common: c, Unthrottle: true, ThrottleTime: 1001, ThrottleID: 77},
		&perfdata.Switch{Common: c},
		&perfdata.Ksymbol{Common: c, Addr: 0xffffffffc0000000, Len: 16, KsymType: 1, Name: "bpf_prog_test"},
		&perfdata.Cgroup{Common: c, CgroupID: 1, Path: "/"},
		&perfdata.FinishedRound{},
		&perfdata.Exit{Common: c, PID: 6, PPID: 5, TID: 6, PTID: 5},
	}
	path := perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil)
	want := map[string]uint64{}
	for _, r := range recs {
		want[r.Type().String()]++
	}
	got := perftest.Stats(t, path)
	for name, n := range want {
		if got[name] != n {
			t.Errorf("perf counts %d %s records, we wrote %d (all: %v)", got[name], name, n, got)
		}
	}
}

// TestSkipCallchains: with SkipCallchains every other field of a sample
// still decodes, and the chain is empty.
func TestSkipCallchains(t *testing.T) {
	a := fullAttr()
	s := allRecords(a)[0].(*perfdata.Sample)
	pf := perftest.OpenData(t, []*perfdata.Attr{a}, []perfdata.Record{s})
	r := pf.Records()
	r.SkipCallchains = true
	if !r.Next() {
		t.Fatal(r.Err())
	}
	got := r.Record().(*perfdata.Sample)
	if len(got.Callchain) != 0 {
		t.Errorf("callchain %x with SkipCallchains", got.Callchain)
	}
	if got.IP != s.IP || got.Period != s.Period || string(got.Raw) != string(s.Raw) || got.Aux[0] != s.Aux[0] || got.CodePage != s.CodePage {
		t.Errorf("fields after the callchain differ: %+v", got)
	}
}

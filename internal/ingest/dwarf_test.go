package ingest

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// codeEHFrame is the .eh_frame a JIT logs after code of size bytes (at
// its first 8-byte boundary, the layout of jitdump's and jitlog's
// records): one FDE over the whole code, whose frame keeps nothing but
// the return address at the stack pointer (CFA rsp+8, return address
// at CFA-8), as a function that calls nothing.
func codeEHFrame(size uint64) []byte {
	le := binary.LittleEndian
	cie := []byte{0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1}
	for len(cie)%4 != 0 {
		cie = append(cie, 0)
	}
	b := le.AppendUint32(nil, uint32(len(cie)))
	b = append(b, cie...)
	start := len(b)
	body := le.AppendUint32(nil, uint32(start+4))
	at := (size+7)&^7 + uint64(start+8) // the pc_begin field's address
	body = le.AppendUint32(body, uint32(-int32(at)))
	body = le.AppendUint32(body, uint32(size))
	body = append(body, 0)
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	b = le.AppendUint32(b, uint32(len(body)))
	return le.AppendUint32(append(b, body...), 0)
}

// stackSample is a user sample of the test process at ip, with the
// registers and a copy of the stack perf's --call-graph dwarf gives: sp
// and the words of the stack from sp up.
func stackSample(ip, sp, time uint64, words ...uint64) *perfdata.Sample {
	s := sample(ip, time, false)
	s.Attr = &perfdata.Attr{SampleType: perfdata.SampleTime | perfdata.SampleRegsUser | perfdata.SampleStackUser, SampleRegsUser: 0xff0fff}
	s.RegsUserABI = 2
	s.RegsUser = make([]uint64, 20) // AX BX CX DX SI DI BP SP IP FLAGS CS SS R8-R15
	s.RegsUser[7], s.RegsUser[8] = sp, ip
	for _, w := range words {
		s.StackUser = binary.LittleEndian.AppendUint64(s.StackUser, w)
	}
	s.StackDyn = uint64(len(s.StackUser))
	s.StackUser = append(s.StackUser, make([]byte, 64)...) // the copy's size asked, past dyn_size
	return s
}

// arcsOf reads the {cg} files of the session in dir: each arc's ends
// (image -> image) and (caller offset, its sequence number, callee
// offset, its sequence number), with its count.
func arcsOf(t *testing.T, dir string) map[string]map[[4]uint64]uint64 {
	t.Helper()
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[[4]uint64]uint64{}
	for _, f := range sel.Files {
		if f.Key.Kind() != sampledb.KeyCallGraph {
			continue
		}
		r, err := sampledb.Open(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			from, seqFrom := sampledb.SplitArcEnd(f.Key.Dep, e.Key1)
			to, seqTo := sampledb.SplitArcEnd(f.Key.CG, e.Key2)
			k := f.Key.Dep.Name + " -> " + f.Key.CG.Name
			if got[k] == nil {
				got[k] = map[[4]uint64]uint64{}
			}
			got[k][[4]uint64{from, seqFrom, to, seqTo}] += e.Count
		}
		r.Close()
	}
	return got
}

// TestUnwindJIT: a sample's user stack is unwound as it is counted, the
// daemon's way (Keep, Round), into arcs: out of JIT code by the
// unwinding information its JIT logged for that generation (the app
// called it), and, for a generation without any and no plausible frame
// pointer, not at all, the chain counted as stopped in JIT code.
func TestUnwindJIT(t *testing.T) {
	in, db, dir := newTestIngest(t)
	in.CallGraph, in.Unwind = true, true
	code := &in.pid(testPID).jit.code
	code.tableLimit = maxJITTablesPerProcess
	code.setUnwind(code.bySeq[9], codeEHFrame(0x100))
	if code.bySeq[9].unwind == nil || code.tableBytes == 0 {
		t.Fatal("no table compiled from the unwinding record")
	}
	const sp = 0x7ffd0000
	ret := uint64(appStart + 0x500)                                  // after the app's call
	in.Keep(stackSample(jitStart+0x10, sp, 1500, ret, 0))            // gen 9: its table
	in.Keep(stackSample(jitStart+0x110, sp, 1500, ret, 0))           // gen 8: none
	in.Keep(stackSample(jitStart+0x10, sp, 1500, jitStart+0x150, 0)) // into gen 8, which stops
	in.Round(nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[[4]uint64]uint64{
		"/usr/bin/app -> jitlog": {{0x4ff + appPgoff, 0, 0x10, 9}: 1},
		"jitlog -> jitlog":       {{0x14f, 8, 0x10, 9}: 1},
	}
	if got := arcsOf(t, dir); !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("arcs %x, want %x", got, want)
	}
	st := in.UnwindStats()
	if st.Chains != 3 || st.Stops[unwind.StopJIT] != 2 {
		t.Errorf("unwound %+v; want 3 chains, 2 stopped in JIT code", st)
	}
	if m := db.Meta(); m.Unwound != 3 || m.JITStops != 2 {
		t.Errorf("session counts %d chains, %d stopped in JIT code; want 3, 2", m.Unwound, m.JITStops)
	}
}

// TestKeep: a kept sample's callchain, registers and stack are copies,
// the stack cut to the bytes the kernel copied, so the decoder may reuse
// its buffers; past maxKeptStacks of stacks a sample is unwound as it
// comes and only its chain kept.
func TestKeep(t *testing.T) {
	in, _, _ := newTestIngest(t)
	in.CallGraph, in.Unwind = true, true
	s := stackSample(appStart+0x10, 0x7ffd0000, 5, 1, 2)
	s.Callchain = []uint64{perfdata.CallchainKernel, kernelTop}
	want := *s
	want.Callchain, want.RegsUser, want.StackUser = slices.Clone(s.Callchain), slices.Clone(s.RegsUser), slices.Clone(s.StackUser[:s.StackDyn])
	in.Keep(s)
	for _, b := range [][]uint64{s.Callchain, s.RegsUser} {
		clear(b)
	}
	clear(s.StackUser)
	plain := sample(appStart+0x20, 6, false)
	in.Keep(plain)
	var got []perfdata.Sample
	in.keptSamples(func(k *perfdata.Sample) {
		c := *k
		c.Callchain, c.RegsUser, c.StackUser = slices.Clone(k.Callchain), slices.Clone(k.RegsUser), slices.Clone(k.StackUser)
		got = append(got, c)
	})
	if len(got) != 2 || !slices.Equal(got[0].Callchain, want.Callchain) || !slices.Equal(got[0].RegsUser, want.RegsUser) ||
		!bytes.Equal(got[0].StackUser, want.StackUser) || got[0].StackDyn != want.StackDyn || !unwind.HasStack(&got[0]) ||
		got[1].IP != plain.IP || unwind.HasStack(&got[1]) {
		t.Fatalf("kept %+v\nwant %+v and %+v", got, want, *plain)
	}
	if len(in.kept.samples)+len(in.kept.words)+len(in.kept.stacks) != 0 {
		t.Error("the arenas are not emptied")
	}

	big := stackSample(appStart+0x10, 0x7ffd0000, 5, make([]uint64, 64<<10/8)...)
	n := maxKeptStacks / len(big.StackUser[:big.StackDyn])
	for range n + 1 {
		in.Keep(big)
	}
	if in.UnwoundEarly != 1 || len(in.kept.stacks) > maxKeptStacks {
		t.Errorf("%d samples kept, %d unwound as they came, %d bytes of stacks; want 1 and at most %d", n+1, in.UnwoundEarly, len(in.kept.stacks), maxKeptStacks)
	}
	last := in.kept.samples[n]
	if chain := in.kept.words[last.chain:last.regs]; last.s.RegsUserABI != 0 || last.stackEnd != last.stack || !slices.Contains(chain, perfdata.CallchainUser) {
		t.Errorf("the sample past the bound kept %x, a stack %v: want its unwound chain and no stack", chain, last.stackEnd > last.stack)
	}
}

// TestCodeTableUnwind: a jitdump's unwinding record is the next load's,
// a move keeps it with the code, and the tables are bounded.
func TestCodeTableUnwind(t *testing.T) {
	var c codeTable
	eh := codeEHFrame(0x40)
	hdr := make([]byte, 20) // the .eh_frame_hdr after it, unread
	info := &jitdump.UnwindingInfo{EHFrameHdrSize: uint64(len(hdr)), Data: append(slices.Clone(eh), hdr...)}
	load := func(addr, seq uint64) *jitdump.CodeLoad {
		return &jitdump.CodeLoad{CodeAddr: addr, CodeSize: 0x40, CodeIndex: seq, RecordHeader: jitdump.RecordHeader{Timestamp: t0 + seq}}
	}
	// Without room for tables (no stacks to unwind) none is kept.
	c.jitdumpRecord(info)
	c.jitdumpRecord(load(0x1000, 1))
	if e := c.find(0x1010, t0+1); e == nil || e.unwind != nil {
		t.Fatalf("a table kept with no room for one: %+v", e)
	}
	c.tableLimit = 1 << 20
	c.jitdumpRecord(info)
	clear(info.Data) // the reader reuses its buffers
	c.jitdumpRecord(load(0x2000, 2))
	c.jitdumpRecord(load(0x3000, 3)) // no record of its own
	if e := c.find(0x2010, t0+2); e == nil || e.unwind == nil || e.unwind.NumRows() == 0 {
		t.Fatalf("gen 2 has no table: %+v", e)
	}
	if e := c.find(0x3010, t0+3); e.unwind != nil {
		t.Error("gen 3 has gen 2's table")
	}
	c.jitdumpRecord(&jitdump.CodeMove{CodeIndex: 2, NewCodeAddr: 0x5000, RecordHeader: jitdump.RecordHeader{Timestamp: t0 + 4}})
	if e := c.find(0x5010, t0+5); e == nil || e.unwind == nil {
		t.Errorf("the moved code lost its table: %+v", e)
	}
	if c.tableBytes <= 0 || c.tablesFull {
		t.Errorf("tables take %d bytes, full %v", c.tableBytes, c.tablesFull)
	}
	c.tableLimit = c.tableBytes
	c.setUnwind(c.find(0x3010, t0+3), eh)
	if c.find(0x3010, t0+3).unwind != nil || !c.tablesFull {
		t.Error("a table past the bound was kept")
	}
}

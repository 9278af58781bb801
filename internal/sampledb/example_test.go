package sampledb_test

import (
	"fmt"
	"os"

	"github.com/jitprof/jitprof/internal/sampledb"
)

// The daemon's side: open the session directory, intern images as
// mappings appear, count resolved samples, flush on an interval.
func ExampleDB() {
	dir, _ := os.MkdirTemp("", "session")
	defer os.RemoveAll(dir)

	db, err := sampledb.Create(dir, sampledb.Options{
		Separate: sampledb.SeparateLib,
		Events:   []sampledb.Event{{Name: "cpu-clock", Count: 999, Freq: true}},
	})
	if err != nil {
		fmt.Println(err) // sampledb.ErrLocked: a daemon is running
		return
	}
	// PERF_RECORD_MMAP2: the kernel's identity of the file, its path.
	app, _ := db.FileImage(sampledb.FileIdent{Dev: 0x803, Ino: 1234}, "/usr/bin/node", sampledb.ImageInfo{})
	// An executable anonymous mapping whose code the process's jitlog
	// database names.
	jit, _ := db.JITImage("jitlog", 4242, 0x7f0000000000, 0x7f0000040000)

	// A sample at 0x7f0000000150, in code of sequence number 17.
	s := sampledb.Sample{App: app, Image: jit, TGID: 4242, TID: 4242, Key1: 0x150, Key2: 17}
	db.Add(&s)
	db.Add(&s)

	if err := db.Flush(); err != nil {
		fmt.Println(err) // errors.Is(err, sampledb.ErrNoSpace): report, keep sampling
	}
	db.Close()

	// The report's side: select files by profile specification, read them.
	spec, _ := sampledb.ParseSpec([]string{"image:node", "event:cpu-clock"})
	sel, _ := sampledb.Select(dir, spec)
	for _, f := range sel.Files {
		fmt.Println(f.Name)
		r, err := sampledb.Open(dir, f)
		if err != nil {
			fmt.Println(err)
			continue
		}
		for e := range r.Entries() {
			fmt.Printf("offset %#x sequence %d: %d samples\n", e.Key1, e.Key2, e.Count)
		}
		r.Close()
	}
	// Output:
	// {root}/usr/bin/node/{dep}/{jit:jitlog}/4242.0x7f0000000000.0x7f0000040000/cpu-clock.F999.0.all.all.all
	// offset 0x150 sequence 17: 2 samples
}

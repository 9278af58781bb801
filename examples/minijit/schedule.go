package main

// A phase runs a set of generations, each in its own slot, for Share of
// the total JIT CPU time, splitting it between them by Weight. Entering a
// phase re-compiles every slot it names, at the slot's address.
type phase struct {
	Share float64
	Runs  []run
}

type run struct {
	Slot   int
	Prog   Program
	Weight float64
}

// schedule is minijit's known split. Slot 0 holds fib, then collatz (a
// different name at the same address), then fib again (the same name, a new
// generation, the same bytes). Slot 1 holds sum_squares, then sum_squares
// re-compiled to different code under the same name, then xorshift.
var schedule = []phase{
	{Share: 0.4, Runs: []run{{0, fib, 3}, {1, sumSquares, 1}}},            // fib 30%, sum_squares 10%
	{Share: 0.3, Runs: []run{{0, collatz, 2}, {1, sumSquaresReduced, 1}}}, // collatz 20%, sum_squares 10%
	{Share: 0.3, Runs: []run{{0, fib, 1}, {1, xorshift, 1}}},              // fib 15%, xorshift 15%
}

// numSlots is how many code cache slots the schedule uses.
const numSlots = 2

// slotSize is the size of one slot; every program fits with room to spare.
const slotSize = 256

// Truth is what a run measured: the CPU time of the JIT work and how it
// split between generations. It is what a profile of the run must report.
type Truth struct {
	PID int `json:"pid"`
	// CPUNs is the thread CPU time spent in calls of generated code.
	CPUNs       int64        `json:"jit_cpu_ns"`
	Generations []Generation `json:"generations"`
}

// Generation is one generation of one function: code loaded at Addr under
// Name with jitlog sequence number Seq.
type Generation struct {
	Name   string  `json:"name"`
	Seq    uint64  `json:"seq"`
	Slot   int     `json:"slot"`
	Addr   uint64  `json:"addr"`
	Size   int     `json:"size"`
	Arg    uint64  `json:"arg"`    // the argument of each call once calibrated
	Result uint64  `json:"result"` // what calls on Arg return; 0 if none ran
	Calls  int     `json:"calls"`
	CPUNs  int64   `json:"cpu_ns"`
	Share  float64 `json:"percent"`        // of CPUNs of the run
	Target float64 `json:"target_percent"` // what the schedule asked for
}

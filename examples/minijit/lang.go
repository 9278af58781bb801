package main

// Reg is one of the eight 64-bit variables of a program. V0 holds the
// argument on entry.
type Reg uint8

// The variables; each lives in its own machine register for the whole call.
const (
	V0 Reg = iota
	V1
	V2
	V3
	V4
	V5
	V6
	V7
	numRegs
)

// Op is a bytecode operation. Arithmetic wraps modulo 2^64.
type Op uint8

// The operations. A and B are variables, Imm an immediate or a label.
const (
	OpSet   Op = iota // A = Imm
	OpMov             // A = B
	OpAdd             // A += B
	OpSub             // A -= B
	OpMul             // A *= B
	OpXor             // A ^= B
	OpAddI            // A += Imm
	OpAndI            // A &= Imm
	OpShlI            // A <<= Imm
	OpShrI            // A >>= Imm (logical)
	OpLabel           // label Imm is here
	OpJmp             // goto label Imm
	OpJz              // if A == 0 goto label Imm
	OpJnz             // if A != 0 goto label Imm
	OpRet             // return A
)

// Ins is one instruction.
type Ins struct {
	Op   Op
	A, B Reg
	Imm  int32
}

// Program is a function of one argument: the bytecode and its name.
type Program struct {
	Name string
	Code []Ins
}

// fib returns the n-th Fibonacci number, iteratively.
var fib = Program{Name: "fib", Code: []Ins{
	{Op: OpSet, A: V1, Imm: 0},
	{Op: OpSet, A: V2, Imm: 1},
	{Op: OpJz, A: V0, Imm: 1},
	{Op: OpLabel, Imm: 0},
	{Op: OpMov, A: V3, B: V1},
	{Op: OpAdd, A: V3, B: V2},
	{Op: OpMov, A: V1, B: V2},
	{Op: OpMov, A: V2, B: V3},
	{Op: OpAddI, A: V0, Imm: -1},
	{Op: OpJnz, A: V0, Imm: 0},
	{Op: OpLabel, Imm: 1},
	{Op: OpRet, A: V1},
}}

// sumSquares returns the sum of i*i for i < n, multiplying.
var sumSquares = Program{Name: "sum_squares", Code: []Ins{
	{Op: OpSet, A: V1, Imm: 0},
	{Op: OpSet, A: V2, Imm: 0},
	{Op: OpJz, A: V0, Imm: 1},
	{Op: OpLabel, Imm: 0},
	{Op: OpMov, A: V3, B: V2},
	{Op: OpMul, A: V3, B: V2},
	{Op: OpAdd, A: V1, B: V3},
	{Op: OpAddI, A: V2, Imm: 1},
	{Op: OpAddI, A: V0, Imm: -1},
	{Op: OpJnz, A: V0, Imm: 0},
	{Op: OpLabel, Imm: 1},
	{Op: OpRet, A: V1},
}}

// sumSquaresReduced is sumSquares after strength reduction, as a tiering
// JIT would re-compile it: (i+1)² = i² + 2i + 1, no multiply. Same name and
// result, different code.
var sumSquaresReduced = Program{Name: "sum_squares", Code: []Ins{
	{Op: OpSet, A: V1, Imm: 0},
	{Op: OpSet, A: V2, Imm: 0},
	{Op: OpSet, A: V3, Imm: 1},
	{Op: OpJz, A: V0, Imm: 1},
	{Op: OpLabel, Imm: 0},
	{Op: OpAdd, A: V1, B: V2},
	{Op: OpAdd, A: V2, B: V3},
	{Op: OpAddI, A: V3, Imm: 2},
	{Op: OpAddI, A: V0, Imm: -1},
	{Op: OpJnz, A: V0, Imm: 0},
	{Op: OpLabel, Imm: 1},
	{Op: OpRet, A: V1},
}}

// collatz returns the total number of Collatz steps to reach 1 from every
// k in 1..n.
var collatz = Program{Name: "collatz", Code: []Ins{
	{Op: OpSet, A: V1, Imm: 0},
	{Op: OpJz, A: V0, Imm: 0},
	{Op: OpLabel, Imm: 1}, // outer: x = k
	{Op: OpMov, A: V2, B: V0},
	{Op: OpMov, A: V3, B: V2},
	{Op: OpAddI, A: V3, Imm: -1},
	{Op: OpJz, A: V3, Imm: 2},
	{Op: OpLabel, Imm: 3}, // inner
	{Op: OpMov, A: V3, B: V2},
	{Op: OpAndI, A: V3, Imm: 1},
	{Op: OpJnz, A: V3, Imm: 4},
	{Op: OpShrI, A: V2, Imm: 1},
	{Op: OpJmp, Imm: 5},
	{Op: OpLabel, Imm: 4}, // odd: x = 3x + 1
	{Op: OpMov, A: V3, B: V2},
	{Op: OpAdd, A: V2, B: V3},
	{Op: OpAdd, A: V2, B: V3},
	{Op: OpAddI, A: V2, Imm: 1},
	{Op: OpLabel, Imm: 5}, // step
	{Op: OpAddI, A: V1, Imm: 1},
	{Op: OpMov, A: V3, B: V2},
	{Op: OpAddI, A: V3, Imm: -1},
	{Op: OpJnz, A: V3, Imm: 3},
	{Op: OpLabel, Imm: 2}, // next k
	{Op: OpAddI, A: V0, Imm: -1},
	{Op: OpJnz, A: V0, Imm: 1},
	{Op: OpLabel, Imm: 0},
	{Op: OpRet, A: V1},
}}

// xorshift returns the state of Marsaglia's xorshift64 after n rounds from
// a fixed seed.
var xorshift = Program{Name: "xorshift", Code: []Ins{
	{Op: OpSet, A: V1, Imm: 88172645},
	{Op: OpJz, A: V0, Imm: 1},
	{Op: OpLabel, Imm: 0},
	{Op: OpMov, A: V2, B: V1},
	{Op: OpShlI, A: V2, Imm: 13},
	{Op: OpXor, A: V1, B: V2},
	{Op: OpMov, A: V2, B: V1},
	{Op: OpShrI, A: V2, Imm: 7},
	{Op: OpXor, A: V1, B: V2},
	{Op: OpMov, A: V2, B: V1},
	{Op: OpShlI, A: V2, Imm: 17},
	{Op: OpXor, A: V1, B: V2},
	{Op: OpAddI, A: V0, Imm: -1},
	{Op: OpJnz, A: V0, Imm: 0},
	{Op: OpLabel, Imm: 1},
	{Op: OpRet, A: V1},
}}

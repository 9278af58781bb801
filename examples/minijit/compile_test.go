package main

import (
	"bytes"
	"strings"
	"testing"
)

// The expected bytes were checked with objdump -D -b binary -mi386:x86-64.
func TestCompileEncoding(t *testing.T) {
	prologue := []byte{0x55, 0x48, 0x89, 0xe5}
	epilogue := []byte{0x5d, 0xc3}
	tests := []struct {
		name string
		ins  []Ins
		want []byte // between prologue and epilogue
	}{
		{"ret V1 needs no move", []Ins{{Op: OpRet, A: V1}}, nil},
		{"ret V0", []Ins{{Op: OpRet, A: V0}}, []byte{0x48, 0x89, 0xf8}},
		{"set", []Ins{{Op: OpSet, A: V1, Imm: 88172645}, {Op: OpRet, A: V1}}, []byte{0x48, 0xc7, 0xc0, 0x65, 0x68, 0x41, 0x05}},
		{"mov", []Ins{{Op: OpMov, A: V2, B: V0}, {Op: OpRet, A: V1}}, []byte{0x48, 0x89, 0xf9}},
		{"add", []Ins{{Op: OpAdd, A: V2, B: V3}, {Op: OpRet, A: V1}}, []byte{0x48, 0x01, 0xd1}},
		{"sub", []Ins{{Op: OpSub, A: V1, B: V2}, {Op: OpRet, A: V1}}, []byte{0x48, 0x29, 0xc8}},
		{"xor", []Ins{{Op: OpXor, A: V1, B: V2}, {Op: OpRet, A: V1}}, []byte{0x48, 0x31, 0xc8}},
		{"imul", []Ins{{Op: OpMul, A: V3, B: V2}, {Op: OpRet, A: V1}}, []byte{0x48, 0x0f, 0xaf, 0xd1}},
		{"add imm", []Ins{{Op: OpAddI, A: V0, Imm: -1}, {Op: OpRet, A: V1}}, []byte{0x48, 0x81, 0xc7, 0xff, 0xff, 0xff, 0xff}},
		{"and imm", []Ins{{Op: OpAndI, A: V3, Imm: 1}, {Op: OpRet, A: V1}}, []byte{0x48, 0x81, 0xe2, 0x01, 0, 0, 0}},
		{"shl", []Ins{{Op: OpShlI, A: V2, Imm: 13}, {Op: OpRet, A: V1}}, []byte{0x48, 0xc1, 0xe1, 0x0d}},
		{"shr", []Ins{{Op: OpShrI, A: V2, Imm: 1}, {Op: OpRet, A: V1}}, []byte{0x48, 0xc1, 0xe9, 0x01}},
		// r8..r10 need REX.R and REX.B.
		{"mov r8, r9", []Ins{{Op: OpMov, A: V5, B: V6}, {Op: OpRet, A: V1}}, []byte{0x4d, 0x89, 0xc8}},
		{"imul r10, rdi", []Ins{{Op: OpMul, A: V7, B: V0}, {Op: OpRet, A: V1}}, []byte{0x4c, 0x0f, 0xaf, 0xd7}},
		{"shr r10", []Ins{{Op: OpShrI, A: V7, Imm: 7}, {Op: OpRet, A: V1}}, []byte{0x49, 0xc1, 0xea, 0x07}},
		{"jump back", []Ins{{Op: OpLabel, Imm: 0}, {Op: OpJmp, Imm: 0}, {Op: OpRet, A: V1}}, []byte{0xe9, 0xfb, 0xff, 0xff, 0xff}},
		{"jz forward", []Ins{{Op: OpJz, A: V0, Imm: 1}, {Op: OpLabel, Imm: 1}, {Op: OpRet, A: V1}}, []byte{0x48, 0x85, 0xff, 0x0f, 0x84, 0, 0, 0, 0}},
		{"jnz back", []Ins{{Op: OpLabel, Imm: 0}, {Op: OpJnz, A: V3, Imm: 0}, {Op: OpRet, A: V1}}, []byte{0x48, 0x85, 0xd2, 0x0f, 0x85, 0xf7, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compile(Program{Name: tt.name, Code: tt.ins})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append(append([]byte{}, prologue...), tt.want...), epilogue...)
			if !bytes.Equal(got, want) {
				t.Errorf("Compile = % x, want % x", got, want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		ins  []Ins
		want string
	}{
		{"no return", []Ins{{Op: OpSet, A: V1}}, "does not end in a return"},
		{"empty", nil, "does not end in a return"},
		{"undefined label", []Ins{{Op: OpJmp, Imm: 3}, {Op: OpRet, A: V1}}, "undefined label 3"},
		{"label twice", []Ins{{Op: OpLabel, Imm: 1}, {Op: OpLabel, Imm: 1}, {Op: OpRet, A: V1}}, "label 1 defined twice"},
		{"shift too far", []Ins{{Op: OpShlI, A: V1, Imm: 64}, {Op: OpRet, A: V1}}, "shift by 64"},
		{"negative shift", []Ins{{Op: OpShrI, A: V1, Imm: -1}, {Op: OpRet, A: V1}}, "shift by -1"},
		{"no such variable", []Ins{{Op: OpMov, A: V1, B: numRegs}, {Op: OpRet, A: V1}}, "no such variable"},
		{"unknown op", []Ins{{Op: OpRet + 1}, {Op: OpRet, A: V1}}, "unknown op"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(Program{Name: "p", Code: tt.ins})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "compile p: ") {
				t.Errorf("Compile error = %v, want compile p: …%s", err, tt.want)
			}
		})
	}
}

// Every program of the schedule compiles and fits a slot.
func TestScheduleFits(t *testing.T) {
	for i, ph := range schedule {
		for _, rn := range ph.Runs {
			code, err := Compile(rn.Prog)
			if err != nil {
				t.Fatalf("phase %d: %v", i+1, err)
			}
			if len(code) > slotSize || rn.Slot >= numSlots {
				t.Errorf("phase %d: %s: %d bytes in slot %d; slots are %d bytes, %d of them", i+1, rn.Prog.Name, len(code), rn.Slot, slotSize, numSlots)
			}
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(collatz); err != nil {
			b.Fatal(err)
		}
	}
}

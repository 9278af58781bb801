package main

import (
	"encoding/binary"
	"fmt"
)

// machine maps each variable to an x86-64 register. V0 is rdi, where the
// trampoline puts the argument; all are caller-saved in the Go ABI0 the
// trampoline is called with, so generated code saves none but rbp.
var machine = [numRegs]byte{7, 0, 1, 2, 6, 8, 9, 10} // rdi rax rcx rdx rsi r8 r9 r10

const rax = 0

// Compile translates p to x86-64 machine code. The code keeps a frame
// pointer (push rbp; mov rbp, rsp … pop rbp; ret) so that frame-pointer
// call chains walk through it into Go.
func Compile(p Program) ([]byte, error) {
	var e encoder
	e.emit(0x55)              // push rbp
	e.rr(0x89, 5, 4)          // mov rbp, rsp
	labels := map[int32]int{} // label -> code offset
	type fixup struct {
		at    int // offset of the rel32
		label int32
	}
	var fixups []fixup
	jump := func(opcode ...byte) func(label int32) {
		return func(label int32) {
			e.emit(opcode...)
			fixups = append(fixups, fixup{len(e.b), label})
			e.emit(0, 0, 0, 0)
		}
	}
	returned := false
	for i, in := range p.Code {
		if in.A >= numRegs || in.B >= numRegs {
			return nil, fmt.Errorf("compile %s: instruction %d: no such variable", p.Name, i)
		}
		a, b := machine[in.A], machine[in.B]
		returned = false
		switch in.Op {
		case OpSet:
			e.ri(0xc7, 0, a, in.Imm) // mov a, imm32 (sign-extended)
		case OpMov:
			e.rr(0x89, a, b)
		case OpAdd:
			e.rr(0x01, a, b)
		case OpSub:
			e.rr(0x29, a, b)
		case OpXor:
			e.rr(0x31, a, b)
		case OpMul:
			e.emit(rex(a, b), 0x0f, 0xaf, modrm(a, b)) // imul a, b
		case OpAddI:
			e.ri(0x81, 0, a, in.Imm)
		case OpAndI:
			e.ri(0x81, 4, a, in.Imm)
		case OpShlI, OpShrI:
			if in.Imm < 0 || in.Imm > 63 {
				return nil, fmt.Errorf("compile %s: instruction %d: shift by %d", p.Name, i, in.Imm)
			}
			ext := byte(4)
			if in.Op == OpShrI {
				ext = 5
			}
			e.emit(rex(ext, a), 0xc1, modrm(ext, a), byte(in.Imm))
		case OpLabel:
			if _, dup := labels[in.Imm]; dup {
				return nil, fmt.Errorf("compile %s: instruction %d: label %d defined twice", p.Name, i, in.Imm)
			}
			labels[in.Imm] = len(e.b)
		case OpJmp:
			jump(0xe9)(in.Imm)
		case OpJz, OpJnz:
			e.rr(0x85, a, a) // test a, a
			cc := byte(0x84)
			if in.Op == OpJnz {
				cc = 0x85
			}
			jump(0x0f, cc)(in.Imm)
		case OpRet:
			if a != rax {
				e.rr(0x89, rax, a)
			}
			e.emit(0x5d, 0xc3) // pop rbp; ret
			returned = true
		default:
			return nil, fmt.Errorf("compile %s: instruction %d: unknown op %d", p.Name, i, in.Op)
		}
	}
	if !returned {
		return nil, fmt.Errorf("compile %s: does not end in a return", p.Name)
	}
	for _, f := range fixups {
		to, ok := labels[f.label]
		if !ok {
			return nil, fmt.Errorf("compile %s: jump to undefined label %d", p.Name, f.label)
		}
		binary.LittleEndian.PutUint32(e.b[f.at:], uint32(int32(to-(f.at+4))))
	}
	return e.b, nil
}

type encoder struct{ b []byte }

func (e *encoder) emit(b ...byte) { e.b = append(e.b, b...) }

// rr emits a REX.W register-to-register instruction "op r/m=dst, reg=src".
func (e *encoder) rr(op, dst, src byte) { e.emit(rex(src, dst), op, modrm(src, dst)) }

// ri emits a REX.W instruction with an opcode extension and an imm32.
func (e *encoder) ri(op, ext, dst byte, imm int32) {
	e.emit(rex(ext, dst), op, modrm(ext, dst))
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(imm))
}

// rex is REX.W with the high bits of the ModRM reg and r/m fields.
func rex(reg, rm byte) byte { return 0x48 | (reg>>3)<<2 | rm>>3 }

// modrm is a register-direct ModRM byte.
func modrm(reg, rm byte) byte { return 0xc0 | (reg&7)<<3 | rm&7 }

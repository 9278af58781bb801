package unwind

import "math/bits"

// perfToDWARF maps perf's x86-64 register numbers (enum perf_event_x86_regs:
// AX, BX, CX, DX, SI, DI, BP, SP, IP, FLAGS, CS, SS, DS, ES, FS, GS,
// R8..R15) to DWARF's; -1 for those DWARF has no column for here.
var perfToDWARF = [24]int8{
	regRAX, regRBX, regRCX, regRDX, regRSI, regRDI, regRBP, regRSP, regRA,
	-1, -1, -1, -1, -1, -1, -1,
	8, 9, 10, 11, 12, 13, 14, 15,
}

// PerfRegs converts the user registers of a sample (the values in the
// order of the bits of mask, perf's sample_regs_user) to Regs.
func PerfRegs(mask uint64, values []uint64) Regs {
	var r Regs
	i := 0
	for m := mask; m != 0 && i < len(values); m &= m - 1 {
		bit := bits.TrailingZeros64(m)
		if bit < len(perfToDWARF) && perfToDWARF[bit] >= 0 {
			r.Set(int(perfToDWARF[bit]), values[i])
		}
		i++
	}
	return r
}

#include "textflag.h"

// func callJIT(fn, arg uintptr) uintptr
//
// A non-zero frame makes the assembler save and set up BP, so a
// frame-pointer walk from generated code reaches callJIT and its Go caller.
TEXT ·callJIT(SB), NOSPLIT, $8-24
	MOVQ fn+0(FP), AX
	MOVQ arg+8(FP), DI
	CALL AX
	MOVQ AX, ret+16(FP)
	RET

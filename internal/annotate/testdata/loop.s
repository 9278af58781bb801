# loop.c by hand, so that the bytes, addresses and lines never change
# with the compiler; the .loc directives give it DWARF lines.
	.file 1 "testdata/loop.c"
	.text
	.globl _start
	.type _start, @function
_start:
	.loc 1 4
	xor %eax, %eax
	mov $1000, %ecx
.Lloop:
	.loc 1 6
	add %ecx, %eax
	.loc 1 7
	dec %ecx
	jnz .Lloop
	.loc 1 8
	mov $60, %eax
	xor %edi, %edi
	syscall
	.size _start, .-_start
# A function no sample is in.
	.globl idle
	.type idle, @function
idle:
	ret
	.size idle, .-idle

package annotate

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strconv"
	"testing"

	"github.com/jitprof/jitprof/internal/profile"
)

// jitProfile is a profile of one JIT function with the given code at
// addr and a sample of period 1 at each address of samples.
func jitProfile(code []byte, addr uint64, samples []uint64) *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock"})
	im := b.Image(profile.Image{Name: "[JIT] tid 7", Kind: profile.ImageAnon})
	fn := b.Func(profile.Func{Name: "jit", Image: im, Addr: addr, Code: code})
	th := b.Thread(profile.Thread{PID: 7, TID: 7, Comm: b.String("jit")})
	for _, a := range samples {
		node := b.Push(-1, b.Frame(profile.Frame{Func: fn, Addr: a}))
		b.Add(profile.Key{Stack: node, Thread: th, CPU: -1, Event: ev}, 1, 1)
	}
	return b.Profile()
}

var instLine = regexp.MustCompile(`(?m)^ *([0-9.]+) :\t *([0-9a-f]+):\t`)

// FuzzJIT annotates JIT code its JIT logged, any bytes at any address,
// with samples inside the code and, at times, outside it: samples outside
// (or code that would wrap the address space) give an error; otherwise
// every instruction is printed once, in address order, within the code,
// and their shares add up to 100% (to the rounding of each).
func FuzzJIT(f *testing.F) {
	loop := []byte{0x48, 0x31, 0xc0, 0x48, 0xff, 0xc0, 0x48, 0x83, 0xf8, 0x10, 0x75, 0xf6, 0xc3} // xor; inc; cmp; jne; ret
	f.Add(loop, uint64(0x7f0000001000), []byte{0, 3, 3, 10, 12}, false)
	f.Add(loop, uint64(0x7f0000001000), []byte{1, 2, 200}, true)
	f.Add([]byte{0x0f, 0x0f, 0xff, 0xc4, 0xe2, 0x79}, ^uint64(0)-2, []byte{0}, false)
	f.Add([]byte{0xe8, 0, 0, 0, 0, 0xe9, 0xfb, 0xff, 0xff, 0xff}, uint64(0), []byte{5}, true)
	f.Fuzz(func(t *testing.T, code []byte, addr uint64, offs []byte, intel bool) {
		if len(code) == 0 || len(code) > 4096 || len(offs) == 0 {
			return
		}
		var samples []uint64
		outside := false
		for i := 0; i < len(offs); i++ {
			off := uint64(offs[i])
			if i+1 < len(offs) {
				off = uint64(binary.LittleEndian.Uint16(offs[i:]))
				i++
			}
			samples = append(samples, addr+off)
			outside = outside || off >= uint64(len(code))
		}
		wraps := addr+uint64(len(code)) < addr
		opts := Options{Symbol: "jit"}
		if intel {
			opts.Syntax = Intel
		}
		var out bytes.Buffer
		err := Write(&out, jitProfile(code, addr, samples), opts)
		if outside || wraps {
			if err == nil {
				t.Fatalf("samples at %#x in %d bytes at %#x: no error", samples, len(code), addr)
			}
			return
		}
		if err != nil {
			t.Fatalf("samples at %#x in %d bytes at %#x: %v", samples, len(code), addr, err)
		}
		var sum, tolerance float64
		next := addr
		for _, m := range instLine.FindAllStringSubmatch(out.String(), -1) {
			pct, _ := strconv.ParseFloat(m[1], 64)
			pc, _ := strconv.ParseUint(m[2], 16, 64)
			if pc < next || pc-addr >= uint64(len(code)) {
				t.Fatalf("instruction at %#x after %#x, code [%#x, +%d)\n%s", pc, next, addr, len(code), out.String())
			}
			next = pc + 1
			sum += pct
			if pct > 0 {
				tolerance += 0.005 // each share is rounded to 2 places
			}
		}
		if next == addr || sum < 100-tolerance-1e-9 || sum > 100+tolerance+1e-9 {
			t.Fatalf("shares add up to %.2f%%\n%s", sum, out.String())
		}
	})
}

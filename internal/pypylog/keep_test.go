package pypylog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestKeepThreads: KeepTo follows a thread only while it is inside a
// kept section. A log of more threads than MaxThreads, one after
// another (a long run's), is kept whole; one with more than MaxThreads
// inside kept sections at once, which Read refuses, is an error.
func TestKeepThreads(t *testing.T) {
	var log bytes.Buffer
	for th := range 3 * MaxThreads {
		fmt.Fprintf(&log, "%d# [%x] {jit-backend-addr\nLoop %d (f) has address 0x%x to 0x%x (bootstrap 0x%x)\n%d# [%x] jit-backend-addr}\n",
			th, 2*th+1, th, 0x10000+th*0x100, 0x10080+th*0x100, 0x10000+th*0x100, th, 2*th+2)
	}
	var out bytes.Buffer
	n, err := KeepTo(&out, bytes.NewReader(log.Bytes()))
	if err != nil || n != int64(log.Len()) || !bytes.Equal(out.Bytes(), log.Bytes()) {
		t.Fatalf("kept %d of %d bytes of %d threads one after another (%v)", n, log.Len(), 3*MaxThreads, err)
	}
	l, err := Read(bytes.NewReader(out.Bytes()), Options{})
	if err != nil || len(l.Codes) != 3*MaxThreads {
		t.Fatalf("the kept log reads %d codes (%v), want %d", len(l.Codes), err, 3*MaxThreads)
	}

	log.Reset()
	for th := range MaxThreads + 1 {
		fmt.Fprintf(&log, "%d# [%x] {jit-backend-addr\n", th, th+1)
	}
	if _, err := KeepTo(io.Discard, bytes.NewReader(log.Bytes())); !errors.Is(err, ErrFormat) {
		t.Errorf("%d threads inside kept sections at once: %v, want an error wrapping ErrFormat", MaxThreads+1, err)
	}
	if _, err := Read(bytes.NewReader(log.Bytes()), Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Read of %d threads inside sections at once: %v, want an error wrapping ErrFormat", MaxThreads+1, err)
	}
}

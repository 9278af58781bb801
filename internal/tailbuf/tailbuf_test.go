package tailbuf

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeepsTheEnd: what is kept is the last max bytes, however the
// writes were cut, and never more.
func TestKeepsTheEnd(t *testing.T) {
	b := New(10)
	var all strings.Builder
	for i := range 50 {
		s := fmt.Sprintf("line %d\n", i)
		all.WriteString(s)
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		want := all.String()
		want = want[max(0, len(want)-10):]
		if got := b.String(); got != want {
			t.Fatalf("after %d writes: %q, want %q", i+1, got, want)
		}
	}
	if cap(b.b) > 64 {
		t.Errorf("the buffer grew to %d bytes to keep 10", cap(b.b))
	}
}

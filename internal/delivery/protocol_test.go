package delivery

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestProtocolRoundTrip: frames and results come back as written.
func TestProtocolRoundTrip(t *testing.T) {
	var b bytes.Buffer
	batches := [][]byte{nil, []byte("a"), bytes.Repeat([]byte("z"), 100000)}
	for _, x := range batches {
		if err := WriteFrame(&b, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range batches {
		got, err := ReadFrame(&b)
		if err != nil || !bytes.Equal(got, x) {
			t.Fatalf("a frame of %d bytes came back as %d: %v", len(x), len(got), err)
		}
	}
	if _, err := ReadFrame(&b); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
	results := []Result{{Outcome: Sent}, {Outcome: Sent, RejectedProfiles: 2, Message: "two dropped"},
		{Outcome: Retry, After: 1500 * time.Millisecond, Message: "HTTP 503"}, {Outcome: Refused, Message: "HTTP 401"}, {Outcome: Rejected, Message: "HTTP 400"}}
	for _, r := range results {
		if err := WriteResult(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(&b)
	for _, r := range results {
		got, err := ReadResult(br)
		if err != nil || got != r {
			t.Errorf("%+v came back as %+v, %v", r, got, err)
		}
	}
	var long bytes.Buffer
	WriteResult(&long, Result{Outcome: Rejected, Message: strings.Repeat("m", 10000)})
	if got, err := ReadResult(bufio.NewReader(&long)); err != nil || len(got.Message) > maxMessage+3 {
		t.Errorf("a long message: %d bytes, %v", len(got.Message), err)
	}
}

// FuzzReadResult: what jitprof-otlp answers is read or refused, never
// taken for more than it says.
func FuzzReadResult(f *testing.F) {
	for _, r := range []Result{{Outcome: Sent}, {Outcome: Retry, After: time.Second, Message: "x"}} {
		var b bytes.Buffer
		WriteResult(&b, r)
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"outcome":"odd"}` + "\n"))
	f.Add([]byte("\x00\x00\x00\x05hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ReadResult(bufio.NewReader(bytes.NewReader(b))); err == nil {
			if r.After < 0 || r.RejectedProfiles < 0 || r.Outcome < Sent || r.Outcome > Rejected {
				t.Fatalf("%+v", r)
			}
		}
		if fr, err := ReadFrame(bytes.NewReader(b)); err == nil && len(fr) > len(b)-4 {
			t.Fatalf("a frame of %d bytes from %d", len(fr), len(b))
		}
	})
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/delivery"
)

type countingExporter struct{ sizes []int }

func (e *countingExporter) Export(_ context.Context, batch []byte) delivery.Result {
	e.sizes = append(e.sizes, len(batch))
	if len(batch) == 0 {
		return delivery.Result{Outcome: delivery.Rejected, Message: "empty"}
	}
	return delivery.Result{Outcome: delivery.Sent}
}

func (e *countingExporter) Close() error { return nil }

// TestServe: one attempt and one answer per batch, until the input ends;
// a frame cut short is an error.
func TestServe(t *testing.T) {
	var in, out bytes.Buffer
	for _, b := range [][]byte{[]byte("abc"), nil, []byte("de")} {
		delivery.WriteFrame(&in, b)
	}
	exp := &countingExporter{}
	if err := serve(exp, &in, &out); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(&out)
	for i, want := range []delivery.Outcome{delivery.Sent, delivery.Rejected, delivery.Sent} {
		got, err := delivery.ReadResult(r)
		if err != nil || got.Outcome != want {
			t.Errorf("answer %d: %+v, %v; want %s", i, got, err, want)
		}
	}
	if len(exp.sizes) != 3 || exp.sizes[0] != 3 || exp.sizes[2] != 2 {
		t.Errorf("batches of %v bytes", exp.sizes)
	}
	if err := serve(exp, strings.NewReader("\x00\x00\x00\x09abc"), &out); err == nil {
		t.Error("a frame cut short: no error")
	}
}

// TestRunRefusesBadSettings: a wrong endpoint is said before any batch.
func TestRunRefusesBadSettings(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"--endpoint", "https://user:pw@col:4318/x"}, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(err.Error(), "credentials in the URL") {
		t.Errorf("error %v", err)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestPollable: jitprof's pipe is read in the runtime's poller (a read
// deadline works only there), frames read from it as from any reader;
// a file stays as it is.
func TestPollable(t *testing.T) {
	// As the exporter's standard input: a blocking pipe, in no poller.
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	blocking, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "jitprof")
	defer w.Close()
	in := pollable(blocking)
	defer in.Close()
	if in == blocking {
		t.Fatal("a pipe was not made pollable")
	}
	if err := in.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatalf("the pipe is not in the poller: %v", err)
	}
	if _, err := in.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read of an empty pipe past its deadline: %v", err)
	}
	in.SetReadDeadline(time.Time{})
	go delivery.WriteFrame(w, []byte("batch"))
	if b, err := delivery.ReadFrame(in); err != nil || string(b) != "batch" {
		t.Fatalf("ReadFrame = %q, %v", b, err)
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pollable(f) != f {
		t.Error("a regular file was taken into the poller")
	}
}

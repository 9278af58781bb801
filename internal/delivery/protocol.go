package delivery

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jitprof and jitprof-otlp talk over jitprof-otlp's standard input and
// output: jitprof writes a batch as a frame (its length, 4 bytes big
// endian, then its bytes: a gzip-compressed ExportProfilesServiceRequest),
// jitprof-otlp makes one attempt at sending it and answers with a line,
// a Result in JSON. It exits when its input ends.

// MaxBatch bounds a batch: 512 MiB, a request of a recording of
// millions of samples.
const MaxBatch = 512 << 20

// maxResultLine bounds a Result's line: its message is cut well below.
const maxResultLine = 64 << 10

// WriteFrame writes a batch.
func WriteFrame(w io.Writer, batch []byte) error {
	if len(batch) > MaxBatch {
		return fmt.Errorf("a batch of %d bytes, over the bound of %d", len(batch), MaxBatch)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(batch)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(batch)
	return err
}

// ReadFrame reads a batch: io.EOF when the input ended between batches.
func ReadFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("a frame's length cut short")
		}
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxBatch {
		return nil, fmt.Errorf("a frame of %d bytes, over the bound of %d", size, MaxBatch)
	}
	// Read as it comes, not allocated by what the length says.
	b, err := io.ReadAll(io.LimitReader(r, int64(size)))
	if err == nil && len(b) < int(size) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("a frame of %d bytes cut short: %w", size, err)
	}
	return b, nil
}

// WriteResult writes a Result's line.
func WriteResult(w io.Writer, r Result) error {
	if len(r.Message) > maxMessage {
		r.Message = r.Message[:maxMessage] + "..."
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// maxMessage bounds a Result's message: enough for a Collector's
// explanation.
const maxMessage = 1024

// ReadResult reads a Result's line.
func ReadResult(r *bufio.Reader) (Result, error) {
	var line []byte
	for {
		part, more, err := r.ReadLine()
		if err != nil {
			return Result{}, err
		}
		line = append(line, part...)
		if len(line) > maxResultLine {
			return Result{}, fmt.Errorf("a result line over %d bytes", maxResultLine)
		}
		if !more {
			break
		}
	}
	var res Result
	if err := json.Unmarshal(line, &res); err != nil {
		return Result{}, fmt.Errorf("a result that is not one: %w", err)
	}
	if res.After < 0 || res.RejectedProfiles < 0 || len(res.Message) > 2*maxMessage {
		return Result{}, fmt.Errorf("a result out of bounds")
	}
	return res, nil
}

package trust

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckDense: a file with a hole before the end of what is to be
// read is refused; a dense file, and a hole past that end (a jitlog
// database grown ahead of its records), are not.
func TestCheckDense(t *testing.T) {
	dir := t.TempDir()
	dense := filepath.Join(dir, "dense")
	if err := os.WriteFile(dense, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, []byte("1000 10 f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 256<<20); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path     string
		from, to int64
		ok       bool
	}{
		{dense, 0, 1 << 20, true},
		{sparse, 0, 10, true},
		{sparse, 0, 256 << 20, false},
		{sparse, 1 << 20, 2 << 20, false},
		{sparse, 300 << 20, 400 << 20, true}, // past the end
	} {
		f, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckDense(f, c.path, c.from, c.to)
		f.Close()
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrUntrusted) {
			t.Errorf("CheckDense(%s, %d, %d) = %v, want ok %v", filepath.Base(c.path), c.from, c.to, err, c.ok)
		}
	}
}

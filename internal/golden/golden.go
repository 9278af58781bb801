package golden

import (
	"bytes"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Check compares got with the file at path, or rewrites the file with
// -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended):\n%s", path, FirstDiff(string(want), string(got)))
	}
}

// FirstDiff describes the first line where want and got differ.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) && i < len(gl); i++ {
		if wl[i] != gl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + wl[i] + "\n+ " + gl[i]
		}
	}
	return "lengths differ: " + strconv.Itoa(len(wl)) + " lines wanted, " + strconv.Itoa(len(gl)) + " got"
}

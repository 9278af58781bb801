package sessionsrc

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadProcess reads arbitrary manifests (jit/PID/process.json): an
// error or a process of the directory's pid, whose embedded files are
// only files of that directory, named plainly (no path, no dot first).
func FuzzReadProcess(f *testing.F) {
	f.Add([]byte(`{"pid":7,"uid":0,"comm":"x","handler":"jitlog","files":[{"path":"/tmp/anon.7","kind":"jitlog","name":"data.jitlog"}]}`))
	f.Add([]byte(`{"pid":7,"files":[{"path":"/p","kind":"perfmap","name":"../outside"},{"path":"/q","kind":"jitdump","name":".hidden"},{"path":"/r","kind":"jitdump","name":"/etc/passwd"}]}`))
	f.Add([]byte(`{"pid":8}`))
	f.Add([]byte(`not json`))
	// One directory for every input (on tmpfs where there is one):
	// only the manifest changes.
	root, err := os.MkdirTemp("/dev/shm", "fuzz-manifest")
	if err != nil {
		root = f.TempDir()
	} else {
		f.Cleanup(func() { os.RemoveAll(root) })
	}
	dir := filepath.Join(root, "7")
	if err := os.Mkdir(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "outside"), []byte("outside"), 0o600)
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("hidden"), 0o600)
	os.WriteFile(filepath.Join(dir, "data.jitlog"), []byte("data"), 0o600)
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(filepath.Join(dir, "process.json"), manifest, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := readProcess(dir, 7)
		if err != nil {
			return
		}
		if p.PID != 7 {
			t.Fatalf("pid %d from the directory of pid 7", p.PID)
		}
		for path, b := range p.Embedded {
			if s := string(b); s != "data" {
				t.Fatalf("%q embeds %q: a file other than the directory's plain ones", path, s)
			}
		}
	})
}

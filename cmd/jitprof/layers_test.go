package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCommandLayer: the commands parse flags and call the packages that
// do the work: none imports a format package or reads the OS itself
// (internal/linux), and the web UI's executable links neither
// perf_event_open nor the daemon.
func TestCommandLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/jitprof/jitprof/"
	banned := []string{"perfdata", "jitlog", "internal/sampledb", "internal/pypylog", "internal/jitdump", "internal/perfmap", "internal/linux"}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			for _, b := range banned {
				if imp == mod+b {
					t.Errorf("%s imports %s", f[0], imp)
				}
			}
		}
	}
	out, err = exec.Command("go", "list", "-deps", "../jitprof-web").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == mod+"internal/perfevent" || pkg == mod+"internal/daemon" {
			t.Errorf("jitprof-web links %s", pkg)
		}
	}
}

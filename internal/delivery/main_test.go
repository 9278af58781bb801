package delivery_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if exporter.dir != "" {
		os.RemoveAll(exporter.dir)
	}
	os.Exit(code)
}

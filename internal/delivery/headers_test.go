package delivery

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/otlp"
)

const token = "tok-8d1f0c77e2"

func headersFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHeaders: the profiles variable replaces the general one, the file's
// lines replace a header of the same name.
func TestHeaders(t *testing.T) {
	file := headersFile(t, "# tokens\n\nAuthorization: Bearer "+token+"\nX-Scope-OrgID:  tenant-1 \n", 0o600)
	for _, c := range []struct {
		cfg  Config
		env  func(string) string
		want []otlp.Attribute
	}{
		{Config{}, env("OTEL_EXPORTER_OTLP_HEADERS", "a=1,b=2"), []otlp.Attribute{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}},
		{Config{}, env("OTEL_EXPORTER_OTLP_HEADERS", "a=1", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "c=3"), []otlp.Attribute{{Key: "c", Value: "3"}}},
		{Config{HeadersFile: file}, env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20old,a=1"),
			[]otlp.Attribute{{Key: "Authorization", Value: "Bearer " + token}, {Key: "a", Value: "1"}, {Key: "X-Scope-OrgID", Value: "tenant-1"}}},
	} {
		got, err := Headers(c.cfg, c.env)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: %v, %v; want %v", c.cfg, got, err, c.want)
		}
	}
}

// TestHeadersRefused: a headers file others can read, a symlink, a line
// that is not a header, a header the exporter sets: errors that never
// show a value.
func TestHeadersRefused(t *testing.T) {
	good := headersFile(t, "Authorization: Bearer "+token+"\n", 0o600)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  Config
		env  func(string) string
		want string
	}{
		{Config{HeadersFile: headersFile(t, "Authorization: Bearer "+token+"\n", 0o644)}, env(), "chmod 600"},
		{Config{HeadersFile: link}, env(), "symlink"},
		{Config{HeadersFile: headersFile(t, "Bearer "+token+"\n", 0o600)}, env(), "line 1 is not"},
		{Config{HeadersFile: headersFile(t, "Content-Encoding: "+token+"\n", 0o600)}, env(), "exporter's to set"},
		{Config{HeadersFile: headersFile(t, "Bad Name: "+token+"\n", 0o600)}, env(), "header name"},
		{Config{}, env("OTEL_EXPORTER_OTLP_HEADERS", "x="+token+",broken"), "OTEL_EXPORTER_OTLP_HEADERS: pair 2"},
	} {
		_, err := Headers(c.cfg, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("the error %q shows the token", err)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor([]otlp.Attribute{{Key: "Authorization", Value: "Bearer " + token}, {Key: "X-Short", Value: "abc"}})
	got := r.Redact("401: bad token " + token + " in 'Bearer " + token + "', abc")
	if want := "401: bad token [redacted] in '[redacted]', abc"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

package delivery

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestResolve: flags win over the profiles variables, which win over the
// general ones; OTEL_EXPORTER_OTLP_ENDPOINT is a base the profiles path
// is added to, OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT is used as it is.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags Config
		env   func(string) string
		want  Config
	}{
		{"defaults", Config{}, env(), Config{Endpoint: "http://localhost:4318/v1development/profiles", Protocol: ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"grpc default", Config{Protocol: "grpc"}, env(), Config{Endpoint: "http://localhost:4317", Protocol: ProtocolGRPC, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"base endpoint", Config{}, env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://col:4318/otlp/"),
			Config{Endpoint: "https://col:4318/otlp/v1development/profiles", Protocol: ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"signal endpoint as is", Config{}, env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://a:1", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://b:2/custom"),
			Config{Endpoint: "https://b:2/custom", Protocol: ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"flag without a path", Config{Endpoint: "http://col:4318"}, env("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://b:2/custom"),
			Config{Endpoint: "http://col:4318/v1development/profiles", Protocol: ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"flag with a path", Config{Endpoint: "http://col:4318/x"}, env(),
			Config{Endpoint: "http://col:4318/x", Protocol: ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"grpc base endpoint as is", Config{}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT", "col:4317", "OTEL_EXPORTER_OTLP_INSECURE", "true"),
			Config{Endpoint: "col:4317", Protocol: ProtocolGRPC, Insecure: true, Timeout: 10 * time.Second, Compression: "gzip"}},
		{"profiles variables win", Config{}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "http/protobuf",
			"OTEL_EXPORTER_OTLP_TIMEOUT", "500", "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "2500", "OTEL_EXPORTER_OTLP_COMPRESSION", "none",
			"OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem", "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", "/c.pem", "OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"),
			Config{Endpoint: "http://localhost:4318/v1development/profiles", Protocol: ProtocolHTTP, Timeout: 2500 * time.Millisecond, Compression: "none", CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem"}},
		{"flags win", Config{Protocol: "grpc", Timeout: time.Second, Compression: "gzip", CA: "/mine.pem"}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "OTEL_EXPORTER_OTLP_TIMEOUT", "7", "OTEL_EXPORTER_OTLP_COMPRESSION", "none", "OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"),
			Config{Endpoint: "http://localhost:4317", Protocol: ProtocolGRPC, Timeout: time.Second, Compression: "gzip", CA: "/mine.pem"}},
	} {
		got, err := Resolve(c.flags, c.env)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v\nwant %+v", c.name, got, err, c.want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		flags Config
		env   func(string) string
		want  string
	}{
		{Config{Protocol: "http/json"}, env(), "jitprof sends protobuf"},
		{Config{}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "udp"), "unknown OTLP protocol"},
		{Config{Endpoint: "https://user:s3cret@col:4318"}, env(), "credentials in the URL would be shown by ps"},
		{Config{Endpoint: "ftp://col"}, env(), "want http://"},
		{Config{Protocol: "grpc", Endpoint: "col"}, env(), "want HOST:PORT"},
		{Config{Cert: "/c.pem"}, env(), "needs its key"},
		{Config{}, env("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"), "milliseconds"},
		{Config{}, env("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"), "gzip or none"},
	} {
		_, err := Resolve(c.flags, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.flags, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error %q shows the password", err)
		}
	}
}

// TestTarget: gRPC endpoints as host:port (TLS unless insecure) or URLs
// (http: none, https: TLS, 4317 by default).
func TestTarget(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Protocol: ProtocolGRPC, Endpoint: "col:4317"}, "col:4317 tls"},
		{Config{Protocol: ProtocolGRPC, Endpoint: "col:4317", Insecure: true}, "col:4317 plain"},
		{Config{Protocol: ProtocolGRPC, Endpoint: "http://col"}, "col:4317 plain"},
		{Config{Protocol: ProtocolGRPC, Endpoint: "https://col:443"}, "col:443 tls"},
		{Config{Protocol: ProtocolHTTP, Endpoint: "https://col/v1development/profiles"}, "https://col/v1development/profiles tls"},
	} {
		tg, err := c.cfg.Target()
		if err != nil {
			t.Fatal(err)
		}
		got := tg.Host
		if tg.URL != nil {
			got = tg.URL.String()
		}
		if tg.TLS {
			got += " tls"
		} else {
			got += " plain"
		}
		if got != c.want {
			t.Errorf("%+v: %s, want %s", c.cfg, got, c.want)
		}
	}
}

// TestArgs: jitprof-otlp's flags give back the Config, and carry no
// header: only the headers file's path.
func TestArgs(t *testing.T) {
	c := Config{Endpoint: "https://col:4318/v1development/profiles", Protocol: ProtocolHTTP, CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem",
		HeadersFile: "/etc/jitprof/headers", Timeout: 3 * time.Second, Compression: "none"}
	var got Config
	fs := newFlagSet()
	got.RegisterFlags(fs)
	if err := fs.Parse(c.Args()); err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Errorf("%+v through the flags is %+v", c, got)
	}
	if slices.ContainsFunc(c.Args(), func(a string) bool { return strings.Contains(strings.ToLower(a), "bearer") }) {
		t.Errorf("args %q", c.Args())
	}
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

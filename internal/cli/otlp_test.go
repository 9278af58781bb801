package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestOTLPFlags: --service-name wins over OTEL_SERVICE_NAME, the
// exporter's flags over OTEL_EXPORTER_OTLP_*, and a broken
// OTEL_RESOURCE_ATTRIBUTES is an error that shows no value.
func TestOTLPFlags(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	var o OTLPFlags
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.RegisterResource(fs)
	o.RegisterExport(fs)
	if err := fs.Parse([]string{"--service-name", "api", "--otlp-protocol", "grpc", "--otlp-endpoint", "col:4317", "--otlp-insecure"}); err != nil {
		t.Fatal(err)
	}
	e := env(map[string]string{"OTEL_SERVICE_NAME": "env", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
	res, err := o.Resource(e)
	if err != nil || res.ServiceName != "api" || len(res.Attributes) != 1 || res.Machine.Name == "" {
		t.Errorf("resource %+v, %v", res, err)
	}
	cfg, err := o.Config(e)
	if err != nil || cfg.Protocol != "grpc" || cfg.Endpoint != "col:4317" || !cfg.Insecure {
		t.Errorf("config %+v, %v", cfg, err)
	}
	var none OTLPFlags
	if !o.Push(e) || none.Push(e) || !none.Push(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318"})) {
		t.Errorf("push with --otlp-endpoint %v, with neither it nor an endpoint in the environment %v, with OTEL_EXPORTER_OTLP_ENDPOINT %v",
			o.Push(e), none.Push(e), none.Push(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318"})))
	}
	if res, _ := none.Resource(e); res.ServiceName != "env" {
		t.Errorf("service name %q, want OTEL_SERVICE_NAME's", res.ServiceName)
	}
	if _, err := none.Resource(env(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "a=1,s3cret"})); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a broken OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
}

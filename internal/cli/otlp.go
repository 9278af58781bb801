package cli

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/otlp"
)

// OTLPFlags are the flags of the commands that make OTLP profiles: what
// goes in every resource (--service-name: report --format otlp, push,
// the daemon), and where and how to send (--otlp-*: push, the daemon).
// Headers, which hold tokens, have no flag: they come from the
// environment or --otlp-headers-file, so that ps never shows them.
type OTLPFlags struct {
	serviceName string
	cfg         delivery.Config
}

// RegisterResource defines the resource's flags on fs.
func (o *OTLPFlags) RegisterResource(fs *flag.FlagSet) {
	fs.StringVar(&o.serviceName, "service-name", "", "OTLP: `name` every process's service.name is (default $OTEL_SERVICE_NAME, else service.name in $OTEL_RESOURCE_ATTRIBUTES, else the process's executable name)")
}

// RegisterExport defines the exporter's flags on fs.
func (o *OTLPFlags) RegisterExport(fs *flag.FlagSet) {
	fs.StringVar(&o.cfg.Endpoint, "otlp-endpoint", "", "send to the Collector at `URL`: http(s)://HOST:PORT[/PATH] (without a path: "+delivery.SignalPath+"); with --otlp-protocol grpc also HOST:PORT (default $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT, else localhost's 4318, gRPC 4317)")
	fs.StringVar(&o.cfg.Protocol, "otlp-protocol", "", "`protocol` to send with: http/protobuf or grpc (default $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	fs.StringVar(&o.cfg.CA, "otlp-ca", "", "trust the CA certificates in `file` (PEM) instead of the system's")
	fs.StringVar(&o.cfg.Cert, "otlp-cert", "", "present the client certificate in `file` (PEM), with --otlp-key")
	fs.StringVar(&o.cfg.Key, "otlp-key", "", "the client certificate's key `file` (PEM)")
	fs.StringVar(&o.cfg.HeadersFile, "otlp-headers-file", "", "send the headers in `file`, one \"Name: value\" a line (tokens: a file only you can read), besides $OTEL_EXPORTER_OTLP_HEADERS")
	fs.BoolVar(&o.cfg.Insecure, "otlp-insecure", false, "gRPC without TLS to an endpoint given as HOST:PORT (http:// says so too)")
	fs.DurationVar(&o.cfg.Timeout, "otlp-timeout", 0, "bound on one attempt to send (default $OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)")
	fs.StringVar(&o.cfg.Compression, "otlp-compression", "", "`compression` of what is sent: gzip or none (default $OTEL_EXPORTER_OTLP_COMPRESSION, else gzip)")
}

// Resource returns what goes in every resource: the service name from
// the flag or the environment, OTEL_RESOURCE_ATTRIBUTES, this machine's
// name and ID, and jitprof's version.
func (o *OTLPFlags) Resource(getenv func(string) string) (otlp.Options, error) {
	attrs, err := otlp.ParseList(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return otlp.Options{}, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	host, _ := os.Hostname()
	opts := otlp.Options{
		ServiceName: cmp.Or(o.serviceName, getenv("OTEL_SERVICE_NAME")),
		Attributes:  attrs,
		Machine:     otlp.Machine{Name: host, ID: linux.MachineID()},
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		opts.Version = info.Main.Version
	}
	return opts, nil
}

// Push reports whether the daemon pushes: --otlp-endpoint was given, or
// an endpoint in the environment (OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,
// OTEL_EXPORTER_OTLP_ENDPOINT), as an OpenTelemetry SDK exports to it.
func (o *OTLPFlags) Push(getenv func(string) string) bool {
	return o.cfg.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Config returns where and how to send: the flags, else the
// OpenTelemetry environment variables (delivery.Resolve).
func (o *OTLPFlags) Config(getenv func(string) string) (delivery.Config, error) {
	return delivery.Resolve(o.cfg, getenv)
}

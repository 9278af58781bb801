package delivery

import (
	"cmp"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The protocols (OTEL_EXPORTER_OTLP_PROTOCOL's values).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// SignalPath is where an OTLP/HTTP endpoint takes profiles: the
// Collector's OTLP receiver fixes it.
const SignalPath = "/v1development/profiles"

// Config is how to reach a Collector: what jitprof-otlp is started with.
// It holds no secret: headers come from the environment or HeadersFile,
// which jitprof-otlp reads itself.
type Config struct {
	// Endpoint is the URL of the profiles endpoint (OTLP/HTTP), or of
	// the gRPC server (OTLP/gRPC: also host:port).
	Endpoint string
	Protocol string // ProtocolHTTP or ProtocolGRPC
	// Insecure speaks gRPC without TLS to an endpoint without a scheme
	// (http:// says so too).
	Insecure bool
	// CA is a file of PEM certificates to trust instead of the
	// system's; Cert and Key a client certificate and its key.
	CA, Cert, Key string
	// HeadersFile holds headers to send, one "Name: value" a line.
	HeadersFile string
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Compression is "gzip" or "none".
	Compression string
}

// Defaults of the OpenTelemetry specification, but compression: gzip
// took minijit's request to 45%, and bandwidth is what a fleet pays.
const (
	defaultHTTP    = "http://localhost:4318" + SignalPath
	defaultGRPC    = "http://localhost:4317"
	defaultTimeout = 10 * time.Second
)

// Resolve fills what flags leave empty from the OpenTelemetry
// environment variables getenv reads (OTEL_EXPORTER_OTLP_PROFILES_X,
// else OTEL_EXPORTER_OTLP_X), then the defaults, and checks the result.
// An endpoint given as a flag with no path gets the profiles path, as
// OTEL_EXPORTER_OTLP_ENDPOINT does; OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT
// is used as it is.
func Resolve(flags Config, getenv func(string) string) (Config, error) {
	env := func(name string) string {
		return cmp.Or(getenv("OTEL_EXPORTER_OTLP_PROFILES_"+name), getenv("OTEL_EXPORTER_OTLP_"+name))
	}
	c := flags
	c.Protocol = cmp.Or(c.Protocol, env("PROTOCOL"), ProtocolHTTP)
	switch c.Protocol {
	case ProtocolHTTP, ProtocolGRPC:
	case "http/json":
		return c, fmt.Errorf("OTLP protocol http/json: jitprof sends protobuf (http/protobuf) or grpc")
	default:
		return c, fmt.Errorf("unknown OTLP protocol %q: http/protobuf or grpc", c.Protocol)
	}
	http := c.Protocol == ProtocolHTTP
	switch {
	case c.Endpoint != "":
		if http {
			c.Endpoint = withSignalPath(c.Endpoint, false)
		}
	case getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") != "":
		c.Endpoint = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		c.Endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if http {
			c.Endpoint = withSignalPath(c.Endpoint, true)
		}
	case http:
		c.Endpoint = defaultHTTP
	default:
		c.Endpoint = defaultGRPC
	}
	if !c.Insecure {
		c.Insecure, _ = strconv.ParseBool(env("INSECURE"))
	}
	c.CA = cmp.Or(c.CA, env("CERTIFICATE"))
	c.Cert = cmp.Or(c.Cert, env("CLIENT_CERTIFICATE"))
	c.Key = cmp.Or(c.Key, env("CLIENT_KEY"))
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
		if ms := env("TIMEOUT"); ms != "" {
			n, err := strconv.ParseUint(ms, 10, 32)
			if err != nil || n == 0 {
				return c, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: milliseconds, more than 0", ms)
			}
			c.Timeout = time.Duration(n) * time.Millisecond
		}
	}
	c.Compression = cmp.Or(c.Compression, env("COMPRESSION"), "gzip")
	return c, c.Check()
}

// withSignalPath adds the profiles path to a base endpoint: always for
// OTEL_EXPORTER_OTLP_ENDPOINT, whose path is a prefix (always), and to
// a URL without a path otherwise.
func withSignalPath(endpoint string, always bool) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || (!always && u.Path != "" && u.Path != "/") {
		return endpoint // Check says what is wrong
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + SignalPath
	return u.String()
}

// Check says what is wrong with c, if anything.
func (c Config) Check() error {
	if c.Protocol != ProtocolHTTP && c.Protocol != ProtocolGRPC {
		return fmt.Errorf("unknown OTLP protocol %q: http/protobuf or grpc", c.Protocol)
	}
	if c.Compression != "gzip" && c.Compression != "none" {
		return fmt.Errorf("OTLP compression %q: gzip or none", c.Compression)
	}
	if (c.Cert == "") != (c.Key == "") {
		return fmt.Errorf("a client certificate needs its key, and a key its certificate (--otlp-cert and --otlp-key)")
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("OTLP timeout %v: more than 0", c.Timeout)
	}
	_, err := c.Target()
	return err
}

// Target is where the endpoint points: for gRPC, host:port, and
// whether to use TLS; for HTTP the URL, TLS when https.
type Target struct {
	URL  *url.URL // OTLP/HTTP
	Host string   // OTLP/gRPC: host:port
	TLS  bool
}

// Target parses the endpoint.
func (c Config) Target() (Target, error) {
	e := c.Endpoint
	if c.Protocol == ProtocolGRPC && !strings.Contains(e, "://") {
		if _, _, err := splitHostPort(e); err != nil {
			return Target{}, fmt.Errorf("OTLP endpoint %q: %w", e, err)
		}
		return Target{Host: e, TLS: !c.Insecure}, nil
	}
	u, err := url.Parse(e)
	if err != nil {
		return Target{}, fmt.Errorf("OTLP endpoint: %w", err)
	}
	if u.User != nil {
		// It would be on jitprof-otlp's command line, which ps shows.
		return Target{}, fmt.Errorf("OTLP endpoint: credentials in the URL would be shown by ps: send them as headers (--otlp-headers-file or OTEL_EXPORTER_OTLP_HEADERS)")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return Target{}, fmt.Errorf("OTLP endpoint %q: want http://HOST[:PORT]/PATH, or https", e)
	}
	if c.Protocol == ProtocolGRPC {
		host := u.Host
		if u.Port() == "" {
			host += ":4317"
		}
		return Target{Host: host, TLS: u.Scheme == "https"}, nil
	}
	return Target{URL: u, TLS: u.Scheme == "https"}, nil
}

// splitHostPort splits host:port, checking the port is a number.
func splitHostPort(s string) (host string, port int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("want HOST:PORT")
	}
	p, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("want HOST:PORT, with a port number")
	}
	return s[:i], int(p), nil
}

// Args are c as jitprof-otlp's flags (RegisterFlags).
func (c Config) Args() []string {
	a := []string{"--endpoint", c.Endpoint, "--protocol", c.Protocol, "--timeout", c.Timeout.String(), "--compression", c.Compression}
	if c.Insecure {
		a = append(a, "--insecure")
	}
	for _, f := range []struct{ name, v string }{{"--ca", c.CA}, {"--cert", c.Cert}, {"--key", c.Key}, {"--headers-file", c.HeadersFile}} {
		if f.v != "" {
			a = append(a, f.name, f.v)
		}
	}
	return a
}

// RegisterFlags defines c's fields as the flags Args makes on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Endpoint, "endpoint", "", "the OTLP `URL` (gRPC: also HOST:PORT)")
	fs.StringVar(&c.Protocol, "protocol", ProtocolHTTP, "http/protobuf or grpc")
	fs.BoolVar(&c.Insecure, "insecure", false, "gRPC without TLS to HOST:PORT")
	fs.StringVar(&c.CA, "ca", "", "trust the certificates in `file` (PEM) instead of the system's")
	fs.StringVar(&c.Cert, "cert", "", "client certificate `file` (PEM)")
	fs.StringVar(&c.Key, "key", "", "client key `file` (PEM)")
	fs.StringVar(&c.HeadersFile, "headers-file", "", "headers to send, one \"Name: value\" a line, from `file`")
	fs.DurationVar(&c.Timeout, "timeout", defaultTimeout, "bound on one attempt")
	fs.StringVar(&c.Compression, "compression", "gzip", "gzip or none")
}

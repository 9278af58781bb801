package delivery

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/trust"
)

// maxHeadersFile bounds a headers file: a few tokens.
const maxHeadersFile = 64 << 10

// Headers returns the headers to send: OTEL_EXPORTER_OTLP_PROFILES_HEADERS
// or, when it is not set, OTEL_EXPORTER_OTLP_HEADERS (the SDKs' key=value
// lists), then the lines of c.HeadersFile, which replace a header of the
// same name. Headers hold tokens: errors say where a header is wrong,
// never what it holds.
func Headers(c Config, getenv func(string) string) ([]otlp.Attribute, error) {
	name := "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"
	list := getenv(name)
	if list == "" {
		name = "OTEL_EXPORTER_OTLP_HEADERS"
		list = getenv(name)
	}
	hs, err := otlp.ParseList(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, h := range hs {
		if err := checkHeader(h); err != nil {
			return nil, fmt.Errorf("%s: pair %d: %w", name, i+1, err)
		}
	}
	if c.HeadersFile != "" {
		fhs, err := readHeadersFile(c.HeadersFile)
		if err != nil {
			return nil, err
		}
		for _, fh := range fhs {
			hs = setHeader(hs, fh)
		}
	}
	return hs, nil
}

// setHeader sets h in hs, replacing a header of the same name.
func setHeader(hs []otlp.Attribute, h otlp.Attribute) []otlp.Attribute {
	for i := range hs {
		if strings.EqualFold(hs[i].Key, h.Key) {
			hs[i] = h
			return hs
		}
	}
	return append(hs, h)
}

// readHeadersFile reads a headers file: a file of the user jitprof runs
// as, no symlink, one link, that no one else can read or write (it holds
// tokens); blank lines and lines starting with # are skipped.
func readHeadersFile(path string) ([]otlp.Attribute, error) {
	f, err := trust.Open(path, trust.Rule{Owner: trust.UnknownOwner, Limit: maxHeadersFile})
	if err != nil {
		return nil, fmt.Errorf("headers file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("headers file: %w", err)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return nil, fmt.Errorf("headers file %s: readable or writable by others (mode %#o), and it holds tokens: chmod 600 it", path, m)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxHeadersFile+1))
	if err != nil {
		return nil, fmt.Errorf("headers file %s: %w", path, err)
	}
	hs, err := parseHeaders(b)
	if err != nil {
		return nil, fmt.Errorf("headers file %s: %w", path, err)
	}
	return hs, nil
}

// parseHeaders parses a headers file's lines: "Name: value".
func parseHeaders(b []byte) ([]otlp.Attribute, error) {
	var hs []otlp.Attribute
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxHeadersFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		h := otlp.Attribute{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}
		if !ok {
			return nil, fmt.Errorf("line %d is not \"Name: value\"", n)
		}
		if err := checkHeader(h); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		hs = setHeader(hs, h)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return hs, nil
}

// checkHeader refuses a header HTTP and gRPC would not carry as it is,
// and those the exporter sets itself.
func checkHeader(h otlp.Attribute) error {
	if h.Key == "" || strings.IndexFunc(h.Key, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("a header name of other characters than letters, digits and !#$%%&'*+-.^_`|~")
	}
	if strings.ContainsAny(h.Value, "\r\n\x00") {
		return fmt.Errorf("header %s: a value with a line break or NUL", h.Key)
	}
	for _, own := range []string{"Content-Type", "Content-Encoding", "Content-Length", "Host", "TE", "Grpc-Encoding", "Grpc-Timeout"} {
		if strings.EqualFold(h.Key, own) {
			return fmt.Errorf("header %s is the exporter's to set", h.Key)
		}
	}
	return nil
}

func isTokenChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// Redactor hides secrets in text meant for people: the values of the
// headers (and the credentials of an Authorization header) are replaced
// with "[redacted]".
type Redactor struct{ secrets []string }

// NewRedactor returns a Redactor of hs' values.
func NewRedactor(hs []otlp.Attribute) *Redactor {
	r := &Redactor{}
	for _, h := range hs {
		r.add(h.Value)
		if _, cred, ok := strings.Cut(h.Value, " "); ok {
			r.add(strings.TrimSpace(cred)) // "Bearer TOKEN": the token alone too
		}
	}
	return r
}

func (r *Redactor) add(s string) {
	// Shorter ones would hide words of the message, and guessing them
	// is no harder than guessing what they hide.
	if len(s) >= 4 {
		r.secrets = append(r.secrets, s)
	}
}

// Redact returns s without the secrets.
func (r *Redactor) Redact(s string) string {
	for _, x := range r.secrets {
		s = strings.ReplaceAll(s, x, "[redacted]")
	}
	return s
}

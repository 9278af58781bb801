package otlp

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseList parses the key=value lists of the OpenTelemetry environment
// variables (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS):
// pairs separated by commas, spaces around keys and values ignored,
// values percent-encoded as W3C Baggage's. The lists can hold secrets
// (tokens in headers): an error says which pair is wrong, never what it
// holds.
func ParseList(s string) ([]Attribute, error) {
	var out []Attribute
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("pair %d is not key=value", i+1)
		}
		v, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("pair %d (%s): its value is not percent-encoded", i+1, safeKey(k))
		}
		out = append(out, Attribute{k, v})
	}
	return out, nil
}

// safeKey is a key as an error may show it: keys are names, not
// secrets, but are shown only when they look like one.
func safeKey(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.", r)) || len(k) > 64 {
			return "key not shown"
		}
	}
	return k
}

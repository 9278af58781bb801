package otlp

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Attribute
		err  string
	}{
		{"", nil, ""},
		{"a=1", []Attribute{{"a", "1"}}, ""},
		{" service.name = api , deployment.environment=prod%20eu,", []Attribute{{"service.name", "api"}, {"deployment.environment", "prod eu"}}, ""},
		{"Authorization=Bearer%20s3cr3t=x", []Attribute{{"Authorization", "Bearer s3cr3t=x"}}, ""},
		{"a=1,s3cr3t", nil, "pair 2 is not key=value"},
		{"=s3cr3t", nil, "pair 1 is not key=value"},
		{"k=%zzs3cr3t", nil, "pair 1 (k): its value is not percent-encoded"},
	} {
		got, err := ParseList(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// FuzzParseList: the lists hold tokens: an error is one of the two
// messages, showing at most a key of a name's characters, never a value;
// and what parses has keys without spaces around them.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"a=1", "k=v,k2=v%202", "Authorization=Bearer x", ",,=", "a=%", "x=y=z"} {
		f.Add(s)
	}
	msg := regexp.MustCompile(`^pair [0-9]+ (is not key=value|\(([-_.A-Za-z0-9]{1,64}|key not shown)\): its value is not percent-encoded)$`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseList(s)
		if err != nil {
			if !msg.MatchString(err.Error()) {
				t.Fatalf("error %q", err)
			}
			return
		}
		for _, a := range got {
			if a.Key == "" || strings.TrimSpace(a.Key) != a.Key {
				t.Fatalf("key %q", a.Key)
			}
		}
	})
}

package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/otelcoltest"
	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/perftest"
)

// buildExporter builds jitprof-otlp beside jitprof, where push looks.
func buildExporter(t *testing.T, jitprof string) {
	t.Helper()
	builtCopy(t, "jitprof-otlp", filepath.Dir(jitprof))
}

// leaves counts samples by their leaf as report's CSV names it:
// "IMAGE|SYMBOL".
func leaves(ss []otlptest.Sample) (map[string]int64, int64) {
	m := map[string]int64{}
	var total int64
	for i := range ss {
		s := &ss[i]
		k := "[unknown]|[unknown]"
		if len(s.Stack) > 0 {
			k = s.Stack[0].Mapping + "|" + s.Stack[0].Name
		}
		m[k] += s.Count()
		total += s.Count()
	}
	return m, total
}

// csvLeaves is report's CSV as leaves counts it, and the sum of the
// samples' periods.
func csvLeaves(t *testing.T, text string) (map[string]int64, int64, int64) {
	t.Helper()
	m := map[string]int64{}
	var total, period int64
	// The report quotes a name with a comma or a quote in it (RFC 4180),
	// as Go's own generic shapes have: read it as CSV, not by commas.
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(rows) < 2 || strings.Join(rows[0], ",") != "event,dso,sym,level,samples,self,self_percent" {
		t.Fatalf("report CSV (%v):\n%s", err, text)
	}
	for _, f := range rows[1:] {
		n, err := strconv.ParseInt(f[4], 10, 64)
		p, err2 := strconv.ParseInt(f[5], 10, 64)
		if err != nil || err2 != nil {
			t.Fatalf("report CSV row %q", f)
		}
		period += p
		m[f[1]+"|"+f[2]] += n
		total += n
	}
	return m, total, period
}

// TestPushMinijit: minijit's recording, pushed to a real Collector over
// OTLP/HTTP and over gRPC, and written by report --format otlp, arrives
// whole: every sample of the recording, each leaf named and counted as
// jitprof report names and counts it (so every generation with its
// share), JIT frames typed and marked with their handler and
// generation, samples at their wall-clock time, one resource for the
// process.
func TestPushMinijit(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	buildExporter(t, jitprof)
	before := time.Now()
	data, env, truth := runMinijit(t, jitprof, minijit)
	after := time.Now()
	recorded, _, f, err := countSamples(data)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	// run returns the command's standard output and error.
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(jitprof, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("jitprof %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out), stderr.String()
	}
	table, _ := run("report", "-i", data, "-l", "--anon-samples", "--format", "csv")
	want, wantTotal, wantPeriod := csvLeaves(t, table)
	if uint64(wantTotal) != recorded {
		t.Fatalf("report counts %d samples of the %d recorded", wantTotal, recorded)
	}

	col := otelcoltest.Start(t, otelcoltest.Options{})
	file := filepath.Join(t.TempDir(), "profile.otlp.pb")
	run("report", "-i", data, "--anon-samples", "--format", "otlp", "-o", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := otlptest.DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]otlptest.Sample{"report --format otlp": fromFile}
	_, out := run("push", "-i", data, "--anon-samples", "--otlp-endpoint", col.HTTP)
	if !strings.Contains(out, fmt.Sprintf("%d samples of 1 processes sent to %s (http/protobuf", recorded, col.HTTP)) {
		t.Errorf("push over HTTP said:\n%s", out)
	}
	http := col.WaitSamples(t, int64(recorded), time.Minute)
	got["push over HTTP"] = http
	run("push", "-i", data, "--anon-samples", "--otlp-protocol", "grpc", "--otlp-insecure", "--otlp-endpoint", col.GRPC)
	all := col.WaitSamples(t, 2*int64(recorded), time.Minute)
	got["push over gRPC"] = all[len(http):]

	for how, ss := range got {
		leaf, total := leaves(ss)
		if uint64(total) != recorded {
			t.Errorf("%s: %d samples, %d recorded", how, total, recorded)
		}
		for k, n := range want {
			if leaf[k] != n {
				t.Errorf("%s: %d samples in %s, report says %d", how, leaf[k], k, n)
			}
			delete(leaf, k)
		}
		for k, n := range leaf {
			t.Errorf("%s: %d samples in %s, which report does not name", how, n, k)
		}
		checkSamples(t, how, ss, truth, before, after)
		// Samples times the period are the CPU time the report counts,
		// to the rounding of the mean period (half a nanosecond a
		// sample).
		var cpu int64
		for i := range ss {
			cpu += ss[i].Count() * ss[i].Period
		}
		if d := math.Abs(float64(cpu - wantPeriod)); d > float64(total)/2 {
			t.Errorf("%s: %d ns of CPU in samples times period, report counts %d", how, cpu, wantPeriod)
		}
	}
	// The generations' shares, as the issue asks them: within half a
	// point of report's (here, the same counts: exactly).
	var jit int64
	for k, n := range want {
		if strings.HasPrefix(k, "[JIT jitlog] minijit|") {
			jit += n
		}
	}
	for name := range truth {
		leaf, _ := leaves(got["push over gRPC"])
		k := "[JIT jitlog] minijit|" + name
		if d := math.Abs(100*float64(leaf[k])/float64(jit) - 100*float64(want[k])/float64(jit)); d > 0.5 {
			t.Errorf("%s: %.2f points from report's share", name, d)
		}
	}
}

// checkSamples checks what every sample of minijit's recording says
// besides its leaf: the process's resource, the JIT frames' attributes,
// the sample's thread and times.
func checkSamples(t *testing.T, how string, ss []otlptest.Sample, truth map[string]float64, before, after time.Time) {
	t.Helper()
	gens := map[string]bool{}
	for i := range ss {
		s := &ss[i]
		r := s.Resource
		if r["service.name"] != "minijit" || r["process.executable.name"] != "minijit" || !strings.HasSuffix(fmt.Sprint(r["process.executable.path"]), "/minijit") ||
			r["process.executable.build_id.gnu"] == nil || r["host.name"] == nil {
			t.Fatalf("%s: resource %v", how, r)
		}
		if s.SampleType != "samples/count" || s.PeriodType != "cpu/nanoseconds" {
			t.Fatalf("%s: %s, %s: want samples/count, cpu/nanoseconds", how, s.SampleType, s.PeriodType)
		}
		if s.Attrs["thread.name"] == nil || s.Attrs["thread.id"] == nil {
			t.Fatalf("%s: sample attributes %v", how, s.Attrs)
		}
		for _, ts := range s.Times {
			if ts < uint64(before.UnixNano()) || ts > uint64(after.UnixNano()) {
				t.Fatalf("%s: a sample at %v, outside the recording's %v to %v", how, time.Unix(0, int64(ts)), before, after)
			}
		}
		if len(s.Times) == 0 || len(s.Values) != 0 {
			t.Fatalf("%s: %d values and %d times", how, len(s.Values), len(s.Times))
		}
		for _, f := range s.Stack {
			typ := f.Attrs["profile.frame.type"]
			if f.Mapping == "[JIT jitlog] minijit" {
				gens[f.Name] = true
				if typ != "jit" || f.Attrs["jitprof.jit.handler"] != "jitlog" || !strings.HasSuffix(f.Name, fmt.Sprintf(" [gen %v]", f.Attrs["jitprof.jit.generation"])) {
					t.Fatalf("%s: JIT frame %s: %v", how, f.Name, f.Attrs)
				}
			} else if typ != "native" && typ != "kernel" {
				t.Fatalf("%s: frame %s in %s: type %v", how, f.Name, f.Mapping, typ)
			}
		}
	}
	for name := range truth {
		if !gens[name] {
			t.Errorf("%s: no frame of %s", how, name)
		}
	}
}

// TestPushToken: a Collector that requires a token: the wrong one is an
// error that says so and never shows it; the right one, from a headers
// file, is taken; a headers file others can read is refused.
func TestPushToken(t *testing.T) {
	perftest.Perf(t)
	jitprof := buildJitprof(t, t.TempDir())
	buildExporter(t, jitprof)
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(jitprof, "record", "-q", "-o", data, "--", perftest.Busy(t), "20").CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	const right, wrong = "right-4c8e1f0d", "wrong-77ab9e21"
	col := otelcoltest.Start(t, otelcoltest.Options{Token: right})
	headers := filepath.Join(t.TempDir(), "headers")
	os.WriteFile(headers, []byte("Authorization: Bearer "+right+"\n"), 0o600)
	loose := filepath.Join(t.TempDir(), "headers")
	os.WriteFile(loose, []byte("Authorization: Bearer "+right+"\n"), 0o644)
	for _, c := range []struct {
		name string
		env  string
		args []string
		want string // in the output; "" for success
	}{
		{"wrong token", "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20" + wrong, nil, "refused the credentials: HTTP 401 Unauthorized"},
		{"no token", "", []string{"--otlp-protocol", "grpc", "--otlp-insecure"}, "refused the credentials: gRPC Unauthenticated"},
		{"right token", "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20" + wrong, []string{"--otlp-headers-file", headers}, ""},
		{"loose file", "", []string{"--otlp-headers-file", loose}, "chmod 600"},
	} {
		args := append([]string{"push", "-i", data, "--otlp-endpoint", col.HTTP}, c.args...)
		if slicesContains(c.args, "grpc") {
			args[4] = col.GRPC
		}
		cmd := exec.Command(jitprof, args...)
		cmd.Env = append(os.Environ(), c.env)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v\n%s", c.name, err, out)
		case c.want != "" && (err == nil || !strings.Contains(string(out), c.want)):
			t.Errorf("%s: %v, want an error saying %q:\n%s", c.name, err, c.want, out)
		case c.want != "" && time.Since(start) > 30*time.Second:
			t.Errorf("%s: the error took %v: a refusal is not retried", c.name, time.Since(start))
		}
		if strings.Contains(string(out), right) || strings.Contains(string(out), wrong) {
			t.Errorf("%s: the output shows a token:\n%s", c.name, out)
		}
	}
	if ss := col.WaitSamples(t, 1, time.Minute); len(ss) == 0 {
		t.Error("nothing arrived with the right token")
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestStartupDependencies: jitprof links no network, TLS, gRPC or
// protobuf package, whose initialization every command would pay for:
// they are jitprof-otlp's (and pprof's web UI jitprof-web's).
func TestStartupDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net" || pkg == "net/http" || pkg == "crypto/tls" || strings.HasPrefix(pkg, "google.golang.org/") || strings.HasPrefix(pkg, "go.opentelemetry.io/") {
			t.Errorf("jitprof links %s", pkg)
		}
	}
}

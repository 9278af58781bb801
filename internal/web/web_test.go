package web

import (
	"context"
	"debug/elf"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/profile"
)

// loop is x86-64 code: mov %rdi,%rcx; 1: dec %rcx; jne 1b; ret.
var loop = []byte{0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3}

const (
	jitAddr = 0x7f0000001000
	startNS = 5_000_000_000
)

// jitRecording is a JIT process (pid 7) whose fib was generated twice at
// one address, generation 3 sampled at its dec (4 samples), generation 5
// at its jne (2), under the interpreter's run; a thread (8) of it in the
// kernel; and a shell (pid 9).
func jitRecording() *Recording {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1_000_000})
	exe := b.Image(profile.Image{Name: "/usr/bin/minijit"})
	jit := b.Image(profile.Image{Name: "[JIT jitlog] minijit", Kind: profile.ImageAnon})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	fr := func(f profile.Func, addr uint64) int32 { return b.Frame(profile.Frame{Func: b.Func(f), Addr: addr}) }
	fib3 := profile.Func{Name: "fib [gen 3]", Image: jit, Addr: jitAddr, Code: loop, Size: uint64(len(loop)), Gen: 3,
		Load: startNS + 100_000_000, Unload: startNS + 600_000_000}
	fib5 := profile.Func{Name: "fib [gen 5]", Image: jit, Addr: jitAddr, Code: loop, Size: uint64(len(loop)), Gen: 5,
		Load: startNS + 600_000_000}
	run := fr(profile.Func{Name: "run", Image: exe, Addr: 0x1100}, 0x1123)
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	main := b.Thread(profile.Thread{PID: 7, TID: 7, Comm: b.String("minijit")})
	worker := b.Thread(profile.Thread{PID: 7, TID: 8, Comm: b.String("minijit")})
	sh := b.Thread(profile.Thread{PID: 9, TID: 9, Comm: b.String("sh")})
	b.Add(profile.Key{Stack: push(run, fr(fib3, jitAddr+3)), Thread: main, Event: ev}, 4, 4_000_000)
	b.Add(profile.Key{Stack: push(run, fr(fib5, jitAddr+6)), Thread: main, Event: ev}, 2, 2_000_000)
	b.Add(profile.Key{Stack: push(fr(profile.Func{Name: "do_syscall_64", Image: kern, Kernel: true}, 0)), Thread: worker, Event: ev}, 1, 1_000_000)
	b.Add(profile.Key{Stack: push(run), Thread: sh, Event: ev}, 3, 3_000_000)
	m := b.Meta()
	m.Cmdline = []string{"jitprof", "record", "--", "minijit"}
	m.StartNS, m.EndNS, m.Lost = startNS, startNS+1_000_000_000, 2
	return &Recording{Profile: b.Profile(), Name: "minijit.data",
		Claims: []anonbind.Claim{{PID: 7, Comm: "minijit", Handler: "jitlog", Source: "jitlog /tmp/anon.7", Asked: 6, Named: 6}}}
}

// server serves rec over HTTP for the test; loads counts Load's calls.
func server(t *testing.T, rec func() *Recording) (url string, srv *Server, loads *atomic.Int32) {
	t.Helper()
	loads = &atomic.Int32{}
	srv, err := New(context.Background(), Options{Load: func(context.Context) (*Recording, error) {
		loads.Add(1)
		return rec(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts.URL, srv, loads
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return string(body)
}

// routines splits pprof's disassembly page into its routines: name ->
// the listing's lines.
func routines(page string) map[string][]string {
	out := map[string][]string{}
	var cur string
	for _, line := range strings.Split(page, "\n") {
		if name, ok := strings.CutPrefix(line, "ROUTINE ======================== "); ok {
			cur = name
			continue
		}
		if strings.Contains(line, "</pre>") {
			break
		}
		if cur != "" {
			out[cur] = append(out[cur], line)
		}
	}
	return out
}

// sampled returns the instructions of a routine with flat samples.
func sampled(lines []string) []string {
	var out []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 3 && f[0] != "." && strings.HasSuffix(f[2], ":") {
			inst, _, _ := strings.Cut(strings.Join(f[3:], " "), " ;") // without its source location
			out = append(out, inst)
		}
	}
	return out
}

// TestJITDisassembly: the two generations of fib at one address are
// disassembled apart, each with its own samples only, at their real
// addresses; pprof's flame graph and top table are there with the JIT
// functions' marks.
func TestJITDisassembly(t *testing.T) {
	url, _, _ := server(t, jitRecording)
	page := get(t, url+"/ui/all/disasm?f=fib")
	r := routines(page)
	for name, want := range map[string]string{"fib [gen 3]": "dec %rcx", "fib [gen 5]": "jne 0x7f0000001003 &lt;fib [gen 5]&#43;0x3&gt;"} {
		got := sampled(r[name])
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: samples at %q, want at %q only\n%s", name, got, want, strings.Join(r[name], "\n"))
		}
		if !strings.Contains(strings.Join(r[name], "\n"), "7f0000001000: mov %rdi,%rcx") {
			t.Errorf("%s: not disassembled at its real address:\n%s", name, strings.Join(r[name], "\n"))
		}
	}
	flame := get(t, url+"/ui/all/flamegraph")
	for _, want := range []string{`id="jitprof-bar"`, "jitprofStackViewer(", `"fib [gen 3]":"JIT code: [JIT jitlog] minijit, generation 3"`, `/static/jitprof.js`} {
		if !strings.Contains(flame, want) {
			t.Errorf("the flame graph page lacks %s", want)
		}
	}
	if js := get(t, url+"/static/jitprof.js"); !strings.Contains(js, "function jitprofStackViewer") {
		t.Error("jitprof.js is not served")
	}
}

// TestELFDisassembly: two ELF images whose functions have the same
// virtual addresses (a program and its copy) keep their samples apart in
// the disassembly, with source lines from DWARF in the source view.
func TestELFDisassembly(t *testing.T) {
	busy := perftest.Busy(t)
	cp := filepath.Join(t.TempDir(), "busy-copy")
	data, err := os.ReadFile(busy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var workA uint64
	for _, s := range syms {
		if s.Name == "work_a" {
			workA = s.Value
		}
	}
	if workA == 0 {
		t.Fatal("no work_a in the busy workload")
	}
	rec := func() *Recording {
		b := profile.NewBuilder()
		ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1_000_000})
		th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("busy")})
		for path, n := range map[string]uint64{busy: 5, cp: 3} {
			im := b.Image(profile.Image{Name: path, Start: 0x555500000000, Limit: 0x555500002000})
			fr := b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: "work_a", Image: im, Addr: workA}), Addr: workA})
			b.Add(profile.Key{Stack: b.Push(-1, fr), Thread: th, Event: ev}, n, n*1_000_000)
		}
		return &Recording{Profile: b.Profile(), Name: "busy.data"}
	}
	url, _, _ := server(t, rec)
	page := get(t, url+"/ui/all/disasm?f=work_a")
	var totals []string
	for _, m := range regexp.MustCompile(`(?m)^ +(\d+ms) +\d+ms \(flat, cum\)`).FindAllStringSubmatch(page, -1) {
		totals = append(totals, m[1])
	}
	if strings.Join(totals, " ") != "5ms 3ms" {
		t.Errorf("routines of work_a have %q of samples, want 5ms and 3ms apart:\n%s", totals, page)
	}
	if !strings.Contains(page, "busy.c:") {
		t.Errorf("the disassembly has no source lines:\n%s", page)
	}
	if src := get(t, url+"/ui/all/source?f=work_a"); !strings.Contains(src, "double work_a(long n)") {
		t.Errorf("the source view lacks work_a's source:\n%s", src)
	}
}

// TestSelections: the selector's choices each get their own view, of
// their samples only.
func TestSelections(t *testing.T) {
	url, _, _ := server(t, jitRecording)
	for _, tc := range []struct {
		sel        string
		want, lack []string
	}{
		{"all", []string{"fib [gen 3]", "run", "do_syscall_64"}, nil},
		{"p7-jit", []string{"fib [gen 3]", "fib [gen 5]"}, []string{`"run"`, "do_syscall_64"}},
		{"p7-native", []string{"do_syscall_64"}, []string{"fib [gen"}},
		{"p7.t8", []string{"do_syscall_64"}, []string{"fib [gen"}},
		{"p9", []string{"run"}, []string{"fib [gen", "do_syscall_64"}},
	} {
		// The top table's rows are its script's data: "Name":"...".
		top := get(t, url+"/ui/"+tc.sel+"/top")
		for _, w := range tc.want {
			if !strings.Contains(top, `"Name":"`+w) {
				t.Errorf("%s: top lacks %s", tc.sel, w)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(top, `"Name":`+strings.TrimPrefix(l, `"`)) {
				t.Errorf("%s: top has %s", tc.sel, l)
			}
		}
	}
	for _, bad := range []string{"p7-jit-jit", "px", "all-e1", "p7.tx"} {
		resp, err := http.Get(url + "/ui/" + bad + "/top")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/ui/%s/top: %s, want 404", bad, resp.Status)
		}
	}
	// The bar's form: a choice keeps the view and its parameters.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(url + "/select?who=p7&code=jit&page=ui&view=flamegraph&q=si%3Dsamples")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/ui/p7-jit/flamegraph?si=samples" {
		t.Errorf("select redirects to %q", loc)
	}
}

func TestSelectionString(t *testing.T) {
	for _, s := range []Selection{all, {PID: 0, TID: -1}, {PID: 7, TID: 8, Code: JITCode}, {PID: -1, TID: -1, Code: NativeCode, Event: 2}} {
		back, err := parseSelection(s.String())
		if err != nil || back != s {
			t.Errorf("parseSelection(%q) = %+v, %v; want %+v", s.String(), back, err, s)
		}
	}
}

// TestPages: the recording's header, the handlers' claims and the
// processes; the generations of fib side by side.
func TestPages(t *testing.T) {
	url, _, _ := server(t, jitRecording)
	rec := get(t, url+"/recording")
	for _, want := range []string{"cpu-clock (period 1000000): 10 samples", "<th>lost samples</th><td>2</td>", "1s (5.000000 to 6.000000)",
		"jitprof record -- minijit", "jitlog /tmp/anon.7", "6 of 6", `href="/ui/p7-jit/">its JIT code</a>`} {
		if !strings.Contains(rec, want) {
			t.Errorf("the recording page lacks %q", want)
		}
	}
	gens := get(t, url+"/generations?fn=fib")
	for _, want := range []string{
		`<td class="jit">fib [gen 3]</td><td class="jp-num">3</td>
          <td>0.100 s</td><td>0.600 s</td>`,
		`<td class="jit">fib [gen 5]</td><td class="jp-num">5</td>
          <td>0.600 s</td><td>still there at the end</td>`,
		"<code>0x7f0000001000</code>",
		"9 bytes",
		"dec %rcx", // the listing
	} {
		if !strings.Contains(gens, want) {
			t.Errorf("the generations page lacks %q", want)
		}
	}
	// The timeline: gen 3 from 10% to 60% of the recording, gen 5 from
	// 60% to the end.
	if !strings.Contains(gens, "left: 10.00%; width: 50.00%") || !strings.Contains(gens, "left: 60.00%; width: 40.00%") {
		t.Errorf("the timeline's bars are not where the code was:\n%s", gens)
	}
}

// TestGraphWithoutDot: without Graphviz the graph view says why, and the
// menu hides it.
func TestGraphWithoutDot(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	url, _, _ := server(t, jitRecording)
	if page := get(t, url+"/ui/all/graph"); !strings.Contains(page, "apt-get install graphviz") {
		t.Errorf("the graph view without dot:\n%s", page)
	}
	if page := get(t, url+"/ui/all/flamegraph"); !strings.Contains(page, "#graphbtn{display:none}") {
		t.Error("the menu offers the graph view without dot")
	}
}

// TestReload: a reload loads the recording again and closes the old one
// once its requests are done.
func TestReload(t *testing.T) {
	var closed atomic.Int32
	url, srv, loads := server(t, func() *Recording {
		r := jitRecording()
		r.Close = func() { closed.Add(1) }
		return r
	})
	get(t, url+"/ui/all/top")
	st := srv.acquire() // a request still under way
	resp, err := http.PostForm(url+"/reload", map[string][]string{"back": {"/recording"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loads.Load() != 2 || resp.Request.URL.Path != "/recording" {
		t.Errorf("after reload: %d loads, at %s", loads.Load(), resp.Request.URL)
	}
	if closed.Load() != 0 {
		t.Error("the old recording was closed under a request")
	}
	st.release()
	for deadline := time.Now().Add(10 * time.Second); closed.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if closed.Load() != 1 {
		t.Error("the old recording was not closed once its last request was done")
	}
}

// TestLoopbackOnly: on a loopback address, requests for another host
// name (a DNS rebinding page) are refused.
func TestLoopbackOnly(t *testing.T) {
	srv, err := New(context.Background(), Options{Load: func(context.Context) (*Recording, error) { return jitRecording(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()
	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "localhost": http.StatusOK, ln.Addr().String(): http.StatusOK} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/recording", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

package web

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// testServer is a Server served over HTTP for a test.
type testServer struct {
	URL    string // the view's root: the server's address and its token
	srv    *Server
	loads  *atomic.Int32 // Load's calls
	client *http.Client
}

// server serves rec over HTTP for the test, with a client that opened
// the address the server gives.
func server(t *testing.T, rec func() *Recording) *testServer {
	t.Helper()
	ts := &testServer{loads: &atomic.Int32{}}
	srv, err := New(context.Background(), Options{Load: func(context.Context) (*Recording, error) {
		ts.loads.Add(1)
		return rec(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	hs.Config.Handler = srv.Handler(hs.Listener.Addr())
	hs.Start()
	t.Cleanup(func() { hs.Close(); srv.Close() })
	ts.URL, ts.srv, ts.client = hs.URL+srv.base, srv, &http.Client{}
	resp, err := ts.client.Get(srv.URL(hs.Listener.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the address with the token: %s at %s", resp.Status, resp.Request.URL)
	}
	return ts
}

// get returns the page at path, which must be there.
func (ts *testServer) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := ts.client.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
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
	ts := server(t, jitRecording)
	page := ts.get(t, "/ui/all/disasm?f=fib")
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
	flame := ts.get(t, "/ui/all/flamegraph")
	for _, want := range []string{`id="jitprof-bar"`, "jitprofStackViewer(", `"fib [gen 3]":"JIT code: [JIT jitlog] minijit, generation 3"`, `/static/jitprof.js`} {
		if !strings.Contains(flame, want) {
			t.Errorf("the flame graph page lacks %s", want)
		}
	}
	if js := ts.get(t, "/static/jitprof.js"); !strings.Contains(js, "function jitprofStackViewer") {
		t.Error("jitprof.js is not served")
	}
}

// symbols returns the addresses of an ELF file's symbols by name.
func symbols(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, s := range syms {
		out[s.Name] = s.Value
	}
	return out
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
	workA := symbols(t, busy)["work_a"]
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
	ts := server(t, rec)
	page := ts.get(t, "/ui/all/disasm?f=work_a")
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
	if src := ts.get(t, "/ui/all/source?f=work_a"); !strings.Contains(src, "double work_a(long n)") {
		t.Errorf("the source view lacks work_a's source:\n%s", src)
	}
}

// TestSelections: the selector's choices each get their own view, of
// their samples only.
func TestSelections(t *testing.T) {
	ts := server(t, jitRecording)
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
		top := ts.get(t, "/ui/"+tc.sel+"/top")
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
		resp, err := ts.client.Get(ts.URL + "/ui/" + bad + "/top")
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
	resp, err := client.Get(ts.URL + "/select?who=p7&code=jit&page=ui&view=flamegraph&q=si%3Dsamples")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != ts.srv.base+"/ui/p7-jit/flamegraph?si=samples" {
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
	ts := server(t, jitRecording)
	rec := ts.get(t, "/recording")
	for _, want := range []string{"cpu-clock (period 1000000): 10 samples", "<th>lost samples</th><td>2</td>", "1s (5.000000 to 6.000000)",
		"jitprof record -- minijit", "jitlog /tmp/anon.7", "6 of 6", `href="` + ts.srv.base + `/ui/p7-jit/">its JIT code</a>`} {
		if !strings.Contains(rec, want) {
			t.Errorf("the recording page lacks %q", want)
		}
	}
	gens := ts.get(t, "/generations?fn=fib")
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
	ts := server(t, jitRecording)
	if page := ts.get(t, "/ui/all/graph"); !strings.Contains(page, "apt-get install graphviz") {
		t.Errorf("the graph view without dot:\n%s", page)
	}
	if page := ts.get(t, "/ui/all/flamegraph"); !strings.Contains(page, "#graphbtn{display:none}") {
		t.Error("the menu offers the graph view without dot")
	}
}

// TestReload: a reload loads the recording again and closes the old one
// once its requests are done.
func TestReload(t *testing.T) {
	var closed atomic.Int32
	ts := server(t, func() *Recording {
		r := jitRecording()
		r.Close = func() { closed.Add(1) }
		return r
	})
	ts.get(t, "/ui/all/top")
	st := ts.srv.acquire() // a request still under way
	resp, err := ts.client.PostForm(ts.URL+"/reload", map[string][]string{"back": {ts.srv.base + "/recording"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ts.loads.Load() != 2 || resp.Request.URL.Path != ts.srv.base+"/recording" {
		t.Errorf("after reload: %d loads, at %s", ts.loads.Load(), resp.Request.URL)
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

// TestWebToken: served on a loopback address, the view answers only
// requests whose path begins with its token, and for its address or
// localhost only: without it, with a wrong one, with the token anywhere
// but there, or for another host name (a DNS rebinding page), requests
// are refused. No response sets a cookie (another port's server would
// be sent it), and none lets a page tell another site its address.
func TestWebToken(t *testing.T) {
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
	addr := ln.Addr().String()
	m := regexp.MustCompile(`^http://` + regexp.QuoteMeta(addr) + `/([0-9a-f]{32})/$`).FindStringSubmatch(srv.URL(ln.Addr()))
	if m == nil {
		t.Fatalf("the address to open is %s", srv.URL(ln.Addr()))
	}
	token := m[1]
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	localhost := "localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	wrong := strings.Repeat("0", len(token))
	for _, tc := range []struct {
		what, host, path string
		want             int
	}{
		{"the token", addr, "/" + token + "/recording", http.StatusOK},
		{"the token, for localhost", localhost, "/" + token + "/recording", http.StatusOK},
		{"the token, a pprof page", addr, "/" + token + "/ui/all/top", http.StatusOK},
		{"the token, a static file", addr, "/" + token + "/static/jitprof.js", http.StatusOK},
		{"the token alone", addr, "/" + token, http.StatusFound},
		{"nothing", addr, "/recording", http.StatusForbidden},
		{"nothing, for the root", addr, "/", http.StatusForbidden},
		{"nothing, for a pprof page", addr, "/ui/all/source?f=fib", http.StatusForbidden},
		{"nothing, for the reload", addr, "/reload", http.StatusForbidden},
		{"nothing, for a static file", addr, "/static/jitprof.js", http.StatusForbidden},
		{"a wrong token", addr, "/" + wrong + "/recording", http.StatusForbidden},
		{"an empty token", addr, "//recording", http.StatusForbidden},
		{"the token and more", addr, "/" + token + "0/recording", http.StatusForbidden},
		{"the token, escaped", addr, "/%" + fmt.Sprintf("%02x", token[0]) + token[1:] + "/recording", http.StatusForbidden},
		{"the token in the query", addr, "/recording?t=" + token, http.StatusForbidden},
		{"the token further on", addr, "/ui/" + token + "/top", http.StatusForbidden},
		{"the token, for another host", "evil.example", "/" + token + "/recording", http.StatusForbidden},
		{"the token, for another host and the port", "evil.example:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), "/" + token + "/", http.StatusForbidden},
		{"the token, for another loopback address", "127.0.0.2", "/" + token + "/recording", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
		req.Host = tc.host
		resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s (Host %s, %s): %s, want %d", tc.what, tc.host, tc.path, resp.Status, tc.want)
		}
		if c := resp.Header.Values("Set-Cookie"); len(c) > 0 {
			t.Errorf("%s: sets a cookie: %q", tc.what, c)
		}
		if p := resp.Header.Get("Referrer-Policy"); p != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q, want no-referrer", tc.what, p)
		}
		if tc.want == http.StatusFound && resp.Header.Get("Location") != "/"+token+"/" {
			t.Errorf("%s: to %q, want the view's root", tc.what, resp.Header.Get("Location"))
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

// sourceProgram is a program whose debug info names three source files
// by #line: SECRET (secret_fn), LINK (link_fn) and LEGIT (legit_fn,
// main).
const sourceProgram = `#line 1 "SECRET"
long secret_fn(long n) { long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
#line 1 "LINK"
long link_fn(long n) { long s = 1; for (long i = 0; i < n; i++) s ^= i; return s; }
#line 1 "LEGIT"
long legit_fn(long n) { long s = 2; for (long i = 0; i < n; i++) s += 3 * i; return s; }
int main(int argc, char **argv) { (void)argv; return (int)(secret_fn(argc) + link_fn(argc) + legit_fn(argc)); }
`

// TestWebSourceAsOwner: pprof's source views show the source files a
// user's program names as that user may read them. Its debug info names
// a root-only file (0600) and a symlink to it, whose lines root's view
// must not show, and a file of the user's, whose lines it shows; the
// same program of root's shows the root-only file's lines, so the test
// can tell. Files planted where pprof would search a relative name (the
// parent of the snapshot) are not shown either. The snapshot is 0700 and
// goes with its server.
func TestWebSourceAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading as the image's owner is what root's jitprof does; a user's reads with their own rights")
	}
	const user = 54321
	cc := perftest.Need(t, "gcc")
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret, link, legit := filepath.Join(dir, "secret.c"), filepath.Join(dir, "link.c"), filepath.Join(dir, "legit.c")
	if err := os.WriteFile(secret, []byte("root:SECRET-1:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legit, []byte("/* LEGIT-1 */\n/* LEGIT-2 */\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, user, user); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(legit, user, user); err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer(`"SECRET"`, `"`+secret+`"`, `"LINK"`, `"`+link+`"`, `"LEGIT"`, `"`+legit+`"`).Replace(sourceProgram)
	if err := os.WriteFile(filepath.Join(dir, "prog.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	if out, err := exec.Command(cc, "-g", "-O0", "-fno-inline", "-o", bin, filepath.Join(dir, "prog.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	addrs := symbols(t, bin)
	rec := func() *Recording {
		b := profile.NewBuilder()
		ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1_000_000})
		th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("prog")})
		im := b.Image(profile.Image{Name: bin, Start: 0x555500000000, Limit: 0x555500002000})
		for fn, file := range map[string]string{"secret_fn": secret, "link_fn": link, "legit_fn": legit} {
			if addrs[fn] == 0 {
				t.Fatalf("no %s in the program", fn)
			}
			f := b.Func(profile.Func{Name: fn, Image: im, Addr: addrs[fn], File: file})
			fr := b.Frame(profile.Frame{Func: f, File: b.String(file), Line: 1, Addr: addrs[fn] + 4})
			b.Add(profile.Key{Stack: b.Push(-1, fr), Thread: th, Event: ev}, 5, 5_000_000)
		}
		return &Recording{Profile: b.Profile(), Name: "prog.data"}
	}
	// The snapshots pprof reads are private and go with their server.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	var snapshots []string
	t.Cleanup(func() {
		for _, d := range snapshots {
			if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the snapshot %s is left after the server closed (%v)", d, err)
			}
		}
	})
	pages := func(owner int) string {
		t.Helper()
		if err := os.Chown(bin, owner, owner); err != nil {
			t.Fatal(err)
		}
		ts := server(t, rec)
		st := ts.srv.acquire()
		snapshots = append(snapshots, st.src.dir)
		st.release()
		if fi, err := os.Stat(snapshots[len(snapshots)-1]); err != nil {
			t.Error(err)
		} else if fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("the snapshot directory's mode is %v, want 0700", fi.Mode())
		}
		// Where pprof would look for a missing copy if it took the
		// snapshot's paths for relative ones: beside the snapshot, in
		// the temporary directory any user may write.
		for i := 1; i <= 3; i++ {
			for _, file := range []string{secret, link} {
				decoy := filepath.Join(tmp, strconv.Itoa(i), file)
				if err := os.MkdirAll(filepath.Dir(decoy), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(decoy, []byte("DECOY\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return ts.get(t, "/ui/all/source?f=_fn")
	}
	page := pages(user)
	if strings.Contains(page, "SECRET-1") || strings.Contains(page, "DECOY") {
		t.Errorf("the source views of a user's program show a root-only file, or another in its place:\n%s", page)
	}
	if !strings.Contains(page, "LEGIT-1") {
		t.Errorf("the source views of a user's program lack its own source:\n%s", page)
	}
	// The page names the files as the program does, not by their copies.
	for _, file := range []string{secret, link, legit} {
		if !strings.Contains(page, `<p class="filename">`+file+`</p>`) {
			t.Errorf("the source view does not name %s:\n%s", file, page)
		}
	}
	if page := pages(0); !strings.Contains(page, "SECRET-1") {
		t.Errorf("the source views of root's program lack root's source:\n%s", page)
	}
}

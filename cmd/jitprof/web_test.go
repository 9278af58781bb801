package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestWebInBrowser starts jitprof web on a recording of minijit and one
// of Node, loads its flame graph in headless Chromium and checks that the
// JIT functions' generations are drawn, marked as JIT code by the handler
// that named them; then opens the HTML export of the same recording,
// which must show the same names and fetch nothing. Screenshots go to
// the test's artifact directory (go test -artifacts, or
// $JITPROF_ARTIFACTS).
func TestWebInBrowser(t *testing.T) {
	perftest.Perf(t)
	chromium := perftest.Need(t, "chromium")
	jitprof, minijit := buildTools(t)

	t.Run("minijit", func(t *testing.T) {
		data, env, truth := runMinijit(t, jitprof, minijit)
		// The generations with a share the graph draws wide enough to
		// label: minijit's own measure, not the profile's.
		var want []string
		for name, pc := range truth {
			if pc >= 3 {
				want = append(want, name)
			}
		}
		checkWeb(t, chromium, jitprof, data, env, "JIT code: [JIT jitlog] minijit, generation ", want)
	})

	t.Run("node", func(t *testing.T) {
		dir := t.TempDir()
		data := runNode(t, dir, []string{"-k", "mono"}, "--perf-prof", "--interpreted-frames-native-stack")
		// What report names, the web must show: the JIT functions with
		// a generation and 3% of the samples or more.
		csv := runOK(t, jitprof, "report", "-i", data, "--anon-samples", "-l", "--format", "csv")
		shares, _ := csvShares(t, csv, "[JIT jitdump]")
		var want []string
		for name, pc := range shares {
			if pc >= 3 && genRe.MatchString(name) {
				want = append(want, name)
			}
		}
		if !slices.ContainsFunc(want, func(n string) bool { return strings.HasPrefix(n, "JS:*fib") }) {
			t.Fatalf("report names no optimized fib with a generation and 3%% of the samples: %v\n%s", want, csv)
		}
		checkWeb(t, chromium, jitprof, data, os.Environ(), "JIT code: [JIT jitdump] node, generation ", want)
	})
}

// checkWeb serves data with jitprof web and checks its flame graph and
// generations page, then the HTML export, in Chromium: every name of
// want is drawn as JIT code, described as mark plus its generation.
func checkWeb(t *testing.T, chromium, jitprof, data string, env []string, mark string, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("no JIT function to look for")
	}
	slices.Sort(want)
	t.Logf("looking for %q", want)
	addr, _ := startWeb(t, jitprof, env, "-i", data, "--anon-samples")
	ctx := browser(t, chromium)
	art := artifactDir(t)

	// pprof's flame graph, from the printed address, the view's root,
	// which redirects to the flame graph.
	// Hovering a box has pprof write its name in its title, and
	// jitprof's script what it is.
	type box struct {
		Title, Text string
		JIT         bool
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(addr), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxbg`))); err != nil {
		t.Fatalf("flame graph at %s: %v", addr, err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.HasPrefix(loc, addr+"ui/") {
		t.Errorf("the browser is at %q (%v), want the flame graph under %s", loc, err, addr)
	}
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`(async () => {
		const out = [];
		for (const b of document.querySelectorAll('#stack-chart .boxbg')) {
			b.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
			b.dispatchEvent(new MouseEvent('mouseenter'));
			await new Promise((r) => setTimeout(r, 0));
			out.push({Title: b.title, Text: b.innerText, JIT: !b.style.background});
			b.dispatchEvent(new MouseEvent('mouseleave'));
		}
		return out;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("flame graph's boxes: %v", err)
	}
	screenshot(ctx, t, art, "flamegraph.png")
	gen := regexp.MustCompile(` \[gen (\d+)\]$`)
	for _, name := range want {
		described := " │ " + name + "\n" + mark + gen.FindStringSubmatch(name)[1]
		if !slices.ContainsFunc(boxes, func(b box) bool { return b.JIT && strings.HasSuffix(b.Title, described) }) {
			t.Errorf("the flame graph has no box for %q marked as JIT code (%s...)", name, mark)
		}
	}
	if t.Failed() {
		t.Logf("boxes: %+v", boxes)
	}

	// The generations of the hottest function, side by side.
	base := gen.ReplaceAllString(want[0], "")
	err = chromedp.Do(ctx, chromedp.Navigate(addr+"generations?fn="+url.QueryEscape(base)), chromedp.WaitVisible(chromedp.CSS(`.jp-side`)))
	if err != nil {
		t.Fatalf("generations page: %v", err)
	}
	gens, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatalf("generations page: %v", err)
	}
	screenshot(ctx, t, art, "generations.png")
	for _, name := range want {
		if gen.ReplaceAllString(name, "") == base && !strings.Contains(gens, name) {
			t.Errorf("the generations page of %q lacks %q", base, name)
		}
	}

	// The HTML export, read from a file, draws the same names, fetching
	// nothing.
	html := filepath.Join(t.TempDir(), "flame.html")
	rep := exec.Command(jitprof, "report", "-i", data, "--anon-samples", "--format", "html", "-o", html)
	rep.Env = env
	if out, err := rep.CombinedOutput(); err != nil {
		t.Fatalf("report --format html: %v\n%s", err, out)
	}
	var mu sync.Mutex
	var requests []string
	err = chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html), chromedp.WaitVisible(chromedp.CSS(`#fg-chart .fg-box`))); err != nil {
		t.Fatalf("HTML export: %v", err)
	}
	titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#fg-chart .fg-box.k1')).map((b) => b.title)`))
	if err != nil {
		t.Fatalf("HTML export: %v", err)
	}
	screenshot(ctx, t, art, "export.png")
	for _, name := range want {
		if !slices.ContainsFunc(titles, func(title string) bool {
			return strings.HasPrefix(title, name+" — ") && strings.HasSuffix(title, mark+gen.FindStringSubmatch(name)[1])
		}) {
			t.Errorf("the HTML export has no JIT frame %q", name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if u != "file://"+html {
			t.Errorf("the HTML export fetched %s", u)
		}
	}
}

// startWeb starts jitprof web with args on a free loopback port and
// returns the address it prints (with its token) and its standard error
// so far; the
// test's end stops it with SIGINT, and it must exit cleanly.
func startWeb(t *testing.T, jitprof string, env []string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(jitprof, append([]string{"web", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("jitprof web after SIGINT: %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/[0-9a-f]{32}/) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("jitprof web printed %q (%v), no address\n%s", line, err, stderr.String())
	}
	// jitprof ran jitprof-web through the descriptor it checked, and
	// jitprof-web took back its name.
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); err != nil || string(comm) != "jitprof-web\n" {
		t.Errorf("jitprof web runs as %q (%v), want jitprof-web", comm, err)
	}
	return m[1], stderr.String
}

// syncBuffer is a standard error that the test reads while the process
// writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWebOpen: --open shows the address, with its token, in $BROWSER,
// but not when CI is set; the address without the token shows nothing;
// without --anon-samples the recording's page says what was left
// out.
func TestWebOpen(t *testing.T) {
	bin := jitprofBinary(t)
	data := jitData(t)
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" >>"+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(ci bool) []string {
		e := slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "CI=") || strings.HasPrefix(v, "BROWSER=") })
		e = append(e, "BROWSER="+browser)
		if ci {
			e = append(e, "CI=true")
		}
		return e
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30 s for %s", what)
			}
		}
	}
	read := func() string { b, _ := os.ReadFile(opened); return string(b) }

	addr, _ := startWeb(t, bin, env(false), "-i", data, "--open")
	eventually("the browser to open "+addr, func() bool { return read() == addr+"\n" })
	// The address opened is the one with the token; without, no page.
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + u.Host + "/recording")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %s, want 403", resp.Status)
	}
	if resp, err = http.Get(addr + "recording"); err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	const note = "7 of 10 samples (70.00% of the event) are in JIT code (anonymous executable memory) and left out"
	if err != nil || !strings.Contains(string(page), note) {
		t.Errorf("the recording's page lacks the note %q (%v):\n%s", note, err, page)
	}

	_, stderr := startWeb(t, bin, env(true), "-i", data, "--open")
	eventually("jitprof web to say it opens no browser on CI", func() bool { return strings.Contains(stderr(), "CI is set: not opening a browser") })
	if got := read(); got != addr+"\n" {
		t.Errorf("on CI the browser was started: %q", got)
	}
}

// browser starts headless Chromium for the test.
func browser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	// A loaded machine starts Chromium slowly; nothing here takes long.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	ctx, cancelBrowser := chromedp.NewContext(ctx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	return ctx
}

// artifactDir is where the test's screenshots go: under
// $JITPROF_ARTIFACTS when set, else the test's artifact directory (kept
// with go test -artifacts).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("JITPROF_ARTIFACTS")
	if dir == "" {
		return t.ArtifactDir()
	}
	dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the page as dir/name.
func screenshot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestWebOtherPort is the attack of a user who serves a page on another
// port of 127.0.0.1 and gets root to open it in the browser that has
// jitprof web's view open: browsers keep cookies per host, not per port,
// so a cookie the view set would be sent to that server, which could
// replay it. No request the browser makes to the other server may carry
// the view's token, in any header or in its address; and what it
// received must not open the view.
func TestWebOtherPort(t *testing.T) {
	chromium := perftest.Need(t, "chromium")
	bin := jitprofBinary(t)
	printed, _ := startWeb(t, bin, os.Environ(), "-i", jitData(t))
	token := regexp.MustCompile(`[0-9a-f]{32}`).FindString(printed)

	// The user's server: it keeps what every request carried.
	var mu sync.Mutex
	var got []*http.Request
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!DOCTYPE html><title>other</title><img src="/pixel"><script>fetch("/api", {credentials: "include"}).then(() => { document.title = "done"; });</script>`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go other.Serve(ln)
	t.Cleanup(func() { other.Close() })
	otherURL := "http://" + ln.Addr().String()

	ctx := browser(t, chromium)
	if err := chromedp.Do(ctx, chromedp.Navigate(printed), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxbg`))); err != nil {
		t.Fatalf("the view at %s: %v", printed, err)
	}
	view, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// The other server, at its root and at paths of the view the user
	// can know.
	for _, page := range []string{otherURL + "/", otherURL + "/ui/all/flamegraph"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady("body")); err != nil {
			t.Fatalf("the other server's page %s: %v", page, err)
		}
		time.Sleep(300 * time.Millisecond) // its image and fetch
	}
	// A link followed from the view (pprof's help is one) tells the
	// other server nothing of the view's address.
	if err := chromedp.Do(ctx, chromedp.Navigate(view), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxbg`))); err != nil {
		t.Fatalf("back to the view: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href = "`+otherURL+`/followed"`)); err != nil {
		t.Fatalf("following a link from the view: %v", err)
	}
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(got, func(r *http.Request) bool { return r.URL.Path == "/followed" }) {
		t.Errorf("the link from the view was not followed")
	}
	if len(got) < 4 {
		t.Fatalf("the other server saw %d requests, want its pages, image and fetches", len(got))
	}
	for _, r := range got {
		for name, vals := range r.Header {
			for _, v := range vals {
				if strings.Contains(v, token) {
					t.Errorf("the browser sent the view's token to another port: %s %s carries %s: %s", r.Method, r.URL, name, v)
				}
			}
		}
		// Replayed on the view, what the other server received (its
		// address, its cookies) opens nothing.
		v, _ := url.Parse(view)
		req, _ := http.NewRequest("GET", "http://"+v.Host+r.URL.RequestURI(), nil)
		for _, c := range r.Cookies() {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with the cookies the other server received, replayed on the view: %s, want 403", r.URL, resp.Status)
		}
	}
}

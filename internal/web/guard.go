package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// The view shows what a recording holds (command lines, paths, code,
// source) of every user's processes, and jitprof web often runs as root;
// a loopback address keeps other machines out, not the machine's other
// users, nor a web page in the user's own browser that sends requests to
// it (CSRF) or reads it under a name of its own (DNS rebinding). So the
// server answers only requests whose path begins with a random token:
// every address of the view is /TOKEN/..., its pages' links are too, and
// the address jitprof web prints is the first of them.
//
// The token is not a cookie: browsers keep cookies per host, not per
// port, so a page another user serves on another port of 127.0.0.1,
// opened in the same browser, would be sent it (and any other credential
// the browser keeps for the host), and could replay it. An address is
// sent only to the server it names; another site's page cannot guess
// it, and the pages' Referrer-Policy keeps it out of the requests they
// make elsewhere.

// newToken returns 128 random bits, in hex.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// guard passes on the requests whose path begins with the token, with
// the token taken off, and, when hostIP is set (a loopback listener),
// that name that address or localhost as their host; it refuses the
// others (403).
type guard struct {
	next   http.Handler
	token  string
	hostIP net.IP
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// No page of the view tells another site where it came from: its
	// address is its credential.
	w.Header().Set("Referrer-Policy", "no-referrer")
	if g.hostIP != nil && !g.hostOK(r.Host) {
		http.Error(w, "jitprof web answers only for the address it listens on or localhost", http.StatusForbidden)
		return
	}
	// The path as sent: the token is hex, and a request that escapes
	// its letters is refused rather than unescaped.
	first, _, slash := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if !g.valid(first) {
		http.Error(w, "jitprof web: open the address jitprof web printed, which carries its token", http.StatusForbidden)
		return
	}
	if !slash {
		// The view's root: its pages' relative links need the slash.
		to := "/" + g.token + "/"
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	http.StripPrefix("/"+g.token, g.next).ServeHTTP(w, r)
}

// valid says whether got is the token, in a time that does not depend on
// how much of it is right.
func (g *guard) valid(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) == 1
}

// hostOK says whether a request's Host names the listener's address or
// localhost: a page that reached the server under a name of its own (DNS
// rebinding) is refused even before its lack of a token.
func (g *guard) hostOK(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.Equal(g.hostIP)
}

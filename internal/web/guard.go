package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The view shows what a recording holds (command lines, paths, code,
// source) of every user's processes, and jitprof web often runs as root;
// a loopback address keeps other machines out, not the machine's other
// users, nor a web page in the user's own browser that sends requests to
// it (CSRF) or reads it under a name of its own (DNS rebinding). So the
// server answers only requests that carry a random token: the address
// jitprof web prints has it (/?t=TOKEN), and a request with it gets it
// back as a cookie that other sites' pages do not send (HttpOnly,
// SameSite=Strict) and is sent to the same address without it.

// tokenParam is the query parameter that carries the token.
const tokenParam = "t"

// newToken returns 128 random bits, in hex.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// guard passes on the requests that carry the token, in the query or in
// the cookie, and, when hostIP is set (a loopback listener), name that
// address or localhost as their host; it refuses the others (403).
type guard struct {
	next   http.Handler
	token  string
	cookie string // the cookie's name
	hostIP net.IP
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.hostIP != nil && !g.hostOK(r.Host) {
		http.Error(w, "jitprof web answers only for the address it listens on or localhost", http.StatusForbidden)
		return
	}
	if q := r.URL.Query(); q.Has(tokenParam) {
		if !g.valid(q.Get(tokenParam)) {
			http.Error(w, "jitprof web: wrong token", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		// The same address without the token, which then stays out of
		// the browser's history and of the pages' links.
		q.Del(tokenParam)
		to := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/"), RawQuery: q.Encode()}
		http.Redirect(w, r, to.RequestURI(), http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(g.cookie); err != nil || !g.valid(c.Value) {
		http.Error(w, "jitprof web: open the address jitprof web printed, which carries its token", http.StatusForbidden)
		return
	}
	g.next.ServeHTTP(w, r)
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

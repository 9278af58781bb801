package otlpsend

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

const token = "tok-5b2e93aa71"

var headers = []otlp.Attribute{{Key: "Authorization", Value: "Bearer " + token}}

// testBatch is a small profile's request, gzip-compressed, and its
// samples.
func testBatch(t *testing.T) ([]byte, int64) {
	t.Helper()
	b, err := otlp.Encode(profiletest.Sample(), otlp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes(), 11
}

// samplesOf decodes a request's samples and counts them.
func samplesOf(t *testing.T, raw []byte) int64 {
	t.Helper()
	ss, err := otlptest.DecodeRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := range ss {
		n += ss[i].Count()
	}
	return n
}

func rpcStatus(msg string) []byte {
	b, _ := proto.Marshal(&spb.Status{Code: int32(codes.Unauthenticated), Message: msg})
	return b
}

// TestHTTP: each response is sorted as the OTLP specification says, the
// request is what a Collector takes (gzip, protobuf, the headers), and
// no message shows the token, even when the server repeats it.
func TestHTTP(t *testing.T) {
	batch, samples := testBatch(t)
	type reply struct {
		status  int
		header  map[string]string
		body    []byte
		outcome delivery.Outcome
		after   time.Duration
		rej     int64
		msg     string
	}
	partial := pprofileotlp.NewExportResponse()
	partial.PartialSuccess().SetRejectedProfiles(2)
	partial.PartialSuccess().SetErrorMessage("2 profiles without samples")
	pb, _ := partial.MarshalProto()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	replies := []reply{
		{200, map[string]string{"Content-Type": "application/x-protobuf"}, nil, delivery.Sent, 0, 0, ""},
		{200, map[string]string{"Content-Type": "application/x-protobuf"}, pb, delivery.Sent, 0, 2, "2 profiles without samples"},
		{503, map[string]string{"Retry-After": "7"}, nil, delivery.Retry, 7 * time.Second, 0, "HTTP 503 Service Unavailable"},
		{429, map[string]string{"Retry-After": date}, nil, delivery.Retry, 90 * time.Second, 0, "HTTP 429"},
		{502, nil, nil, delivery.Retry, 0, 0, "HTTP 502"},
		{401, map[string]string{"Content-Type": "application/x-protobuf"}, rpcStatus("bad token Bearer " + token), delivery.Refused, 0, 0, "HTTP 401 Unauthorized from http://"},
		{403, map[string]string{"Content-Type": "text/plain"}, []byte("no entry for " + token), delivery.Refused, 0, 0, "no entry for [redacted]"},
		{400, map[string]string{"Content-Type": "application/x-protobuf"}, rpcStatus("bad profile"), delivery.Rejected, 0, 0, "bad profile"},
		{500, nil, nil, delivery.Rejected, 0, 0, "HTTP 500"},
	}
	var mu sync.Mutex
	next := 0
	var got []error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		rp := replies[next]
		next++
		mu.Unlock()
		check := func(ok bool, what string) {
			if !ok {
				mu.Lock()
				got = append(got, &checkError{what})
				mu.Unlock()
			}
		}
		check(r.Method == http.MethodPost && r.URL.Path == delivery.SignalPath, "method and path "+r.Method+" "+r.URL.Path)
		check(r.Header.Get("Authorization") == "Bearer "+token, "the Authorization header")
		check(r.Header.Get("Content-Type") == "application/x-protobuf" && r.Header.Get("Content-Encoding") == "gzip", "the content type and encoding")
		check(strings.HasPrefix(r.Header.Get("User-Agent"), "jitprof/"), "the user agent "+r.Header.Get("User-Agent"))
		zr, err := gzip.NewReader(r.Body)
		check(err == nil, "a gzip body")
		if err == nil {
			raw, _ := io.ReadAll(zr)
			check(samplesOf(t, raw) == samples, "the samples")
		}
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rp.status)
		w.Write(rp.body)
	}))
	defer srv.Close()
	c, err := New(delivery.Config{Endpoint: srv.URL + delivery.SignalPath, Protocol: delivery.ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}, headers, "v9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, rp := range replies {
		r := c.Export(context.Background(), batch)
		if r.Outcome != rp.outcome || r.RejectedProfiles != rp.rej || !strings.Contains(r.Message, rp.msg) {
			t.Errorf("HTTP %d: %+v, want %s with %q", rp.status, r, rp.outcome, rp.msg)
		}
		if rp.after != 0 && (r.After > rp.after || r.After < rp.after-2*time.Second) {
			t.Errorf("HTTP %d: after %v, want %v", rp.status, r.After, rp.after)
		}
		if strings.Contains(r.Message, token) {
			t.Errorf("HTTP %d: the message %q shows the token", rp.status, r.Message)
		}
	}
	for _, err := range got {
		t.Error(err)
	}
}

type checkError struct{ what string }

func (e *checkError) Error() string { return "the request's " + e.what + " is wrong" }

// profilesServer answers gRPC exports from a script.
type profilesServer struct {
	pprofileotlp.UnimplementedGRPCServer
	t       *testing.T
	mu      sync.Mutex
	replies []error
	partial bool
	bad     []string
}

func (s *profilesServer) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer "+token {
		s.bad = append(s.bad, "authorization")
	}
	if n := req.Profiles().SampleCount(); n == 0 {
		s.bad = append(s.bad, "no samples")
	}
	err := s.replies[0]
	s.replies = s.replies[1:]
	resp := pprofileotlp.NewExportResponse()
	if err == nil && s.partial {
		resp.PartialSuccess().SetRejectedProfiles(1)
		resp.PartialSuccess().SetErrorMessage("one dropped")
	}
	return resp, err
}

func withRetryInfo(code codes.Code, d time.Duration) error {
	st, _ := status.New(code, "later").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	return st.Err()
}

// TestGRPC: gRPC's codes are sorted as the OTLP specification says,
// RetryInfo is honoured, and the headers go as metadata.
func TestGRPC(t *testing.T) {
	batch, _ := testBatch(t)
	srv := &profilesServer{t: t, replies: []error{
		nil,
		withRetryInfo(codes.Unavailable, 3*time.Second),
		status.Error(codes.Unavailable, "down"),
		withRetryInfo(codes.ResourceExhausted, 2*time.Second),
		status.Error(codes.ResourceExhausted, "too big"),
		status.Error(codes.Unauthenticated, "who are you, "+token),
		status.Error(codes.PermissionDenied, "no"),
		status.Error(codes.InvalidArgument, "bad profile"),
	}}
	want := []delivery.Result{
		{Outcome: delivery.Sent},
		{Outcome: delivery.Retry, After: 3 * time.Second},
		{Outcome: delivery.Retry},
		{Outcome: delivery.Retry, After: 2 * time.Second},
		{Outcome: delivery.Rejected},
		{Outcome: delivery.Refused},
		{Outcome: delivery.Refused},
		{Outcome: delivery.Rejected},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pprofileotlp.RegisterGRPCServer(gs, srv)
	go gs.Serve(l)
	defer gs.Stop()
	c, err := New(delivery.Config{Endpoint: l.Addr().String(), Protocol: delivery.ProtocolGRPC, Insecure: true, Timeout: 10 * time.Second, Compression: "gzip"}, headers, "v9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, w := range want {
		r := c.Export(context.Background(), batch)
		if r.Outcome != w.Outcome || r.After != w.After {
			t.Errorf("reply %d: %+v, want %s after %v", i, r, w.Outcome, w.After)
		}
		if strings.Contains(r.Message, token) {
			t.Errorf("reply %d: the message %q shows the token", i, r.Message)
		}
	}
	srv.partial, srv.replies = true, []error{nil}
	if r := c.Export(context.Background(), batch); r.Outcome != delivery.Sent || r.RejectedProfiles != 1 || r.Message != "one dropped" {
		t.Errorf("a partial success: %+v", r)
	}
	if len(srv.bad) > 0 {
		t.Errorf("wrong in the requests: %v", srv.bad)
	}
	// A batch that is not a request is the batch's fault.
	if r := c.Export(context.Background(), []byte("not gzip")); r.Outcome != delivery.Rejected {
		t.Errorf("a broken batch: %+v", r)
	}
}

// pki is a CA, a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type pki struct {
	ca, cert, key string // files: the CA, the client's certificate and key
	otherCA       string // another CA's certificate
	server        tls.Certificate
	pool          *x509.CertPool // the CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	certify := func(tmpl *x509.Certificate, parent *x509.Certificate, pub, signer any) ([]byte, *x509.Certificate) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return der, c
	}
	p := &pki{pool: x509.NewCertPool()}
	caKey := newKey()
	caDER, ca := certify(&x509.Certificate{Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, &caKey.PublicKey, caKey)
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	p.pool.AddCert(ca)
	otherKey := newKey()
	otherDER, _ := certify(&x509.Certificate{Subject: pkix.Name{CommonName: "other CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, &otherKey.PublicKey, otherKey)
	p.otherCA = write("other.pem", "CERTIFICATE", otherDER)
	srvKey := newKey()
	srvDER, _ := certify(&x509.Certificate{Subject: pkix.Name{CommonName: "collector"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, &srvKey.PublicKey, caKey)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliKey := newKey()
	cliDER, _ := certify(&x509.Certificate{Subject: pkix.Name{CommonName: "jitprof"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, &cliKey.PublicKey, caKey)
	p.cert = write("client.pem", "CERTIFICATE", cliDER)
	keyDER, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.key = write("client-key.pem", "EC PRIVATE KEY", keyDER)
	return p
}

// TestTLS: a server that requires a client certificate takes the one
// given, with the CA given; without that CA, or without the client
// certificate, TLS refuses, which is a refusal, not a failure to retry.
func TestTLS(t *testing.T) {
	batch, _ := testBatch(t)
	p := newPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "jitprof" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	defer srv.Close()
	base := delivery.Config{Endpoint: srv.URL + delivery.SignalPath, Protocol: delivery.ProtocolHTTP, Timeout: 10 * time.Second, Compression: "gzip"}
	for _, c := range []struct {
		name          string
		ca, cert, key string
		want          delivery.Outcome
	}{
		{"CA and client certificate", p.ca, p.cert, p.key, delivery.Sent},
		{"the system's roots", "", p.cert, p.key, delivery.Refused},
		{"another CA", p.otherCA, p.cert, p.key, delivery.Refused},
		{"no client certificate", p.ca, "", "", delivery.Refused},
	} {
		cfg := base
		cfg.CA, cfg.Cert, cfg.Key = c.ca, c.cert, c.key
		cl, err := New(cfg, nil, "v9")
		if err != nil {
			t.Fatal(err)
		}
		if r := cl.Export(context.Background(), batch); r.Outcome != c.want {
			t.Errorf("%s: %+v, want %s", c.name, r, c.want)
		}
		cl.Close()
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": 0, "120": 2 * time.Minute, " 3 ": 3 * time.Second, "soon": 0,
		"Thu, 26 Nov 2026 12:00:30 GMT": 30 * time.Second, "Thu, 26 Nov 2026 11:00:00 GMT": 0} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

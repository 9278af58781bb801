package otlpsend

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/otlp"
)

// Client sends batches to one endpoint.
type Client struct {
	cfg     delivery.Config
	target  delivery.Target
	headers []otlp.Attribute
	redact  *delivery.Redactor
	agent   string

	http *http.Client
	conn *grpc.ClientConn
	grpc pprofileotlp.GRPCClient
}

// New returns a Client of cfg that sends headers; version is jitprof's,
// for the User-Agent.
func New(cfg delivery.Config, headers []otlp.Attribute, version string) (*Client, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	target, err := cfg.Target()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, target: target, headers: headers, redact: delivery.NewRedactor(headers), agent: "jitprof/" + version}
	var tc *tls.Config
	if target.TLS {
		if tc, err = tlsConfig(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Protocol == delivery.ProtocolHTTP {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		c.http = &http.Client{Transport: tr}
		return c, nil
	}
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	c.conn, err = grpc.NewClient(target.Host, grpc.WithTransportCredentials(creds), grpc.WithUserAgent(c.agent))
	if err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	c.grpc = pprofileotlp.NewGRPCClient(c.conn)
	return c, nil
}

// tlsConfig trusts cfg.CA's certificates, else the system's, and
// presents cfg.Cert.
func tlsConfig(cfg delivery.Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CA != "" {
		pem, err := os.ReadFile(cfg.CA)
		if err != nil {
			return nil, fmt.Errorf("otlp: CA certificates: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlp: CA certificates: no PEM certificate in %s", cfg.CA)
		}
	}
	if cfg.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("otlp: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	if c.conn != nil {
		return c.conn.Close()
	}
	c.http.CloseIdleConnections()
	return nil
}

// Export makes one attempt at sending batch, a gzip-compressed
// ExportProfilesServiceRequest, within cfg.Timeout.
func (c *Client) Export(ctx context.Context, batch []byte) delivery.Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var r delivery.Result
	if c.conn != nil {
		r = c.exportGRPC(ctx, batch)
	} else {
		r = c.exportHTTP(ctx, batch)
	}
	r.Message = c.clean(r.Message)
	return r
}

// clean makes a message fit to show: no header value, no control
// characters, and not too long.
func (c *Client) clean(s string) string {
	s = c.redact.Redact(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, delivery.MaxBatch+1))
	if err == nil && len(out) > delivery.MaxBatch {
		err = fmt.Errorf("over %d bytes uncompressed", delivery.MaxBatch)
	}
	return out, err
}

// maxBody bounds what is read of a response.
const maxBody = 64 << 10

func (c *Client) exportHTTP(ctx context.Context, batch []byte) delivery.Result {
	body := batch
	if c.cfg.Compression == "none" {
		var err error
		if body, err = gunzip(batch); err != nil {
			return delivery.Result{Outcome: delivery.Rejected, Message: fmt.Sprintf("the batch does not decompress: %v", err)}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target.URL.String(), bytes.NewReader(body))
	if err != nil {
		return delivery.Result{Outcome: delivery.Rejected, Message: err.Error()}
	}
	for _, h := range c.headers {
		req.Header.Set(h.Key, h.Value)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", c.agent)
	if c.cfg.Compression == "gzip" {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if trustError(err) {
			return delivery.Result{Outcome: delivery.Refused, Message: err.Error()}
		}
		// Not reached, refused, reset, timed out: all may pass.
		return delivery.Result{Outcome: delivery.Retry, Message: err.Error()}
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode/100 == 2 {
		if err != nil {
			return delivery.Result{Outcome: delivery.Retry, Message: fmt.Sprintf("reading the response: %v", err)}
		}
		out := pprofileotlp.NewExportResponse()
		if len(rb) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			if err := out.UnmarshalProto(rb); err != nil {
				// Sent, as the status says, with an answer not understood.
				return delivery.Result{Outcome: delivery.Sent, Message: fmt.Sprintf("a response that does not decode: %v", err)}
			}
		}
		ps := out.PartialSuccess()
		return delivery.Result{Outcome: delivery.Sent, RejectedProfiles: ps.RejectedProfiles(), Message: ps.ErrorMessage()}
	}
	msg := fmt.Sprintf("HTTP %s from %s", resp.Status, c.target.URL.Redacted())
	if why := httpMessage(resp.Header.Get("Content-Type"), rb); why != "" {
		msg += ": " + why
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return delivery.Result{Outcome: delivery.Retry, After: retryAfter(resp.Header.Get("Retry-After"), time.Now()), Message: msg}
	case http.StatusUnauthorized, http.StatusForbidden:
		return delivery.Result{Outcome: delivery.Refused, Message: msg}
	}
	return delivery.Result{Outcome: delivery.Rejected, Message: msg}
}

// trustError reports whether err is TLS refusing one side's
// certificate, or its absence: not a failure that passes with time, but
// one that is fixed as refused credentials are (delivery.Refused).
func trustError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return true
	}
	// The server's alert, which crypto/tls gives as a net.OpError of op
	// "remote error": those of RFC 8446 section 6.2 about certificates
	// (bad_certificate to unknown_ca, certificate_required) and
	// access_denied.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" && op.Err != nil {
		a := op.Err.Error()
		return strings.HasPrefix(a, "tls: ") && (strings.Contains(a, "certificate") || strings.Contains(a, "access denied"))
	}
	return false
}

// httpMessage is what an error response's body says: the message of a
// google.rpc.Status (OTLP/HTTP's error body), or the start of a text.
func httpMessage(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/x-protobuf") {
		var st spb.Status
		if proto.Unmarshal(body, &st) == nil {
			return st.GetMessage()
		}
		return ""
	}
	if strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "application/json") {
		return strings.TrimSpace(string(body[:min(len(body), 256)]))
	}
	return ""
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date; 0
// when there is none or it is not one.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (c *Client) exportGRPC(ctx context.Context, batch []byte) delivery.Result {
	raw, err := gunzip(batch)
	if err != nil {
		return delivery.Result{Outcome: delivery.Rejected, Message: fmt.Sprintf("the batch does not decompress: %v", err)}
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		return delivery.Result{Outcome: delivery.Rejected, Message: fmt.Sprintf("the batch does not decode: %v", err)}
	}
	md := metadata.MD{}
	for _, h := range c.headers {
		md.Set(strings.ToLower(h.Key), h.Value)
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	var opts []grpc.CallOption
	if c.cfg.Compression == "gzip" {
		opts = append(opts, grpc.UseCompressor(grpcgzip.Name))
	}
	resp, err := c.grpc.Export(ctx, req, opts...)
	if err == nil {
		ps := resp.PartialSuccess()
		return delivery.Result{Outcome: delivery.Sent, RejectedProfiles: ps.RejectedProfiles(), Message: ps.ErrorMessage()}
	}
	st := status.Convert(err)
	msg := fmt.Sprintf("gRPC %s from %s: %s", st.Code(), c.target.Host, st.Message())
	var after time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			after = ri.GetRetryDelay().AsDuration()
		}
	}
	if st.Code() == codes.Unavailable && strings.Contains(st.Message(), "authentication handshake failed") {
		// gRPC says no more of TLS refusing the other side.
		return delivery.Result{Outcome: delivery.Refused, Message: msg}
	}
	// https://opentelemetry.io/docs/specs/otlp/#failures
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return delivery.Result{Outcome: delivery.Retry, After: after, Message: msg}
	case codes.ResourceExhausted:
		// Retryable only when the server says when.
		if after > 0 {
			return delivery.Result{Outcome: delivery.Retry, After: after, Message: msg}
		}
	case codes.Unauthenticated, codes.PermissionDenied:
		return delivery.Result{Outcome: delivery.Refused, Message: msg}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return delivery.Result{Outcome: delivery.Retry, Message: msg}
	}
	return delivery.Result{Outcome: delivery.Rejected, Message: msg}
}

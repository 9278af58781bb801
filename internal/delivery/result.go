package delivery

import (
	"fmt"
	"time"
)

// Outcome is how an attempt to send a batch ended.
type Outcome int

// The outcomes, as the OTLP specification sorts responses
// (https://opentelemetry.io/docs/specs/otlp/#failures).
const (
	// Sent: the Collector took the batch, perhaps in part (a partial
	// success).
	Sent Outcome = iota
	// Retry: a failure that may pass (the Collector unreachable, busy,
	// throttling: HTTP 429, 502, 503, 504, gRPC UNAVAILABLE and the
	// other retryable codes): the batch is sent again later.
	Retry
	// Refused: the credentials were refused (HTTP 401 and 403, gRPC
	// UNAUTHENTICATED and PERMISSION_DENIED). The specification does
	// not retry; the batch is kept, and tried again slowly, so that
	// fixing the token loses nothing the spool still holds.
	Refused
	// Rejected: the batch itself was refused (HTTP 400, 413, gRPC
	// INVALID_ARGUMENT, ...): sending it again cannot help, and it is
	// dropped and counted.
	Rejected
)

var outcomes = []string{"sent", "retry", "refused", "rejected"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomes) {
		return outcomes[o]
	}
	return fmt.Sprintf("outcome %d", int(o))
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) {
	if o < 0 || int(o) >= len(outcomes) {
		return nil, fmt.Errorf("outcome %d", int(o))
	}
	return []byte(outcomes[o]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, s := range outcomes {
		if string(b) == s {
			*o = Outcome(i)
			return nil
		}
	}
	return fmt.Errorf("unknown outcome")
}

// Result is how an attempt to send a batch went.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// After is how long the server asked the client to wait before it
	// tries again (Retry-After, RetryInfo); 0 when it did not say.
	After time.Duration `json:"after,omitempty"`
	// RejectedProfiles are the profiles a partial success says the
	// Collector rejected.
	RejectedProfiles int64 `json:"rejected_profiles,omitempty"`
	// Message is what went wrong, or a partial success's message; it
	// never holds a header's value.
	Message string `json:"message,omitempty"`
}

// Err is the error a Result stands for: nil for a batch sent whole.
func (r Result) Err() error {
	switch {
	case r.Outcome == Sent && r.RejectedProfiles == 0:
		return nil
	case r.Outcome == Sent:
		return fmt.Errorf("the Collector rejected %d profiles of the batch: %s", r.RejectedProfiles, r.Message)
	case r.Outcome == Refused:
		return fmt.Errorf("the Collector refused the credentials: %s", r.Message)
	case r.Outcome == Rejected:
		return fmt.Errorf("the Collector rejected the batch: %s", r.Message)
	}
	return fmt.Errorf("%s", r.Message)
}

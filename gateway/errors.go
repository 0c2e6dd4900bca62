package gateway

import (
	"fmt"
	"time"
)

// Error codes the gateway returns. They are the stable `code` of the
// problem+json body; the HTTP layer maps each to a status in one table.
const (
	CodeInvalid       = "invalid_signal"
	CodeDuplicate     = "duplicate"
	CodeInProgress    = "in_progress"
	CodeKeyReused     = "key_reused"
	CodeOrderRejected = "order_rejected"
	CodeUnavailable   = "unavailable"
	CodeKillSwitch    = "kill_switch"
)

// Error is a signal's refusal with a stable code. Detail is safe to show the
// sender; Err, when set, is the internal cause, for logs only.
type Error struct {
	Code       string
	Detail     string
	RetryAfter time.Duration
	// Original is the first attempt's outcome, for duplicates and key reuse.
	Original *Original
	// Outcome is set when the refusal still produced a recorded outcome (a
	// rejected order).
	Outcome *Outcome
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.Err)
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

func invalid(field, msg string) *Error {
	return &Error{Code: CodeInvalid, Detail: field + ": " + msg}
}

func unavailable(detail string, retryAfter time.Duration, err error) *Error {
	return &Error{Code: CodeUnavailable, Detail: detail, RetryAfter: retryAfter, Err: err}
}

package gateway

import (
	"fmt"
	"time"

	"github.com/hoox/hoox/internal/codes"
)

// Error is a signal's refusal with a stable code (package codes). Detail is safe to show the
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
	return &Error{Code: codes.InvalidSignal, Detail: field + ": " + msg}
}

func unavailable(detail string, retryAfter time.Duration, err error) *Error {
	return &Error{Code: codes.Unavailable, Detail: detail, RetryAfter: retryAfter, Err: err}
}

package venuekit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hoox/hoox/exchange"
)

// Class is what an answer from a venue means for the order: the gateway's
// branch (reject, adopt, reconcile, roll back) follows from it. The words
// are the ones the venues' docs tables use.
type Class string

// The classes every adapter's error table maps onto.
const (
	// ClassRejected is a refusal for good: the venue keeps nothing, the
	// signal gets 422 order_rejected with the venue's message.
	ClassRejected Class = "rejected"
	// ClassFilter is a ClassRejected refusal by a lot-size, tick or
	// notional filter: the symbol's cached filters are dropped.
	ClassFilter Class = "rejected (filter)"
	// ClassDuplicate means the venue holds an order under the client order
	// ID: look it up and adopt it.
	ClassDuplicate Class = "duplicate"
	// ClassUnknown means the order may exist: reconcile by lookup. For a
	// request that places nothing (APIError.MayExist false) it means
	// nothing was placed.
	ClassUnknown Class = "unknown outcome"
	// ClassUnreachable means nothing was placed: roll back, retry later.
	ClassUnreachable Class = "unreachable"
	// ClassRateLimited is ClassUnreachable that also pauses requests.
	ClassRateLimited Class = "rate limited"
	// ClassTimestamp is ClassUnreachable that also resyncs server time.
	ClassTimestamp Class = "timestamp"
	// ClassCredentials is ClassUnreachable that the operator must fix.
	ClassCredentials Class = "credentials"
	// ClassNotFound answers a lookup: no such order.
	ClassNotFound Class = "not found"
	// ClassArchived answers a lookup: the order existed, ended with nothing
	// executed, and the venue archived it. Never "not found".
	ClassArchived Class = "archived"
)

// APIError is one failed request to a venue: the venue's own error answer,
// an HTTP status without the venue's body, or an answer that never came.
// It unwraps to the exchange errors its class stands for, so the gateway
// branches with errors.Is; refusals for good unwrap to nothing (the
// adapter turns them into a rejected Report).
type APIError struct {
	// Venue names the venue in messages: "binance", "bybit", …
	Venue string
	// Path is the endpoint.
	Path string
	// HTTPStatus is 0 when no answer came.
	HTTPStatus int
	// Code and Msg are the venue's error code and message (0 and a
	// description when the venue's body was not there).
	Code int
	Msg  string
	// Class says what the answer means.
	Class Class
	// MayExist marks a request whose unknown outcome may have left an
	// order (a placement): ClassUnknown then unwraps to
	// exchange.ErrUnknownOutcome, else to exchange.ErrUnreachable.
	MayExist bool
}

func (e *APIError) Error() string {
	msg := e.Venue + " " + e.Path
	if e.HTTPStatus != 0 {
		msg += ": http " + strconv.Itoa(e.HTTPStatus)
	}
	if e.Code != 0 {
		msg += fmt.Sprintf(": code %d %q", e.Code, e.Msg)
	} else if e.Msg != "" {
		msg += ": " + e.Msg
	}
	return msg + " (" + string(e.Class) + ")"
}

// Unwrap maps the class onto the exchange errors.
func (e *APIError) Unwrap() []error {
	switch e.Class {
	case ClassDuplicate:
		return []error{exchange.ErrDuplicateClientOrderID}
	case ClassUnknown:
		if e.MayExist {
			return []error{exchange.ErrUnknownOutcome}
		}
		return []error{exchange.ErrUnreachable}
	case ClassUnreachable, ClassRateLimited, ClassTimestamp:
		return []error{exchange.ErrUnreachable}
	case ClassCredentials:
		return []error{exchange.ErrUnreachable, exchange.ErrCredentials}
	case ClassNotFound:
		return []error{exchange.ErrNotFound}
	}
	return nil
}

// Refused reports whether the answer refuses the order for good.
func (e *APIError) Refused() bool {
	return e.Class == ClassRejected || e.Class == ClassFilter
}

// TraceWrites marks ctx so that wrote reports whether the transport began
// writing the request: after its headers, or once it reports the request
// written, with or without an error. A write that failed part-way still
// sent whatever went before the failure, and what reached the venue is not
// known; only a request that never got that far is known not to have
// reached it.
func TraceWrites(ctx context.Context) (_ context.Context, wrote func() bool) {
	var w atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { w.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { w.Store(true) },
	})
	return ctx, w.Load
}

// Lost is the error for a request whose answer never arrived (or was cut
// off): unknown once written (for a placement, the order may exist),
// nothing sent otherwise.
func Lost(venue, path string, mayExist, wrote bool, cause string) *APIError {
	e := &APIError{Venue: venue, Path: path, Msg: cause, Class: ClassUnreachable, MayExist: mayExist}
	if wrote {
		e.Class = ClassUnknown
	}
	return e
}

// Bare classifies an HTTP error status that came without the venue's own
// error body: a proxy, a gateway or a firewall answered, after the request
// was written, so whatever the venue did with it is unknown — unless the
// venue documents that status as a refusal before its API (doorStatuses),
// where nothing was placed.
func Bare(status int, doorStatuses ...int) Class {
	for _, s := range doorStatuses {
		if status == s {
			return ClassUnreachable
		}
	}
	return ClassUnknown
}

// RetryAfter reads a Retry-After header in seconds, or def.
func RetryAfter(h http.Header, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// Poll waits 25 ms, doubling to 400 ms, before each call of try, until try
// reports done or the pauses would pass wait or ctx's deadline. It returns
// ctx's error when ctx ended, else nil (done or out of time: the caller
// knows which from try).
func Poll(ctx context.Context, wait time.Duration, try func() (done bool)) error {
	pause, waited := 25*time.Millisecond, time.Duration(0)
	for {
		if waited+pause > wait {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pause {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		waited += pause
		pause = min(2*pause, 400*time.Millisecond)
		if try() {
			return nil
		}
	}
}

package venuekit

import (
	"context"
	"fmt"
	"time"

	"github.com/hoox/hoox/exchange"
)

// Steps are one adapter's Place, in the order every adapter takes them:
// validate (what is refused without asking the venue), stamp (the
// venue's time at Place's start, which the order's expiry runs from),
// prepare (filters, close resolution, rounding, minimums, leverage) and
// send. What a failure means stays the adapter's: Stamp and Prepare
// return errors as the adapter words them, and Failed maps Prepare's.
type Steps[O any] struct {
	Validate func() (reason string)
	Stamp    func(ctx context.Context) (time.Time, error)
	Prepare  func(ctx context.Context) (out O, reason string, err error)
	// Failed is Place's answer when Prepare fails: a refusal for good may
	// be a rejected Report on one venue and an error on another.
	Failed func(err error) (exchange.Report, error)
	Send   func(ctx context.Context, out O, stamp time.Time) (exchange.Report, error)
}

// Place drives s: a reason from Validate or Prepare is a rejected Report
// with a nil error; the order is sent once, stamped before the reads.
func Place[O any](ctx context.Context, s Steps[O]) (exchange.Report, error) {
	if reason := s.Validate(); reason != "" {
		return Rejected(reason), nil
	}
	stamp, err := s.Stamp(ctx)
	if err != nil {
		return exchange.Report{}, err
	}
	out, reason, err := s.Prepare(ctx)
	if err != nil {
		return s.Failed(err)
	}
	if reason != "" {
		return Rejected(reason), nil
	}
	return s.Send(ctx, out, stamp)
}

// Rejected is the Report of an order refused for good, with why.
func Rejected(reason string) exchange.Report {
	return exchange.Report{Status: exchange.StatusRejected, Reason: reason}
}

// BeforeSend is called by an adapter's request function right before it
// sends a request: for a placement (a request that can create an order or
// an exit) it first runs the caller's send guard when this Place already
// sent something (exchange.CheckSendGuard), and sends nothing on its
// error; then it notes the request. The error names the venue and path and
// wraps the guard's (exchange.ErrUnreachable, and why).
func BeforeSend(ctx context.Context, venue, path string, placement bool) error {
	if placement {
		if err := exchange.CheckSendGuard(ctx); err != nil {
			return fmt.Errorf("%s %s: not sent: %w", venue, path, err)
		}
	}
	exchange.NoteRequest(ctx)
	return nil
}

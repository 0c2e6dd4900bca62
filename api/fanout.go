package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// target is one account a signal goes to, with its venue kind.
type target struct {
	account, venue string
	trace          signal.Trace
}

// targets resolves the accounts a signal names (signal.Signal.Accounts;
// the exchange's default account when none) against the configured ones,
// and derives each one's trace. An account implies its venue: exchange may
// be left out beside account(s), and when it is given, each account must
// trade on the venue it names (an account name there counts as its venue);
// a contradiction, an account not configured, or a fan-out with neither
// key nor timestamp (a window trace, which its resend would outlive) is a
// 400 invalid_signal and nothing is executed.
func (s *Server) targets(sig signal.Signal, headerKey string, now time.Time) ([]target, error) {
	reg := s.deps.Venues
	venueOf := func(name string) (string, bool) {
		if reg == nil {
			return "", false
		}
		return reg.VenueOf(name)
	}
	if sig.Accounts == nil {
		// exchange alone: a venue's default account, or a named account
		// (the same unit as "account" naming it). One that is not
		// configured is the gateway's refusal, as before.
		venue, ok := venueOf(sig.Exchange)
		if !ok {
			venue = sig.Exchange
		}
		tr, err := signal.DeriveAccountTrace(sig, sig.Exchange, venue, headerKey, now)
		if err != nil {
			return nil, invalidSignal(err)
		}
		return []target{{account: sig.Exchange, venue: venue, trace: tr}}, nil
	}
	field := signal.FieldAccount
	if sig.FanOut {
		field = signal.FieldAccounts
	}
	want := ""
	if sig.Exchange != "" {
		want = sig.Exchange
		if v, ok := venueOf(sig.Exchange); ok {
			want = v
		}
	}
	out := make([]target, 0, len(sig.Accounts))
	for _, a := range sig.Accounts {
		venue, ok := venueOf(a)
		if !ok {
			var names []string
			if reg != nil {
				names = reg.Names()
			}
			return nil, problem(codes.InvalidSignal, fmt.Sprintf("%s: %q is not a configured account (configured: %s)", field, a, strings.Join(names, ", ")))
		}
		if want != "" && venue != want {
			return nil, problem(codes.InvalidSignal, fmt.Sprintf("%s: account %q trades on %s, but exchange says %s; leave exchange out or name accounts on %s",
				field, a, venue, want, want))
		}
		tr, err := signal.DeriveAccountTrace(sig, a, venue, headerKey, now)
		if err != nil {
			return nil, invalidSignal(err)
		}
		// Two targets on one trace would share its lock key and client
		// order IDs, and the second would be refused as the first's
		// key_reused, never executed. Only a client key over the default
		// accounts of two venues does it (a default account's trace is the
		// signal's own, and a client key's names no venue): refused whole,
		// before anything executes.
		for _, o := range out {
			if o.trace.LockKey == tr.LockKey {
				return nil, problem(codes.InvalidSignal, fmt.Sprintf(
					"%s: %q and %q would share the trace %s (a client key names no venue, and each is its venue's default account): "+
						"name accounts configured in HOOX_ACCOUNTS, or send each venue its own signal with its own key", field, o.account, a, tr.ID))
			}
		}
		out = append(out, target{account: a, venue: venue, trace: tr})
	}
	// Every target's trace has the signal's key source. A fan-out's 503
	// asks for the whole signal again, its accounts already executed
	// answering as repeats: a window trace is a repeat only for
	// HOOX_DEDUP_WINDOW, so a resend after it (a kill switch's
	// Retry-After is 60 s) would place again on every account that had
	// placed. Refused whole, before anything executes.
	if sig.FanOut && out[0].trace.Source == signal.KeyWindow {
		return nil, problem(codes.InvalidSignal, fmt.Sprintf(
			`%s: a fan-out needs trace_id or timestamp (e.g. "timestamp": "{{timenow}}", or an %s header): `+
				"its resend must find the accounts already executed, and a signal with neither is a repeat only inside the dedup window; nothing was executed",
			field, signal.HeaderIdempotencyKey))
	}
	return out, nil
}

// fanOutResponse is the body of a fan-out ("accounts": [...]) answered
// 200 or 202: each account's own answer, in the order sent.
type fanOutResponse struct {
	ReceivedAt time.Time       `json:"received_at"`
	Accounts   []accountAnswer `json:"accounts"`
}

// fanOutProblem is a fan-out answered with a 4xx or 5xx: the problem of
// the whole (fanOutStatus) and each account's own answer.
type fanOutProblem struct {
	*Problem
	Accounts []accountAnswer `json:"accounts"`
}

// accountAnswer is what one account answered: the status and body the
// same signal sent with "account" alone would have had.
type accountAnswer struct {
	Account string `json:"account"`
	Venue   string `json:"venue"`
	// Status is the account's own HTTP status (200, 202, 409, 422, 503, …).
	Status  int    `json:"status"`
	TraceID string `json:"trace_id"`
	// Result is set for 200 and 202, Problem for a refusal.
	Result  *signalResponse `json:"result,omitempty"`
	Problem *Problem        `json:"problem,omitempty"`
	// retryAfter is the refusal's Retry-After, for the whole answer's.
	retryAfter time.Duration
}

// executed is one account's Execute result.
type executed struct {
	out *gateway.Outcome
	err error
}

// fanOut executes sig on every target at once, so one account's refusal
// or outage (or slow venue) does not hold the others back, and answers
// with each account's outcome under the status fanOutStatus picks.
func (s *Server) fanOut(c echo.Context, sig signal.Signal, targets []target, ip netip.Addr, start time.Time) error {
	ctx := c.Request().Context()
	results := make([]executed, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.executeOne(ctx, gateway.Input{Signal: sig.ForAccount(t.account), Trace: t.trace, SourceIP: ip, Arrived: start})
		}()
	}
	wg.Wait()

	answers := make([]accountAnswer, len(targets))
	for i, t := range targets {
		a := accountAnswer{Account: t.account, Venue: t.venue, TraceID: t.trace.ID}
		if r := results[i]; r.err != nil {
			// problemFor logs the cause as the single answer would.
			p := problemFor(c, s.deps.Logger, r.err)
			a.Status, a.Problem, a.retryAfter = p.Status, p, p.RetryAfter
		} else {
			a.Status = http.StatusOK
			if r.out.Status == db.TraceReconciling {
				a.Status = http.StatusAccepted
			}
			a.TraceID = r.out.TraceID
			a.Result = &signalResponse{TraceID: r.out.TraceID, Status: string(r.out.Status), ReceivedAt: r.out.ReceivedAt.UTC(), Order: newOrderDTO(r.out.Order),
				Orders: ordersDTO(r.out.Order, r.out.Legs), Attached: attachedWithLegs(r.out.Order, r.out.Legs),
				Cancelled: newOrderDTOs(r.out.Cancelled)}
		}
		answers[i] = a
	}
	c.Response().Header().Del(echo.HeaderRetryAfter)
	status, p := fanOutStatus(answers)
	if p == nil {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(status)
		return writeJSON(c.Response(), fanOutResponse{ReceivedAt: start.UTC(), Accounts: answers})
	}
	p.Instance = c.Request().URL.Path
	if p.RetryAfter > 0 {
		c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	c.Response().WriteHeader(status)
	return writeJSON(c.Response(), fanOutProblem{Problem: p, Accounts: answers})
}

// executeOne runs one account's Execute; a panic is that account's
// internal error, not the process's end (the claim rolls back on its own).
func (s *Server) executeOne(ctx context.Context, in gateway.Input) (r executed) {
	defer func() {
		if v := recover(); v != nil {
			r = executed{err: fmt.Errorf("account %s: panic: %v", in.Signal.Exchange, v)}
		}
	}()
	out, err := s.deps.Gateway.Execute(ctx, in)
	return executed{out: out, err: err}
}

// fanOutStatus is the whole answer's status, chosen so that a sender that
// resends on a 5xx resends exactly when some account still needs it, and
// a resend places only what is missing (the others answer as repeats):
//
//   - 503 when any account answered 5xx (nothing placed there: venue or
//     database unreachable, kill switch, shutting down), with the longest
//     Retry-After: kill_switch when every such account was halted, else
//     unavailable;
//   - else 200 when any account placed (200), 202 when the rest of the
//     placed ones are reconciling;
//   - else every account refused: their common status and code when they
//     agree (all repeats: 409 duplicate), 409 in_progress when all are 409s
//     and one is still running, else 422 accounts_refused.
//
// The problem is nil for a 2xx.
func fanOutStatus(answers []accountAnswer) (int, *Problem) {
	var (
		retry             time.Duration
		unavailable       int
		placed, accepted  int
		sameCode          = true
		allConflict       = true
		firstCode         string
		anyInProgress     bool
		refusedOrRepeated int
	)
	for i, a := range answers {
		switch {
		case a.Status >= 500:
			unavailable++
			retry = max(retry, a.retryAfter)
		case a.Status == http.StatusOK:
			placed++
		case a.Status == http.StatusAccepted:
			accepted++
		default:
			refusedOrRepeated++
		}
		if a.Problem != nil {
			if i == 0 || firstCode == "" {
				firstCode = a.Problem.Code
			}
			if a.Problem.Code != firstCode {
				sameCode = false
			}
			if a.Status != http.StatusConflict {
				allConflict = false
			}
			if a.Problem.Code == codes.InProgress {
				anyInProgress = true
				retry = max(retry, a.retryAfter)
			}
		} else {
			sameCode, allConflict = false, false
		}
	}
	n := len(answers)
	switch {
	case unavailable > 0:
		// The 5xx accounts' own code when they share it (kill_switch: all
		// halted), else unavailable.
		code := ""
		for _, a := range answers {
			switch {
			case a.Status < 500 || a.Problem == nil:
			case code == "":
				code = a.Problem.Code
			case code != a.Problem.Code:
				code = codes.Unavailable
			}
		}
		if statusOf[code] != http.StatusServiceUnavailable {
			code = codes.Unavailable
		}
		// Neutral about what those accounts placed: an account's 503 may
		// say its order was sent but not recorded, or that an earlier
		// attempt's may exist; its own problem says which.
		p := problem(code, fmt.Sprintf("%d of %d accounts did not finish: resend the signal (accounts already executed answer as repeats, and a resend adopts any order sent but not recorded); each account's own answer says whether an order may exist", unavailable, n))
		p.RetryAfter = max(retry, time.Second)
		return p.Status, p
	case placed > 0:
		return http.StatusOK, nil
	case accepted > 0:
		return http.StatusAccepted, nil
	case allConflict && anyInProgress:
		// Before sameCode: every account in progress is an in_progress
		// too, and an in_progress always carries its Retry-After.
		p := problem(codes.InProgress, "some accounts' first attempts are still running; resend to learn their outcome").
			withRetryAfter(max(retry, time.Second))
		return p.Status, p
	case sameCode:
		p := problem(firstCode, fmt.Sprintf("every account answered %s: see accounts", firstCode))
		return p.Status, p
	}
	p := problem(codes.AccountsRefused, fmt.Sprintf("no account placed an order: %d refused or repeated, each for its reason in accounts", refusedOrRepeated))
	return p.Status, p
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
)

// adminTrace is a trace as the admin API shows it.
type adminTrace struct {
	TraceID   string `json:"trace_id"`
	Status    string `json:"status"`
	Mode      string `json:"mode"`
	KeySource string `json:"key_source"`
	Exchange  string `json:"exchange"`
	// Account is the account the trace executed on: a named account, or
	// the venue's name for its default account. It is the exchange
	// column, under the name a fan-out's answer uses.
	Account       string          `json:"account"`
	Symbol        string          `json:"symbol"`
	Action        string          `json:"action"`
	Fingerprint   string          `json:"fingerprint"`
	OrderID       *string         `json:"order_id"`
	ClientOrderID *string         `json:"client_order_id"`
	SourceIP      *string         `json:"source_ip"`
	SignalTime    *time.Time      `json:"signal_time"`
	ReceivedAt    time.Time       `json:"received_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	Signal        json.RawMessage `json:"signal,omitempty"`
}

func newAdminTrace(t db.TraceRow) adminTrace {
	a := adminTrace{TraceID: t.TraceID, Status: string(t.Status), Mode: t.Mode, KeySource: t.KeySource, Exchange: t.Exchange, Account: t.Exchange,
		Symbol: t.Symbol, Action: t.Action, Fingerprint: t.Fingerprint, ClientOrderID: t.ClientOrderID,
		SourceIP: t.SourceIP, SignalTime: utc(t.SignalTime), ReceivedAt: t.ReceivedAt.UTC(),
		UpdatedAt: t.UpdatedAt.UTC(), ExpiresAt: t.ExpiresAt.UTC(), Signal: t.Signal}
	if t.OrderID != nil {
		id := t.OrderID.String()
		a.OrderID = &id
	}
	return a
}

// adminEvent is one audit event.
type adminEvent struct {
	ID       int64           `json:"id"`
	Event    string          `json:"event"`
	At       time.Time       `json:"at"`
	SourceIP *string         `json:"source_ip"`
	Detail   json.RawMessage `json:"detail"`
}

// tracesPage is GET /admin/traces: next_cursor is null on the last page.
type tracesPage struct {
	Traces     []adminTrace `json:"traces"`
	NextCursor *string      `json:"next_cursor"`
}

// listTraces pages through trace_ids newest first.
func (a *Admin) listTraces(c echo.Context) error {
	rows, next, err := listTraceRows(c.Request().Context(), a.db(), c.QueryParams())
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, tracesPage{Traces: items(rows, newAdminTrace), NextCursor: next})
}

// traceDetail is GET /admin/traces/{trace_id}. Trace is null once the trace
// was purged or released; its orders and events remain.
type traceDetail struct {
	TraceID string       `json:"trace_id"`
	Trace   *adminTrace  `json:"trace"`
	Orders  []adminOrder `json:"orders"`
	Events  []adminEvent `json:"events"`
}

// traceIDParam reads the trace ID from the wildcard. Echo routes on the raw
// path when the URL has escapes Go would not produce itself (such as %2F or
// %3A), and then hands the value over still escaped.
func traceIDParam(c echo.Context) (string, error) {
	id := c.Param("*")
	if c.Request().URL.RawPath != "" {
		u, err := url.PathUnescape(id)
		if err != nil {
			return "", problem(codes.InvalidRequest, "trace ID is not a valid escaped path segment")
		}
		id = u
	}
	return id, checkTraceID(id)
}

// checkTraceID refuses a trace ID no trace can have: empty, too long, or
// text Postgres cannot store (see storable), which would otherwise fail the
// query as an internal error.
func checkTraceID(id string) error {
	if id == "" || len(id) > 512 {
		return problem(codes.InvalidRequest, "trace ID is missing or too long")
	}
	if !storable(id) {
		return problem(codes.InvalidRequest, "trace ID must be valid UTF-8 without control characters")
	}
	return nil
}

// getTrace shows everything recorded about one trace ID.
func (a *Admin) getTrace(c echo.Context) error {
	id, err := traceIDParam(c)
	if err != nil {
		return err
	}
	if err := checkQuery(c); err != nil {
		return err
	}
	d, err := db.GetTrace(c.Request().Context(), a.db(), id)
	if errors.Is(err, db.ErrNotFound) {
		return problem(codes.NotFound, fmt.Sprintf("nothing is recorded under trace %s", id))
	}
	if err != nil {
		return err
	}
	out := traceDetail{TraceID: id, Orders: make([]adminOrder, 0, len(d.Orders)), Events: make([]adminEvent, 0, len(d.Events))}
	if d.Trace != nil {
		t := newAdminTrace(*d.Trace)
		out.Trace = &t
	}
	for _, o := range d.Orders {
		out.Orders = append(out.Orders, newAdminOrder(o))
	}
	for _, e := range d.Events {
		out.Events = append(out.Events, adminEvent{ID: e.ID, Event: e.Event, At: e.At.UTC(), SourceIP: e.SourceIP, Detail: e.Detail})
	}
	return adminJSON(c, http.StatusOK, out)
}

// releaseRequest is DELETE /admin/traces/{trace_id}'s optional body.
type releaseRequest struct {
	Reason string `json:"reason"`
	// ReceivedAt, when given, names the claim to release: the trace's
	// received_at as GET showed it. A trace released and claimed again
	// since is then refused (409 trace_changed), not released.
	ReceivedAt *time.Time `json:"received_at"`
}

// releaseResponse confirms a release.
type releaseResponse struct {
	TraceID string `json:"trace_id"`
	// Status is what the trace was when released.
	Status   string `json:"status"`
	Released bool   `json:"released"`
}

// releaseTrace frees a trace ID so the same signal executes again, waiting
// at most lockWait (HOOX_LOCK_WAIT) for an attempt in flight.
func (a *Admin) releaseTrace(lockWait time.Duration) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := traceIDParam(c)
		if err != nil {
			return err
		}
		// ?force=true releases a trace whose order may exist at the venue,
		// once the operator has checked it there; audited as forced. Any
		// other spelling is refused, never read as "not forced".
		if err := checkQuery(c, "force"); err != nil {
			return err
		}
		var force bool
		switch v := c.QueryParam("force"); v {
		case "", "false":
		case "true":
			force = true
		default:
			return invalidParam("force", "must be true or false")
		}
		var req releaseRequest
		if err := decodeAdminBody(c, &req, false); err != nil {
			return err
		}
		if err := checkText("reason", req.Reason); err != nil {
			return err
		}
		p := db.ReleaseParams{TraceID: id, By: "admin", Reason: req.Reason, LockWait: lockWait, Force: force}
		if req.ReceivedAt != nil {
			if req.ReceivedAt.IsZero() {
				return problem(codes.InvalidRequest, "received_at must be the trace's received_at, as GET shows it")
			}
			p.ReceivedAt = *req.ReceivedAt
		}
		status, err := release(c.Request().Context(), a.db(), p)
		if err != nil {
			return err
		}
		return adminJSON(c, http.StatusOK, releaseResponse{TraceID: id, Status: string(status), Released: true})
	}
}

// release is the one release of a trace ID, for the admin API and the web
// page alike, and the one mapping of its refusals to problems: not held
// (404), reconciling (409: its order may exist at the venue), another
// claim than the one named (409 trace_changed) and an attempt still holding
// the trace past the lock wait (409 in_progress, retry).
func release(ctx context.Context, pool db.Handle, p db.ReleaseParams) (db.TraceStatus, error) {
	status, err := db.ReleaseTrace(ctx, pool, p)
	switch {
	case errors.Is(err, db.ErrClaimChanged):
		now := "another claim"
		if d, gerr := db.GetTrace(ctx, pool, p.TraceID); gerr == nil && d.Trace != nil {
			now = "the claim received at " + d.Trace.ReceivedAt.UTC().Format(time.RFC3339Nano)
		}
		return "", problem(codes.TraceChanged, fmt.Sprintf("trace %s was released and claimed again since the claim received at %s: "+
			"it is now held by %s, which may have placed its own order; nothing was released (look at it, then release it by its received_at if you mean to)",
			p.TraceID, p.ReceivedAt.UTC().Format(time.RFC3339Nano), now))
	case errors.Is(err, db.ErrNotFound):
		return "", problem(codes.NotFound, fmt.Sprintf("trace %s is not held (never claimed, already purged or released)", p.TraceID))
	case errors.Is(err, db.ErrReconciling):
		return "", problem(codes.Reconciling, fmt.Sprintf("trace %s is reconciling: its order may exist at the venue, "+
			"so it cannot be released until the reconcile settles it", p.TraceID))
	case errors.Is(err, db.ErrOrderUnknown):
		return "", problem(codes.Reconciling, fmt.Sprintf("trace %s ended failed and whether its order exists at the venue is unknown: "+
			"check the venue, then release it with ?force=true (the next attempt of the same signal still looks that order up before placing, "+
			"and places nothing while it is not found at a venue that may fill a late request: to trade it, send a new signal)", p.TraceID))
	case errors.Is(err, db.ErrLockTimeout):
		return "", problem(codes.InProgress, fmt.Sprintf("trace %s: an attempt is still running; retry the release", p.TraceID)).
			withRetryAfter(time.Second)
	}
	return status, err
}

package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// Page sizes of the admin listings.
const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
)

// listParams names the query parameters both listings accept. Any other
// parameter is refused: a misspelt filter that silently matched everything
// would mislead an audit.
const listParams = "status, exchange, symbol, mode, since, until, fanout, limit, cursor"

func isListParam(name string) bool {
	switch name {
	case "status", "exchange", "symbol", "mode", "since", "until", "fanout", "limit", "cursor":
		return true
	}
	return false
}

// traceStatuses are the values a trace listing's status filter accepts.
func traceStatuses() []string {
	var out []string
	for _, s := range db.TraceStatuses() {
		out = append(out, string(s))
	}
	return out
}

// orderStatuses are the values an order listing's status filter accepts.
func orderStatuses() []string {
	return []string{string(exchange.StatusFilled), string(exchange.StatusOpen), string(exchange.StatusRejected),
		string(exchange.StatusCancelled), string(exchange.StatusExpired)}
}

// parseListQuery reads the shared filters and the page size. statuses are
// the values status may take for this listing.
func parseListQuery(q url.Values, statuses []string) (db.ListFilter, string, error) {
	var f db.ListFilter
	for name, vals := range q {
		if !isListParam(name) {
			return f, "", invalidParam(name, "is not a known parameter; use one of "+listParams)
		}
		if len(vals) != 1 {
			return f, "", invalidParam(name, "must be given once")
		}
		// Text Postgres cannot store (a NUL, invalid UTF-8) would fail the
		// query as an internal error; no stored row holds a control
		// character either.
		if !storable(vals[0]) {
			return f, "", invalidParam(name, "must be valid UTF-8 without control characters")
		}
	}
	if v, ok := param(q, "status"); ok {
		if !slices.Contains(statuses, v) {
			return f, "", invalidParam("status", "must be one of "+strings.Join(statuses, ", "))
		}
		f.Status = v
	}
	if v, ok := param(q, "mode"); ok {
		if v != signal.ModeLive && v != signal.ModeTest {
			return f, "", invalidParam("mode", "must be live or test")
		}
		f.Mode = v
	}
	// Exchanges are stored lower-case and symbols upper-case (see package
	// signal), so the filters fold the same way.
	if v, ok := param(q, "exchange"); ok {
		if len(v) > 64 {
			return f, "", invalidParam("exchange", "is longer than 64 characters")
		}
		f.Exchange = strings.ToLower(v)
	}
	if v, ok := param(q, "symbol"); ok {
		if len(v) > 32 {
			return f, "", invalidParam("symbol", "is longer than 32 characters")
		}
		f.Symbol = strings.ToUpper(v)
	}
	// fanout takes any trace ID of a fan-out and matches every account's.
	if v, ok := param(q, "fanout"); ok {
		if len(v) > 512 {
			return f, "", invalidParam("fanout", "is longer than 512 characters")
		}
		_, f.FanOut = signal.SplitAccountTrace(v)
	}
	for _, name := range []string{"since", "until"} {
		v, ok := param(q, name)
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		// The zero time is the filter's "not given" (db.ListFilter): as
		// a value it would silently match everything.
		if err != nil || t.IsZero() {
			return f, "", invalidParam(name, "must be an RFC 3339 time such as 2025-01-02T15:04:05Z")
		}
		if name == "since" {
			f.Since = t
		} else {
			f.Until = t
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, "", invalidParam("until", "must be after since")
	}
	f.Limit = defaultPageLimit
	if v, ok := param(q, "limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageLimit {
			return f, "", invalidParam("limit", fmt.Sprintf("must be an integer from 1 to %d", maxPageLimit))
		}
		f.Limit = n
	}
	cursor, _ := param(q, "cursor")
	return f, cursor, nil
}

// param returns a query parameter that is present and not blank.
func param(q url.Values, name string) (string, bool) {
	v := strings.TrimSpace(q.Get(name))
	return v, v != ""
}

func invalidParam(name, msg string) *Problem {
	return problem(codes.InvalidRequest, fmt.Sprintf("query parameter %q %s", name, msg))
}

// pageCursor is the opaque next_cursor: the keyset position after a page's
// last row. Kind keeps a traces cursor from being replayed on orders.
type pageCursor struct {
	Kind string    `json:"k"`
	At   time.Time `json:"t"`
	ID   string    `json:"i"`
}

func encodeCursor(kind string, at time.Time, id string) string {
	b, _ := json.Marshal(pageCursor{Kind: kind, At: at.UTC(), ID: id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(kind, s string) (pageCursor, error) {
	bad := invalidParam("cursor", "is not a next_cursor from this listing")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return pageCursor{}, bad
	}
	var c pageCursor
	// The ID is checked like a trace ID: a forged cursor may carry a NUL
	// (as \u0000), which Postgres text refuses.
	if err := json.Unmarshal(raw, &c); err != nil || c.Kind != kind || c.At.IsZero() || c.ID == "" || !storable(c.ID) {
		return pageCursor{}, bad
	}
	return c, nil
}

func traceCursor(s string) (*db.TraceCursor, error) {
	if s == "" {
		return nil, nil
	}
	c, err := decodeCursor("traces", s)
	if err != nil {
		return nil, err
	}
	return &db.TraceCursor{ReceivedAt: c.At, TraceID: c.ID}, nil
}

func orderCursor(s string) (*db.OrderCursor, error) {
	if s == "" {
		return nil, nil
	}
	c, err := decodeCursor("orders", s)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(c.ID)
	if err != nil {
		return nil, invalidParam("cursor", "is not a next_cursor from this listing")
	}
	return &db.OrderCursor{CreatedAt: c.At, ID: id}, nil
}

// utc returns t in UTC, or nil for nil, for response bodies.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// listPage reads one page of a listing for the query q (parseListQuery),
// for the admin API and the web page alike: at most the page size of rows,
// newest first, and the cursor after the last one shown, nil on the last
// page. fetch runs the listing from the query's cursor; it is asked for one
// more row than the page holds, which tells whether another page exists.
func listPage[R any](q url.Values, statuses []string, fetch func(f db.ListFilter, cursor string) ([]R, error),
	cursorOf func(R) string) ([]R, *string, error) {
	f, cursor, err := parseListQuery(q, statuses)
	if err != nil {
		return nil, nil, err
	}
	want := f.Limit
	f.Limit++
	rows, err := fetch(f, cursor)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) <= want {
		return rows, nil, nil
	}
	next := cursorOf(rows[want-1])
	return rows[:want], &next, nil
}

// listTraceRows is one page of traces for q (see listPage).
func listTraceRows(ctx context.Context, pool db.DBTX, q url.Values) ([]db.TraceRow, *string, error) {
	return listPage(q, traceStatuses(), func(f db.ListFilter, cursor string) ([]db.TraceRow, error) {
		after, err := traceCursor(cursor)
		if err != nil {
			return nil, err
		}
		return db.ListTraces(ctx, pool, f, after)
	}, func(t db.TraceRow) string { return encodeCursor("traces", t.ReceivedAt, t.TraceID) })
}

// listOrderRows is one page of orders for q (see listPage); status is the
// order's.
func listOrderRows(ctx context.Context, pool db.DBTX, q url.Values) ([]db.OrderRow, *string, error) {
	return listPage(q, orderStatuses(), func(f db.ListFilter, cursor string) ([]db.OrderRow, error) {
		after, err := orderCursor(cursor)
		if err != nil {
			return nil, err
		}
		return db.ListOrders(ctx, pool, f, after)
	}, func(o db.OrderRow) string { return encodeCursor("orders", o.CreatedAt, o.ID.String()) })
}

// items maps a page's rows to an answer's items: never nil, so an empty
// page is [] in JSON, not null.
func items[R, T any](rows []R, item func(R) T) []T {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		out = append(out, item(r))
	}
	return out
}

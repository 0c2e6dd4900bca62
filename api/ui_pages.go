package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// uiPageSize is how many rows a listing shows per page.
const uiPageSize = 50

// uiFilter is a listing's filter form as the operator typed it.
type uiFilter struct {
	Status   string
	Exchange string
	Symbol   string
	Mode     string
	Since    string
	Until    string
	FanOut   string
}

// readUIFilter reads the filter form from the query string.
func readUIFilter(q url.Values) uiFilter {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return uiFilter{Status: get("status"), Exchange: get("exchange"), Symbol: get("symbol"), Mode: get("mode"),
		Since: get("since"), Until: get("until"), FanOut: get("fanout")}
}

// query is the filter as URL parameters, blanks left out, for the page's
// own links.
func (f uiFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "exchange": f.Exchange, "symbol": f.Symbol, "mode": f.Mode,
		"since": f.Since, "until": f.Until, "fanout": f.FanOut} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// listQuery is the filter as the listings read it (parseListQuery, the
// admin API's reader): the form's times as RFC 3339, the page's size and
// the cursor.
func (f uiFilter) listQuery(cursor string) url.Values {
	q := f.query()
	for _, k := range []string{"since", "until"} {
		if v := q.Get(k); v != "" {
			q.Set(k, rfc3339(v))
		}
	}
	q.Set("limit", strconv.Itoa(uiPageSize))
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// uiTimeLayouts are what a datetime-local field sends.
var uiTimeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

// rfc3339 turns a datetime-local value into RFC 3339, in UTC as the page
// shows times; anything else is passed on as typed, for parseListQuery to
// take (an RFC 3339 time) or refuse.
func rfc3339(s string) string {
	for _, layout := range uiTimeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return s
}

// listView is what the traces and orders pages share: the filter form
// (filters.html) as typed, and the link to the next page.
type listView struct {
	// Action is the page the form submits to.
	Action   string
	Filter   uiFilter
	Statuses []string
	// Older is the next page's address; empty on the last page.
	Older string
}

func newListView(action string, f uiFilter, statuses []string) listView {
	return listView{Action: action, Filter: f, Statuses: statuses}
}

// page fills Older from a listing's next cursor.
func (v *listView) page(next *string) {
	if next == nil {
		return
	}
	q := v.Filter.query()
	q.Set("cursor", *next)
	v.Older = v.Action + "?" + q.Encode()
}

// renderList renders a listing page. A filter the listing refused is shown
// above the empty listing with 400, so the operator can correct it.
func (u *webUI) renderList(c echo.Context, name, title string, data any, err error) error {
	var p *Problem
	if errors.As(err, &p) && p.Code == codes.InvalidRequest {
		return u.render(c, http.StatusBadRequest, name, view{Title: title, Nav: name, Error: p.Detail, Data: data})
	}
	if err != nil {
		return err
	}
	return u.render(c, http.StatusOK, name, view{Title: title, Nav: name, Data: data})
}

// tracesView is the traces page.
type tracesView struct {
	listView
	Rows []db.TraceRow
	// Live is true on the first page, which the script keeps current from
	// RowsURL.
	Live    bool
	RowsURL string
}

func (u *webUI) listTraces(c echo.Context) (tracesView, error) {
	form, cursor := readUIFilter(c.QueryParams()), c.QueryParam("cursor")
	v := tracesView{listView: newListView("/ui/", form, traceStatuses())}
	rows, next, err := listTraceRows(c.Request().Context(), u.db(), form.listQuery(cursor))
	if err != nil {
		return v, err
	}
	v.page(next)
	v.Rows, v.Live = rows, cursor == ""
	v.RowsURL = "/ui/traces/rows?" + form.query().Encode()
	return v, nil
}

// tracesPage lists traces newest first with filters.
func (u *webUI) tracesPage(c echo.Context) error {
	v, err := u.listTraces(c)
	return u.renderList(c, "traces", "Traces", v, err)
}

// traceRows is the traces table's body alone, which the page's script
// fetches every few seconds: rendered by the same template as the page, so
// a live row looks exactly like a loaded one.
func (u *webUI) traceRows(c echo.Context) error {
	v, err := u.listTraces(c)
	if err != nil {
		return err
	}
	return u.renderPart(c, "traces", "trace_rows", v)
}

func (u *webUI) renderPart(c echo.Context, page, name string, data any) error {
	var b strings.Builder
	if err := u.pages[page].ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return c.HTML(http.StatusOK, b.String())
}

// traceView is one trace's page.
type traceView struct {
	TraceID string
	Detail  db.TraceDetail
	// CanRelease shows the release form: the trace is held and its status
	// allows a release (db.TraceStatus.Releasable).
	CanRelease bool
	// Account is the account the trace executed on (its exchange column),
	// Venue that account's venue kind when this replica configures it;
	// FanOut is the trace ID that finds every account's trace of the same
	// signal (the traces filter fanout=).
	Account, Venue, FanOut string
	// ReceivedAt names the claim shown (RFC 3339, exact): the release
	// form sends it, so a page shown before the trace was released and
	// claimed again releases nothing.
	ReceivedAt string
}

// tracePage shows one trace: the signal as stored (which never holds the
// secret), its audit timeline and its orders.
func (u *webUI) tracePage(c echo.Context) error {
	id, err := traceIDParam(c)
	if err != nil {
		return err
	}
	v := view{}
	if c.QueryParam("released") != "" {
		v.Notice = "Released: the trace ID is free, so the same signal will execute again."
	}
	return u.showTrace(c, id, http.StatusOK, v)
}

// showTrace renders trace id's page with status and v's messages.
func (u *webUI) showTrace(c echo.Context, id string, status int, v view) error {
	d, err := db.GetTrace(c.Request().Context(), u.db(), id)
	if errors.Is(err, db.ErrNotFound) {
		return problem(codes.NotFound, fmt.Sprintf("nothing is recorded under trace %s", id))
	}
	if err != nil {
		return err
	}
	v.Title, v.Nav = "Trace "+id, "traces"
	tv := traceView{TraceID: id, Detail: d, CanRelease: d.Trace != nil && d.Trace.Status.Releasable()}
	_, tv.FanOut = signal.SplitAccountTrace(id)
	switch {
	case d.Trace != nil:
		tv.Account = d.Trace.Exchange
		tv.ReceivedAt = d.Trace.ReceivedAt.UTC().Format(time.RFC3339Nano)
	case len(d.Orders) > 0:
		tv.Account = d.Orders[0].Exchange
	}
	if r := u.s.deps.Venues; r != nil && tv.Account != "" {
		tv.Venue, _ = r.VenueOf(tv.Account)
	}
	v.Data = tv
	return u.render(c, status, "trace", v)
}

// release frees a trace ID, the same call as DELETE /admin/traces/{id},
// after the operator ticked the confirmation.
//
// Its fields are read from the form body alone: c.FormValue would also take
// them from the URL's query string, which a link can set.
func (u *webUI) release(c echo.Context) error {
	r := c.Request()
	id := r.PostFormValue("trace_id")
	if err := checkTraceID(id); err != nil {
		return err
	}
	if r.PostFormValue("confirm") != "yes" {
		return problem(codes.InvalidRequest, "tick the confirmation box to release the trace")
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if err := checkText("reason", reason); err != nil {
		return err
	}
	p := db.ReleaseParams{TraceID: id, By: u.who(c), Reason: reason, LockWait: u.s.cfg.Timing.LockWait}
	// The claim the page showed; a form without it (a page an older
	// release rendered) releases whatever claim holds the trace.
	if v := r.PostFormValue("received_at"); v != "" {
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || at.IsZero() {
			return problem(codes.InvalidRequest, "received_at is not a time this page wrote")
		}
		p.ReceivedAt = at
	}
	_, err := release(c.Request().Context(), u.db(), p)
	if err != nil {
		var p *Problem
		if !errors.As(err, &p) || p.Status != http.StatusConflict {
			return err
		}
		// Refused for where the trace stands (reconciling, an attempt in
		// flight): its page again, with the reason, shows the operator why;
		// with nothing recorded yet to show, the reason alone.
		p = problemFor(c, u.s.deps.Logger, err)
		serr := u.showTrace(c, id, p.Status, view{Error: "Not released: " + p.Detail})
		if np := (*Problem)(nil); errors.As(serr, &np) && np.Code == codes.NotFound {
			return p
		}
		return serr
	}
	u.s.deps.Logger.InfoContext(c.Request().Context(), "ui: trace released", "trace_id", id, "remote_ip", c.RealIP())
	return c.Redirect(http.StatusSeeOther, traceURL(id)+"?released=1")
}

// who names the operator in the audit trail: the page and the client's
// address (there is one admin token, so no user name).
func (u *webUI) who(c echo.Context) string { return "ui " + c.RealIP() }

// ordersView is the orders page.
type ordersView struct {
	listView
	Rows []db.OrderRow
}

// ordersPage lists orders newest first with filters.
func (u *webUI) ordersPage(c echo.Context) error {
	form := readUIFilter(c.QueryParams())
	v := ordersView{listView: newListView("/ui/orders", form, orderStatuses())}
	rows, next, err := listOrderRows(c.Request().Context(), u.db(), form.listQuery(c.QueryParam("cursor")))
	if err == nil {
		v.page(next)
		v.Rows = rows
	}
	return u.renderList(c, "orders", "Orders", v, err)
}

// venuesView is the venues page; Configured is false when the server was
// built without the venue registry.
type venuesView struct {
	Configured bool
	Venues     []exchange.VenueStatus
}

// venuesPage lists the configured venues, whether each trades for real, and
// the last error each gave.
func (u *webUI) venuesPage(c echo.Context) error {
	v := venuesView{}
	if r := u.s.deps.Venues; r != nil {
		v.Configured, v.Venues = true, r.Describe()
	}
	return u.render(c, http.StatusOK, "venues", view{Title: "Venues", Nav: "venues", Data: v})
}

// killSwitchView is the kill switch page.
type killSwitchView struct {
	State db.KillSwitch
}

// Words the operator types to confirm a kill switch change.
const (
	confirmEngage    = "ENGAGE"
	confirmDisengage = "DISENGAGE"
)

func (u *webUI) killSwitchPage(c echo.Context) error {
	ks, err := db.GetKillSwitch(c.Request().Context(), u.db())
	if err != nil {
		return err
	}
	v := view{Title: "Kill switch", Nav: "kill-switch", KillSwitch: &ks, Data: killSwitchView{State: ks}}
	switch c.QueryParam("done") {
	case "engaged":
		v.Notice = "Kill switch engaged: every replica refuses new signals."
	case "released":
		v.Notice = "Kill switch released: signals execute again."
	}
	return u.render(c, http.StatusOK, "killswitch", v)
}

// setKillSwitch engages or releases the halt, the same call as PUT
// /admin/kill-switch, once the operator typed the confirmation word.
// Like release, it reads the form body alone.
func (u *webUI) setKillSwitch(c echo.Context) error {
	form := c.Request().PostFormValue
	var engaged bool
	switch form("engaged") {
	case "true":
		engaged = true
	case "false":
	default:
		return problem(codes.InvalidRequest, `engaged must be "true" or "false"`)
	}
	word := confirmDisengage
	if engaged {
		word = confirmEngage
	}
	reason := strings.TrimSpace(form("reason"))
	v := view{Title: "Kill switch", Nav: "kill-switch"}
	bad := signal.CheckText(reason)
	if form("confirm") != word || bad != "" {
		ks, err := db.GetKillSwitch(c.Request().Context(), u.db())
		if err != nil {
			return err
		}
		v.KillSwitch, v.Data = &ks, killSwitchView{State: ks}
		v.Error = fmt.Sprintf("Nothing changed: type %s exactly to confirm.", word)
		if bad != "" {
			v.Error = "Nothing changed: the reason " + bad + "."
		}
		return u.render(c, http.StatusBadRequest, "killswitch", v)
	}
	who := u.who(c)
	if _, err := db.SetKillSwitch(c.Request().Context(), u.db(), engaged, reason, who,
		u.s.deps.Admin.KillSwitchHook(engaged, reason, who)); err != nil {
		return err
	}
	u.s.deps.Logger.InfoContext(c.Request().Context(), "ui: kill switch set", "engaged", engaged, "remote_ip", c.RealIP())
	done := "released"
	if engaged {
		done = "engaged"
	}
	return c.Redirect(http.StatusSeeOther, "/ui/kill-switch?done="+done)
}

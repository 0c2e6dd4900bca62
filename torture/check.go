package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/signal"
)

// venueOrder is an order as a venue's own book holds it.
type venueOrder struct {
	Exchange        string
	ClientOrderID   string
	ExchangeOrderID string
	Symbol          string
	Side            string // buy or sell
	Quantity        string // normalised
	Status          string
	// Exit is an exit's role (take_profit, stop_loss, trailing_stop): a
	// USDⓈ-M conditional order, placed for an entry; "" for an entry.
	Exit string
}

func (o venueOrder) String() string {
	exit := ""
	if o.Exit != "" {
		exit = " exit=" + o.Exit
	}
	return fmt.Sprintf("%s %s %s qty=%s status=%s client_order_id=%s exchange_order_id=%s%s",
		o.Exchange, o.Symbol, o.Side, o.Quantity, o.Status, o.ClientOrderID, o.ExchangeOrderID, exit)
}

// algoExit is the exit role of a USDⓈ-M conditional order type.
var algoExit = map[string]string{"TAKE_PROFIT_MARKET": "take_profit", "STOP_MARKET": "stop_loss", "TRAILING_STOP_MARKET": "trailing_stop"}

// spotExit is the exit role of a spot order type hoox sends only as an
// exit; "" for an entry's (MARKET, LIMIT).
var spotExit = map[string]string{"LIMIT_MAKER": "take_profit", "TAKE_PROFIT": "take_profit", "STOP_LOSS": "stop_loss"}

// hooxOrder is a row of hoox's orders table.
type hooxOrder struct {
	TraceID, ClientOrderID, Exchange, Symbol, Side, Quantity, Status, ExchangeOrderID string
}

// records reports whether h is hoox's record of venue order o: same venue,
// same client order ID and, when hoox learnt it, the same exchange order
// ID (Binance books a second order under a reused client order ID).
func (h hooxOrder) records(o venueOrder) bool {
	return h.Exchange == o.Exchange && h.ClientOrderID == o.ClientOrderID && (h.ExchangeOrderID == "" || h.ExchangeOrderID == o.ExchangeOrderID)
}

// Failure is one violated check.
type Failure struct {
	Check  string
	Signal int // -1: no one signal
	Detail string
	// Known names the open hoox bug this failure is (KnownIssues), when
	// the checker could tell; a tolerated one does not fail the run.
	Known     string
	Tolerated bool
	// ClientOrderID is the venue order's, for order checks.
	ClientOrderID string
	// History is the minimal history that shows it: the signal's events,
	// the faults around them, and its orders at the venue.
	History []string
}

// Result is a run's summary and its failures.
type Result struct {
	Seed     uint64
	Signals  int
	Ops      map[string]int
	Faults   map[string]int
	Answers  map[string]int
	Checks   map[string]int // passed, by check
	Failures []Failure
	Replay   string
	Elapsed  time.Duration
	// Recovery is how long after the faults stopped every venue order was
	// recorded by hoox.
	Recovery time.Duration
}

// The checks.
const (
	checkAtMostOnce = "at_most_one_order_per_signal"
	checkRecorded   = "every_venue_order_recorded"
	checkAttributed = "every_venue_order_is_a_signal's"
	checkAnswer     = "200/409_names_a_real_order"
	checkTruthful   = "hoox_records_what_the_venue_holds"
	check503        = "503_nothing_placed_is_true"
	check422        = "422_means_nothing_executed"
	// The exits (legs) of USDⓈ-M entries that asked for them.
	checkExitOnce       = "at_most_one_order_per_intended_exit"
	checkExitAttributed = "every_exit_is_an_entry's"
	checkExitPlaced     = "every_asked_exit_placed"
)

// venueOrders reads every venue's book.
func (s *sim) venueOrders(ctx context.Context) ([]venueOrder, error) {
	var out []venueOrder
	for _, o := range s.binance.Orders() {
		if o.Status == "REJECTED" {
			continue
		}
		ex := "binance"
		if o.Market == binancefake.MarketFutures {
			ex = "binance-futures"
		}
		exit := ""
		if ex == "binance" {
			exit = spotExit[o.Type]
		}
		out = append(out, venueOrder{ex, o.ClientOrderID, fmt.Sprint(o.OrderID), o.Symbol, strings.ToLower(o.Side), o.Quantity.String(), o.Status, exit})
	}
	for _, l := range s.binance.OrderLists() {
		out = append(out, venueOrder{"binance", l.ListClientOrderID, fmt.Sprint(l.OrderListID), l.Symbol, strings.ToLower(l.Side),
			l.Quantity.String(), l.Status, "oco"})
	}
	for _, a := range s.binance.AlgoOrders() {
		out = append(out, venueOrder{"binance-futures", a.ClientAlgoID, fmt.Sprint(a.AlgoID), a.Symbol, strings.ToLower(a.Side),
			a.Quantity.String(), a.Status, algoExit[a.Type]})
	}
	for _, o := range s.bybit.Orders() {
		if o.Status == "Rejected" {
			continue
		}
		ex := "bybit"
		if o.Category == "spot" {
			ex = "bybit-spot"
		}
		out = append(out, venueOrder{ex, o.OrderLinkID, o.OrderID, o.Symbol, strings.ToLower(o.Side), o.Qty.String(), o.Status, ""})
	}
	rows, err := s.query(ctx, `SELECT client_order_id, exchange_order_id, symbol, side, quantity::text, status FROM paper_orders`)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, venueOrder{"paper", r[0], r[1], r[2], strings.ToLower(r[3]), normQty(r[4]), r[5], ""})
	}
	return out, nil
}

// legOutcomes reads hoox's exits and other legs (order_legs): each leg's
// outcome ("" while open) and how often it was sent, by client order ID.
func (s *sim) legOutcomes(ctx context.Context) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT client_order_id, coalesce(outcome, ''), attempts::text FROM order_legs`)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r[0]] = fmt.Sprintf("%s (sent %s times)", orNone(r[1]), r[2])
		if r[1] == "" {
			out[r[0]] = ""
		}
	}
	return out, nil
}

// hooxOrders reads hoox's orders table, by client order ID.
func (s *sim) hooxOrders(ctx context.Context) (map[string]hooxOrder, error) {
	rows, err := s.query(ctx, `SELECT trace_id, client_order_id, exchange, symbol, coalesce(side, ''), quantity::text, status, coalesce(exchange_order_id, '') FROM orders`)
	if err != nil {
		return nil, err
	}
	out := map[string]hooxOrder{}
	for _, r := range rows {
		out[r[1]] = hooxOrder{r[0], r[1], r[2], r[3], r[4], normQty(r[5]), r[6], r[7]}
	}
	return out, nil
}

// query runs a read as text columns, retrying while Postgres restarts.
func (s *sim) query(ctx context.Context, sql string, args ...any) ([][]string, error) {
	var lastErr error
	for range 50 {
		out, err := func() ([][]string, error) {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(cctx, s.dbURL)
			if err != nil {
				return nil, err
			}
			defer conn.Close(cctx)
			rows, err := conn.Query(cctx, sql, args...)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
				vals, err := r.Values()
				if err != nil {
					return nil, err
				}
				out := make([]string, len(vals))
				for i, v := range vals {
					switch v := v.(type) {
					case nil:
					case time.Time:
						// On the history's clock: seconds since the plan
						// started.
						out[i] = fmt.Sprintf("%.3fs", v.Sub(s.h.start).Seconds())
					default:
						out[i] = fmt.Sprint(v)
					}
				}
				return out, nil
			})
		}()
		if err == nil {
			return out, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("torture: query: %w", lastErr)
}

// check waits (up to the recovery bound) for every venue order to be
// recorded, then runs every check over the history and the books.
func (s *sim) check(ctx context.Context) (*Result, error) {
	quiet := time.Now()
	var vos []venueOrder
	var hos map[string]hooxOrder
	var unrecorded []venueOrder
	for {
		var err error
		if vos, err = s.venueOrders(ctx); err != nil {
			return nil, err
		}
		if hos, err = s.hooxOrders(ctx); err != nil {
			return nil, err
		}
		unrecorded = unrecordedOrders(vos, hos)
		if s.legs, err = s.legOutcomes(ctx); err != nil {
			return nil, err
		}
		openLegs := 0
		for _, o := range s.legs {
			if o == "" {
				openLegs++
			}
		}
		if (len(unrecorded) == 0 && openLegs == 0) || time.Since(quiet) > s.cfg.RecoveryBound || ctx.Err() != nil {
			break
		}
		// A reconcile stuck 'running' on a dead replica will not move
		// before River's rescuer (an hour): waiting out the bound for it
		// shows nothing more.
		if s.tolerates(KnownStuckReconcile) && len(s.stuckReconciles(ctx, unrecorded)) == len(unrecorded) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	s.waited = time.Since(quiet)
	res := &Result{Seed: s.cfg.Seed, Signals: len(s.plan.signals), Ops: s.ops.snapshot(), Faults: s.faults.snapshot(),
		Answers: s.answers.snapshot(), Checks: map[string]int{}, Replay: s.cfg.Replay, Elapsed: time.Since(s.h.start),
		Recovery: time.Since(quiet)}
	bySig := s.judge(res, vos, hos, unrecorded)
	stuck := s.stuckReconciles(ctx, unrecorded)
	for i, f := range res.Failures {
		if f.Check == checkRecorded && stuck[f.ClientOrderID] {
			res.Failures[i].Known = KnownStuckReconcile
			res.Failures[i].Tolerated = s.tolerates(KnownStuckReconcile)
		}
	}
	rank := map[string]int{checkAtMostOnce: 0, checkExitOnce: 0, check422: 1, checkAnswer: 2, check503: 3, checkTruthful: 4,
		checkRecorded: 5, checkAttributed: 6, checkExitAttributed: 6, checkExitPlaced: 7}
	slices.SortStableFunc(res.Failures, func(a, b Failure) int { return rank[a.Check] - rank[b.Check] })
	for i := range res.Failures {
		res.Failures[i].History = s.minimalHistory(ctx, res.Failures[i].Signal, s.h.events(), bySig, hos)
	}
	return res, nil
}

// reopens counts the legitimate extra executions a signal may have: a
// successful release of its trace followed by a send, a purge after its
// trace expired followed by a send, and, in window mode, a send after the
// window.
func (s *sim) reopens(sp *signalPlan, st *signalState, ttl, slack time.Duration) int {
	if len(st.sends) == 0 {
		return 0
	}
	first, last := st.sends[0], st.sends[len(st.sends)-1]
	n := 0
	for _, at := range s.releases[sp.ID] {
		if last > at {
			n++
		}
	}
	for _, at := range s.purges {
		if at >= first+ttl-slack && last > at {
			n++
		}
	}
	if sp.Mode == ModeWindow {
		for _, at := range st.sends[1:] {
			if at >= first+ttl-slack {
				n++
			}
		}
	}
	return n
}

// minimalHistory is the signal's own events, the run-wide faults while it
// was alive, its venue orders and hoox's records of them.
func (s *sim) minimalHistory(ctx context.Context, sig int, events []event, bySig map[int][]venueOrder, hos map[string]hooxOrder) []string {
	if sig < 0 {
		return nil
	}
	sp := s.plan.signals[sig]
	var out []string
	out = append(out, fmt.Sprintf("signal %d: %s %s %s qty=%s mode=%s client=%s lb_retry=%v text_plain=%v planned_fault=%s at %.3fs",
		sp.ID, sp.Venue.name, sp.Symbol, sp.Side, sp.Quantity, sp.Mode, sp.Client, sp.LBRetry, sp.TextPlain, orNone(sp.Fault), sp.At.Seconds()))
	var lo, hi time.Duration = -1, 0
	for _, e := range events {
		if e.Signal == sig {
			if lo < 0 {
				lo = e.At
			}
			hi = e.At
		}
	}
	for _, e := range events {
		if e.Signal == sig || (e.Signal < 0 && lo >= 0 && e.At >= lo-time.Second && e.At <= hi+2*time.Second && e.Kind != "purge") ||
			(e.Kind == "purge" && e.At >= lo && e.At <= hi) {
			out = append(out, e.String())
		}
	}
	for _, o := range bySig[sig] {
		rec := "NOT recorded by hoox"
		if h, ok := hos[o.ClientOrderID]; ok && h.records(o) {
			rec = fmt.Sprintf("recorded: trace %s status %s", h.TraceID, h.Status)
		}
		out = append(out, fmt.Sprintf("venue order: %s — %s", o, rec))
	}
	return append(out, s.hooxRecords(ctx, sig, bySig[sig])...)
}

// hooxRecords is what hoox wrote about a signal: its intents, traces and
// audit events, on the history's clock.
func (s *sim) hooxRecords(ctx context.Context, sig int, orders []venueOrder) []string {
	traces := append([]string(nil), s.sigState[sig].traces...)
	var cids []string
	for _, o := range orders {
		cids = append(cids, o.ClientOrderID)
	}
	sp := s.plan.signals[sig]
	var out []string
	intents, err := s.query(ctx, `SELECT client_order_id, trace_id, coalesce(outcome, 'open'), sent_at, settled_at, attempts
FROM dispatch_intents WHERE trace_id = ANY($1) OR client_order_id = ANY($2) OR (exchange = $3 AND (order_spec->>'quantity')::numeric = $4::numeric)
ORDER BY sent_at`, traces, cids, sp.Venue.name, sp.Quantity)
	if err != nil {
		return append(out, fmt.Sprintf("hoox records unavailable: %v", err))
	}
	for _, r := range intents {
		out = append(out, fmt.Sprintf("hoox intent: client_order_id=%s trace=%s outcome=%s sent=%s settled=%s attempts=%s", r[0], r[1], r[2], r[3], r[4], r[5]))
		if !slices.Contains(traces, r[1]) {
			traces = append(traces, r[1])
		}
	}
	rows, err := s.query(ctx, `SELECT trace_id, status, coalesce(client_order_id, ''), received_at, updated_at FROM trace_ids WHERE trace_id = ANY($1)`, traces)
	if err == nil {
		for _, r := range rows {
			out = append(out, fmt.Sprintf("hoox trace: %s status=%s client_order_id=%s received=%s updated=%s", r[0], r[1], r[2], r[3], r[4]))
		}
	}
	rows, err = s.query(ctx, `SELECT id, kind, state, attempt, max_attempts, created_at, scheduled_at, attempted_at, coalesce(finalized_at::text, ''),
       coalesce(array_to_string(attempted_by, ','), ''), coalesce(errors::text, '')
FROM river_job WHERE args->>'trace_id' = ANY($1) ORDER BY id`, traces)
	if err == nil {
		for _, r := range rows {
			out = append(out, fmt.Sprintf("river job %s %s state=%s attempt=%s/%s created=%s scheduled=%s attempted=%s finalized=%s by=%s errors=%s",
				r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], clip([]byte(r[10]), 300)))
		}
	}
	rows, err = s.query(ctx, `SELECT at, trace_id, event, detail::text FROM trace_history WHERE trace_id = ANY($1) ORDER BY at, id`, traces)
	if err == nil {
		for _, r := range rows {
			out = append(out, fmt.Sprintf("hoox event %9s %s %s %s", r[0], r[2], r[1], clip([]byte(r[3]), 240)))
		}
	}
	return out
}

// print writes the summary, then every failure with its history and the
// command that replays the run.
func (r *Result) print(w io.Writer, histories int) {
	fmt.Fprintf(w, "\ntorture summary (seed %d, %s, %d signals, recovery %s)\n", r.Seed, r.Elapsed.Round(time.Millisecond), r.Signals, r.Recovery.Round(time.Millisecond))
	section := func(title string, m map[string]int) {
		fmt.Fprintf(w, "  %s:\n", title)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(w, "    %-40s %6d\n", k, m[k])
		}
	}
	section("operations", r.Ops)
	section("faults", r.Faults)
	section("answers", r.Answers)
	section("checks passed", r.Checks)
	failed, known := map[string]int{}, map[string]int{}
	for _, f := range r.Failures {
		if f.Tolerated {
			known[f.Check+" ("+f.Known+", tolerated)"]++
		} else {
			failed[f.Check]++
		}
	}
	section("checks failed", failed)
	if len(known) > 0 {
		section("known hoox bugs seen (tolerated by this run's config)", known)
	}
	if len(r.Failures) == 0 {
		fmt.Fprintf(w, "torture: PASS (seed %d)\n", r.Seed)
		return
	}
	shown := map[int]bool{}
	for i, f := range r.Failures {
		label := "FAIL"
		if f.Known != "" {
			label = "FAIL [known: " + f.Known + "]"
			if f.Tolerated {
				label = "KNOWN (tolerated) " + f.Known + ":"
			}
		}
		fmt.Fprintf(w, "\n%s %s (signal %d): %s\n", label, f.Check, f.Signal, f.Detail)
		if f.Signal >= 0 && !shown[f.Signal] && len(shown) < histories {
			shown[f.Signal] = true
			for _, line := range f.History {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		if i >= 30 && histories < len(r.Failures) {
			fmt.Fprintf(w, "\n… %d more failures\n", len(r.Failures)-i-1)
			break
		}
	}
	if r.Failed() == 0 {
		fmt.Fprintf(w, "\ntorture: PASS (seed %d) with %d known, tolerated failures. Replay: %s\n", r.Seed, len(r.Failures), r.Replay)
		return
	}
	fmt.Fprintf(w, "\ntorture: FAIL (seed %d, %d failures). Replay: %s\n", r.Seed, r.Failed(), r.Replay)
}

// unrecordedOrders are the venue orders hoox holds no record of.
func unrecordedOrders(vos []venueOrder, hos map[string]hooxOrder) []venueOrder {
	var out []venueOrder
	for _, o := range vos {
		if h, ok := hos[o.ClientOrderID]; !ok || !h.records(o) {
			out = append(out, o)
		}
	}
	return out
}

// judge runs every check over the history, the venues' books (vos) and
// hoox's orders (hos), adding to res; it returns the venue orders grouped
// by signal. It reads nothing but its arguments and the run's record, so
// the checker itself is tested on made-up histories.
func (s *sim) judge(res *Result, vos []venueOrder, hos map[string]hooxOrder, unrecorded []venueOrder) map[int][]venueOrder {
	fail := func(check string, sig int, format string, args ...any) {
		res.Failures = append(res.Failures, Failure{Check: check, Signal: sig, Detail: fmt.Sprintf(format, args...)})
	}
	failOrder := func(check string, sig int, cid string, format string, args ...any) {
		res.Failures = append(res.Failures, Failure{Check: check, Signal: sig, ClientOrderID: cid, Detail: fmt.Sprintf(format, args...)})
	}

	// Group the venues' orders by signal, by (exchange, quantity) alone;
	// exits are judged by the entry they belong to (judgeExits).
	bySig := map[int][]venueOrder{}
	byClientID := map[string]venueOrder{}
	var exits []venueOrder
	for _, o := range vos {
		if o.Exit != "" {
			exits = append(exits, o)
			continue
		}
		byClientID[o.Exchange+"|"+o.ClientOrderID] = o
		id, ok := s.byQuantity[o.Exchange+"|"+o.Quantity]
		if !ok || o.Symbol != s.plan.signals[id].Symbol || o.Side != s.plan.signals[id].Side {
			fail(checkAttributed, -1, "venue order matches no signal: %s", o)
			continue
		}
		res.Checks[checkAttributed]++
		bySig[id] = append(bySig[id], o)
	}
	for _, o := range unrecorded {
		sig := s.signalOf(o)
		failOrder(checkRecorded, sig, o.ClientOrderID, "venue order not recorded by hoox %s after the faults stopped (bound %s): %s",
			s.waited.Round(time.Millisecond), s.cfg.RecoveryBound, o)
	}
	res.Checks[checkRecorded] = len(vos) - len(unrecorded)
	for _, o := range vos {
		h, ok := hos[o.ClientOrderID]
		if !ok || !h.records(o) {
			continue
		}
		sig := s.signalOf(o)
		switch {
		case h.Status == "rejected":
			fail(checkTruthful, sig, "hoox recorded order %s as rejected, but the venue holds it: %s", o.ClientOrderID, o)
		case h.Side != "" && (h.Side != o.Side || h.Quantity != o.Quantity || h.Symbol != o.Symbol):
			fail(checkTruthful, sig, "hoox recorded order %s as %s %s %s, but the venue holds %s", o.ClientOrderID, h.Symbol, h.Side, h.Quantity, o)
		default:
			res.Checks[checkTruthful]++
		}
	}

	ttl := s.cfg.window()
	slack := time.Second
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		st := s.sigState[sp.ID]
		orders := bySig[sp.ID]
		reopens := s.reopens(sp, st, ttl, slack)
		if len(orders) > 1+reopens {
			fail(checkAtMostOnce, sp.ID, "%d orders at %s for one signal (%d legitimate re-openings by release, purge or window)",
				len(orders), sp.Venue.name, reopens)
		} else {
			res.Checks[checkAtMostOnce]++
		}
		for _, a := range st.answers {
			switch {
			case a.Status == 422:
				if len(orders) > reopens {
					fail(check422, sp.ID, "answered 422 %s at %.3fs, yet %d orders executed (%d re-openings)", a.Code, a.At.Seconds(), len(orders), reopens)
				} else {
					res.Checks[check422]++
				}
			case a.Status == 503 && a.Code == "unavailable" && strings.Contains(a.Body, "nothing was placed"):
				switch at, ok := placedDuring(st, a); {
				case !ok:
					res.Checks[check503]++
				case at >= 0:
					fail(check503, sp.ID, "answered 503 %q (sent %.3fs, answered %.3fs), yet %s accepted a placement from replica %d at %.3fs",
						"nothing was placed", a.At.Seconds(), a.Done.Seconds(), sp.Venue.name, a.Replica, at.Seconds())
				}
			case a.Status == 200 || (a.Status == 409 && a.Code == "duplicate"):
				cid, what := "", ""
				if a.Order != nil && a.Order.Status != "rejected" {
					cid, what = a.Order.ClientOrderID, "order"
				} else if a.Original != nil && a.Original.ClientOrderID != nil && a.Original.Status == "dispatched" {
					cid, what = *a.Original.ClientOrderID, "original"
				}
				if cid == "" {
					if a.Status == 200 {
						fail(checkAnswer, sp.ID, "200 at %.3fs names no order: %s", a.At.Seconds(), a.Body)
					}
					continue
				}
				o, ok := byClientID[sp.Venue.name+"|"+cid]
				switch {
				case !ok:
					fail(checkAnswer, sp.ID, "%d at %.3fs names %s %s, which %s does not hold", a.Status, a.At.Seconds(), what, cid, sp.Venue.name)
				case o.Symbol != sp.Symbol || o.Side != sp.Side || o.Quantity != normQty(sp.Quantity):
					fail(checkAnswer, sp.ID, "%d at %.3fs names %s, which is %s, not the signal's %s %s %s", a.Status, a.At.Seconds(), cid, o, sp.Symbol, sp.Side, sp.Quantity)
				default:
					res.Checks[checkAnswer]++
				}
			}
		}
	}
	s.judgeExits(res, vos, exits, hos)
	return bySig
}

// exitQuantityFits reports whether exit x's quantity is its entry's: the
// same on USDⓈ-M; on spot what the entry received (net of a commission in
// the coin bought, rounded down), so at most the entry's and more than
// nothing.
func exitQuantityFits(x, entry venueOrder) bool {
	if x.Exchange != "binance" {
		return x.Quantity == entry.Quantity
	}
	q, err1 := decimal.NewFromString(x.Quantity)
	e, err2 := decimal.NewFromString(entry.Quantity)
	return err1 == nil && err2 == nil && q.IsPositive() && !q.GreaterThan(e)
}

// judgeExits checks the exits of the USDⓈ-M entries that asked for them:
// every exit at the venue is one an entry planned (derived from the
// entry's client order ID, with the role and the opposite side of the
// entry, for its quantity), no planned exit was placed twice, and every
// entry that filled and was recorded got each exit it asked for — unless
// hoox recorded the exit's own refusal (s.legs).
func (s *sim) judgeExits(res *Result, vos, exits []venueOrder, hos map[string]hooxOrder) {
	type planned struct {
		entry venueOrder
		sig   int
		role  string
	}
	want := map[string]planned{}
	for _, e := range vos {
		if e.Exit != "" || (e.Exchange != "binance-futures" && e.Exchange != "binance") {
			continue
		}
		sig, ok := s.byQuantity[e.Exchange+"|"+e.Quantity]
		if !ok {
			continue
		}
		for n, role := range s.plan.signals[sig].exitLegs() {
			want[signal.LegClientOrderID(e.ClientOrderID, n+1)] = planned{e, sig, role}
		}
	}
	placed := map[string]int{}
	for _, x := range exits {
		w, ok := want[x.ClientOrderID]
		if !ok || x.Exit != w.role || x.Side == w.entry.Side || !exitQuantityFits(x, w.entry) || x.Symbol != w.entry.Symbol {
			sig := -1
			if ok {
				sig = w.sig
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitAttributed, Signal: sig, ClientOrderID: x.ClientOrderID,
				Detail: fmt.Sprintf("exit order matches no exit an entry planned: %s", x)})
			continue
		}
		res.Checks[checkExitAttributed]++
		placed[x.ClientOrderID]++
	}
	for id, n := range placed {
		w := want[id]
		if n > 1 {
			res.Failures = append(res.Failures, Failure{Check: checkExitOnce, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("%d %s orders for entry %s", n, w.role, w.entry.ClientOrderID)})
		} else {
			res.Checks[checkExitOnce]++
		}
	}
	for id, w := range want {
		h, ok := hos[w.entry.ClientOrderID]
		if w.entry.Status != "FILLED" || !ok || !h.records(w.entry) || h.Status != "filled" || placed[id] > 0 {
			if placed[id] > 0 {
				res.Checks[checkExitPlaced]++
			}
			continue
		}
		outcome, planned := s.legs[id]
		switch {
		case planned && outcome != "" && !strings.HasPrefix(outcome, "dispatched"):
			// hoox recorded why the exit is not at the venue (a refusal):
			// nothing lost silently, but nothing here should refuse one.
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled, its %s is not at the venue; hoox's leg: %s", w.entry.ClientOrderID, w.role, outcome)})
		default:
			state := "never planned"
			if planned {
				state = "leg " + orNone(outcome)
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled and recorded, its %s was never placed (%s)", w.entry.ClientOrderID, w.role, state)})
		}
	}
}

// signalOf is the signal a venue order belongs to by its venue and
// quantity, -1 when none.
func (s *sim) signalOf(o venueOrder) int {
	if id, ok := s.byQuantity[o.Exchange+"|"+o.Quantity]; ok {
		return id
	}
	return -1
}

func (s *sim) tolerates(issue string) bool { return slices.Contains(s.cfg.Tolerate, issue) }

// stuckReconciles are the client order IDs among orders whose trace is
// reconciling with its reconcile job 'running' on a River client that is
// no longer alive (its replica was killed): KnownStuckReconcile.
func (s *sim) stuckReconciles(ctx context.Context, orders []venueOrder) map[string]bool {
	out := map[string]bool{}
	if len(orders) == 0 {
		return out
	}
	var cids []string
	for _, o := range orders {
		cids = append(cids, o.ClientOrderID)
	}
	rows, err := s.query(ctx, `SELECT t.client_order_id, j.attempted_by[array_length(j.attempted_by, 1)]
FROM trace_ids t JOIN river_job j ON j.kind = 'reconcile' AND j.args->>'trace_id' = t.trace_id
WHERE t.status = 'reconciling' AND t.client_order_id = ANY($1) AND j.state = 'running'`, cids)
	if err != nil {
		return out
	}
	live := s.liveRiverClients()
	for _, r := range rows {
		if !live[r[1]] {
			out[r[0]] = true
		}
	}
	return out
}

// liveRiverClients are the River client IDs of the replicas' running
// incarnations: the last "River client started" in each replica's log.
func (s *sim) liveRiverClients() map[string]bool {
	out := map[string]bool{}
	for _, r := range s.replicas {
		if !r.alive() {
			continue
		}
		b, err := os.ReadFile(r.logPath)
		if err != nil {
			continue
		}
		last := ""
		for line := range strings.Lines(string(b)) {
			var m struct {
				Msg      string `json:"msg"`
				ClientID string `json:"client_id"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "River client started" {
				last = m.ClientID
			}
		}
		if last != "" {
			out[last] = true
		}
	}
	return out
}

// Failed counts the failures that fail the run (not tolerated).
func (r *Result) Failed() int {
	n := 0
	for _, f := range r.Failures {
		if !f.Tolerated {
			n++
		}
	}
	return n
}

// placedDuring finds a venue acceptance of the signal's placement from the
// replica that answered a while a was in flight: at >= 0 when one proves
// a's "nothing was placed" wrong, at < 0 (with ok) when one happened but
// another send of the signal to that replica was also in flight, so it
// proves nothing.
func placedDuring(st *signalState, a answer) (at time.Duration, ok bool) {
	for _, acc := range st.accepted {
		if acc.Replica != a.Replica || acc.At < a.At || acc.At > a.Done {
			continue
		}
		for _, sp := range st.spans {
			if sp.Replica == a.Replica && sp.Start != a.At && sp.Start <= acc.At && (sp.End == 0 || sp.End >= acc.At) {
				return -1, true
			}
		}
		return acc.At, true
	}
	return 0, false
}

package torture

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
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
	// Executed is what a Binance order executed, normalised ("" when the
	// book does not say: other venues, order lists, conditional orders).
	Executed string
	// Booked is when the venue booked a Binance order, on the history's
	// clock (0: unknown). A market order fills as it is booked; for a
	// limit order that filled it is when it filled (the position replay's
	// order), and Placed when it was booked.
	Booked time.Duration
	// Placed is when the venue took a Binance order, on the history's
	// clock (0: unknown): a resting order's follow horizon, its trace,
	// runs from then.
	Placed time.Duration
	// Triggered is, for the USDⓈ-M market order a conditional exit
	// became once the price reached it, the exit's client order ID: hoox
	// records it under the exit, and it belongs to no signal of its own.
	Triggered string
	// Price is what a Binance order executed at on average (zero when
	// unknown or nothing executed).
	Price decimal.Decimal
	// Limit: a Binance LIMIT order (an entry that may rest, and fill
	// when the price reaches it).
	Limit bool
	// Close: a reduce-only USDⓈ-M order that is no exit's, a close
	// signal's (its quantity is the position's, not the signal's).
	Close bool
	// FillSeq is the Binance fake's number of the order's first
	// execution (its trade ID; 0: none or unknown): the fills in the
	// order the venue made them, a resting limit order's when the price
	// reached it.
	FillSeq int64
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
	// Created is when hoox's transaction that recorded it began, on the
	// history's clock (orders.created_at; 0 when unknown).
	Created time.Duration
	// Unfollowed: hoox stopped following it while open (orders.
	// unfollowed_at), with an event and a notification.
	Unfollowed bool
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
	// TraceID is the unsettled trace's, for checkSettled.
	TraceID string
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
	// checkFilled: an order the venue filled is recorded filled.
	checkFilled = "venue_fill_recorded_filled"
	// checkSettled: no trace stays reconciling and no dispatch intent
	// stays open past the recovery bound.
	checkSettled = "nothing_stays_reconciling"
	// checkAgree: the 200s and 409s of one trace tell one story, its
	// first settled answer's.
	checkAgree = "answers_of_one_trace_agree"
	// checkHalted: no placement request reaches a venue while the kill
	// switch is engaged.
	checkHalted = "kill_switch_halts_placements"
	// checkExitFill: an exit the venue executed (the price reached it)
	// is recorded filled.
	checkExitFill = "every_triggered_exit_fill_recorded"
	// checkCancelHolds: no exit executes after a cancel's 200 that it
	// was recorded open before, and none the 200 lists as cancelled.
	checkCancelHolds = "no_exit_fill_after_a_cancel"
	// checkCloseHolds: no exit of the position a close's 200 says it
	// closed executes after it.
	checkCloseHolds = "no_exit_fill_after_a_close"
)

// venueOrders reads every venue's book.
func (s *sim) venueOrders(ctx context.Context) ([]venueOrder, error) {
	out := s.binanceOrders()
	for _, o := range s.bybit.Orders() {
		if o.Status == "Rejected" {
			continue
		}
		ex := "bybit"
		if o.Category == "spot" {
			ex = "bybit-spot"
		}
		out = append(out, venueOrder{Exchange: ex, ClientOrderID: o.OrderLinkID, ExchangeOrderID: o.OrderID, Symbol: o.Symbol,
			Side: strings.ToLower(o.Side), Quantity: o.Qty.String(), Status: o.Status})
	}
	rows, err := s.query(ctx, `SELECT client_order_id, exchange_order_id, symbol, side, quantity::text, status FROM paper_orders`)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, venueOrder{Exchange: "paper", ClientOrderID: r[0], ExchangeOrderID: r[1], Symbol: r[2], Side: strings.ToLower(r[3]),
			Quantity: normQty(r[4]), Status: r[5]})
	}
	return out, nil
}

// binanceOrders reads the Binance fake's book: spot and USDⓈ-M orders
// (a market order an exit became once triggered among them, Triggered
// set), OCO lists and USDⓈ-M conditional orders, each exit with what it
// executed.
func (s *sim) binanceOrders() []venueOrder {
	var out []venueOrder
	orders := s.binance.Orders()
	algos := s.binance.AlgoOrders()
	became := map[int64]string{}
	for _, a := range algos {
		if a.ActualOrderID != 0 {
			became[a.ActualOrderID] = a.ClientAlgoID
		}
	}
	futuresExecuted := map[int64]decimal.Decimal{}
	firstTrade := map[int64]binancefake.Trade{}
	for _, t := range s.binance.AllTrades() {
		if _, ok := firstTrade[t.OrderID]; !ok {
			firstTrade[t.OrderID] = t
		}
	}
	for _, o := range orders {
		if o.Status == "REJECTED" {
			continue
		}
		ex := "binance"
		if o.Market == binancefake.MarketFutures {
			ex = "binance-futures"
			futuresExecuted[o.OrderID] = o.ExecutedQty
		}
		exit, triggered := "", ""
		if ex == "binance" {
			exit = spotExit[o.Type]
		} else {
			triggered = became[o.OrderID]
		}
		vo := venueOrder{Exchange: ex, ClientOrderID: o.ClientOrderID, ExchangeOrderID: fmt.Sprint(o.OrderID), Symbol: o.Symbol,
			Side: strings.ToLower(o.Side), Quantity: o.Quantity.String(), Status: o.Status, Exit: exit, Executed: o.ExecutedQty.String(),
			Booked: o.Time.Sub(s.h.start), Placed: o.Time.Sub(s.h.start), Triggered: triggered}
		if o.ExecutedQty.IsPositive() {
			vo.Price = o.CumQuote.Div(o.ExecutedQty)
		}
		if t, ok := firstTrade[o.OrderID]; ok {
			vo.FillSeq = t.ID
			if o.Type == "LIMIT" {
				// A limit order fills when the price reaches it, not
				// when it is booked (a market order does both at once).
				vo.Booked = time.UnixMilli(t.Time).Sub(s.h.start)
			}
		}
		vo.Limit = o.Type == "LIMIT"
		vo.Close = ex == "binance-futures" && o.ReduceOnly && triggered == ""
		out = append(out, vo)
	}
	for _, l := range s.binance.OrderLists() {
		vo := venueOrder{Exchange: "binance", ClientOrderID: l.ListClientOrderID, ExchangeOrderID: fmt.Sprint(l.OrderListID), Symbol: l.Symbol,
			Side: strings.ToLower(l.Side), Quantity: l.Quantity.String(), Status: l.Status, Exit: "oco", Executed: "0"}
		for _, o := range []binancefake.ListOrder{l.Above, l.Below} {
			if o.ExecutedQty.IsPositive() {
				vo.Executed = o.ExecutedQty.String()
			}
		}
		out = append(out, vo)
	}
	for _, a := range algos {
		// What the order a triggered algo order became executed; nothing
		// before it triggered.
		done := futuresExecuted[a.ActualOrderID]
		out = append(out, venueOrder{Exchange: "binance-futures", ClientOrderID: a.ClientAlgoID, ExchangeOrderID: fmt.Sprint(a.AlgoID), Symbol: a.Symbol,
			Side: strings.ToLower(a.Side), Quantity: a.Quantity.String(), Status: a.Status, Exit: algoExit[a.Type], Executed: done.String()})
	}
	return out
}

// hooxLeg is a row of hoox's order_legs: a leg's outcome ("" while
// open), how often it was sent, the reason hoox recorded when it refused
// it: on its order row, else on its leg_failed event (a leg refused
// before its first send has no order row), and when hoox settled it
// (Settled, on the history's clock; 0 while open).
type hooxLeg struct {
	Outcome  string
	Attempts int
	Reason   string
	// Settled is the time of the leg's last leg_failed event, written by
	// the transaction that settled it (trace_events.at is
	// clock_timestamp(): after the reads the refusal rests on), else
	// order_legs.settled_at, which is now(), that transaction's start:
	// it can come before those reads by a venue lookup.
	Settled time.Duration
}

func (l hooxLeg) String() string {
	if l.Outcome == "" {
		return "open"
	}
	out := fmt.Sprintf("%s (sent %d times)", l.Outcome, l.Attempts)
	if l.Settled != 0 {
		out += fmt.Sprintf(" at %.3fs", l.Settled.Seconds())
	}
	if l.Reason != "" {
		out += fmt.Sprintf(" %q", l.Reason)
	}
	return out
}

// legOutcomes reads hoox's exits and other legs (order_legs), by client
// order ID.
func (s *sim) legOutcomes(ctx context.Context) (map[string]hooxLeg, error) {
	rows, err := s.query(ctx, `SELECT l.client_order_id, coalesce(l.outcome, ''), l.attempts,
       coalesce((SELECT max(o.reject_reason) FROM orders o WHERE o.client_order_id = l.client_order_id),
                (SELECT max(h.detail->>'reason') FROM trace_history h
                 WHERE h.trace_id = l.trace_id AND h.event = 'leg_failed' AND h.detail->>'client_order_id' = l.client_order_id), ''),
       extract(epoch FROM coalesce((SELECT max(h.at) FROM trace_history h
                 WHERE h.trace_id = l.trace_id AND h.event = 'leg_failed' AND h.detail->>'client_order_id' = l.client_order_id),
                l.settled_at) - $1::timestamptz)::float8
FROM order_legs l`, s.h.start)
	if err != nil {
		return nil, err
	}
	out := map[string]hooxLeg{}
	for _, r := range rows {
		n, err := strconv.Atoi(r[2])
		if err != nil {
			return nil, fmt.Errorf("torture: leg %s attempts %q: %w", r[0], r[2], err)
		}
		l := hooxLeg{Outcome: r[1], Attempts: n, Reason: r[3]}
		if r[4] != "" {
			if l.Settled, err = parseSeconds(r[4]); err != nil {
				return nil, fmt.Errorf("torture: leg %s settled %q: %w", r[0], r[4], err)
			}
		}
		out[r[0]] = l
	}
	return out, nil
}

// positionsBefore reads the position each dispatch intent stores as read
// before its entry (exchange.Order.PositionBefore in order_spec; "" when
// it stores none), by client order ID. Intents are never purged, and a
// re-armed one holds the read of the attempt that armed it last.
func (s *sim) positionsBefore(ctx context.Context) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT client_order_id, coalesce(order_spec->>'PositionBefore', '') FROM dispatch_intents`)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r[0]] = r[1]
	}
	return out, nil
}

// hooxOrders reads hoox's orders table, by client order ID.
func (s *sim) hooxOrders(ctx context.Context) (map[string]hooxOrder, error) {
	rows, err := s.query(ctx, `SELECT trace_id, client_order_id, exchange, symbol, coalesce(side, ''), quantity::text, status, coalesce(exchange_order_id, ''),
       extract(epoch FROM created_at - $1::timestamptz)::float8, unfollowed_at IS NOT NULL FROM orders`, s.h.start)
	if err != nil {
		return nil, err
	}
	out := map[string]hooxOrder{}
	for _, r := range rows {
		created, _ := parseSeconds(r[8])
		out[r[1]] = hooxOrder{r[0], r[1], r[2], r[3], r[4], normQty(r[5]), r[6], r[7], created, r[9] == "true"}
	}
	return out, nil
}

// tracePurges reads when hoox deleted each trace it purged (trace_purges),
// on the history's clock.
func (s *sim) tracePurges(ctx context.Context) (map[string][]time.Duration, error) {
	rows, err := s.query(ctx, `SELECT trace_id, extract(epoch FROM at - $1::timestamptz)::float8 FROM trace_purges`, s.h.start)
	if err != nil {
		return nil, err
	}
	out := map[string][]time.Duration{}
	for _, r := range rows {
		at, err := parseSeconds(r[1])
		if err != nil {
			return nil, fmt.Errorf("torture: trace %s purged at %q: %w", r[0], r[1], err)
		}
		out[r[0]] = append(out[r[0]], at)
	}
	return out, nil
}

// parseSeconds reads a moment on the history's clock, as the checker's
// queries give it: seconds since the run's start (extract(epoch FROM … -
// start)).
func parseSeconds(text string) (time.Duration, error) {
	f, err := strconv.ParseFloat(text, 64)
	return time.Duration(f * float64(time.Second)), err
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
// recorded (a filled one as filled), every leg, trace and dispatch intent
// to settle, then runs every check over the history and the books.
func (s *sim) check(ctx context.Context) (*Result, error) {
	quiet := time.Now()
	var vos []venueOrder
	var hos map[string]hooxOrder
	var unrecorded []venueOrder
	var unsettled []unsettledRow
	for {
		// The reads are not one snapshot, so they go from what is still
		// due to what it leads to: the jobs a dead replica left, then the
		// unsettled traces, then the orders. A job or a settlement that
		// commits between two reads then shows as still due, never as an
		// order missing after its trace settled (which
		// TestCheckWaitsForATraceWhoseReconcileJobADeadReplicaLeftRunning
		// caught on a busy machine).
		dead := s.deadJobs(ctx)
		var err error
		if unsettled, err = s.unsettled(ctx); err != nil {
			return nil, err
		}
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
		for _, l := range s.legs {
			if l.Outcome == "" {
				openLegs++
			}
		}
		unfilled := fillsNotRecorded(vos, hos)
		done := len(unrecorded) == 0 && openLegs == 0 && len(unsettled) == 0 && len(unfilled) == 0
		if done || ctx.Err() != nil {
			break
		}
		// A fill whose follow job, or a trace whose reconcile job, a
		// replica killed in the run's last seconds left running is judged
		// by hoox's own bound for it, which may end past the recovery
		// bound.
		if time.Since(quiet) > s.cfg.RecoveryBound && !dead.followsDue(unfilled) && !dead.reconcilesDue(unsettled) {
			break
		}
		// A reconcile stuck 'running' on a dead replica: tolerated, waiting
		// out the bound for it shows nothing more.
		if s.tolerates(KnownStuckReconcile) && s.onlyStuck(ctx, unrecorded, unsettled) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	s.waited = time.Since(quiet)
	var err error
	// Only the judging reads when hoox purged each trace: read once, after
	// the wait for recovery.
	if s.purged, err = s.tracePurges(ctx); err != nil {
		return nil, err
	}
	if s.positionBefore, err = s.positionsBefore(ctx); err != nil {
		return nil, err
	}
	res := &Result{Seed: s.cfg.Seed, Signals: len(s.plan.signals), Ops: s.ops.snapshot(), Faults: s.faults.snapshot(),
		Answers: s.answers.snapshot(), Checks: map[string]int{}, Replay: s.cfg.Replay, Elapsed: time.Since(s.h.start),
		Recovery: time.Since(quiet)}
	bySig := s.judge(res, vos, hos, unrecorded)
	s.judgeUnsettled(res, unsettled)
	stuck := s.stuckReconciles(ctx)
	stuckFollows := s.stuckFollows(ctx)
	for i, f := range res.Failures {
		if (f.Check == checkRecorded && stuck[f.ClientOrderID]) || (f.Check == checkSettled && stuck[f.TraceID]) {
			res.Failures[i].Known = KnownStuckReconcile
			res.Failures[i].Tolerated = s.tolerates(KnownStuckReconcile)
		}
		if (f.Check == checkExitFill || f.Check == checkFilled) && stuckFollows[f.ClientOrderID] {
			res.Failures[i].Known = KnownStuckFollow
			res.Failures[i].Tolerated = s.tolerates(KnownStuckFollow)
		}
	}
	rank := map[string]int{checkAtMostOnce: 0, checkExitOnce: 0, checkHalted: 0, checkCancelHolds: 0, checkCloseHolds: 0, checkExitFill: 4, check422: 1, checkAnswer: 2, checkAgree: 2, check503: 3,
		checkTruthful: 4, checkFilled: 4, checkRecorded: 5, checkSettled: 5, checkAttributed: 6, checkExitAttributed: 6, checkPositionBefore: 6,
		checkExitPlaced: 7}
	slices.SortStableFunc(res.Failures, func(a, b Failure) int { return rank[a.Check] - rank[b.Check] })
	for i := range res.Failures {
		res.Failures[i].History = s.minimalHistory(ctx, res.Failures[i].Signal, s.h.events(), bySig, hos)
	}
	return res, nil
}

// unsettledRow is a trace still reconciling or a dispatch intent still
// open: an attempt whose outcome hoox has not settled.
type unsettledRow struct {
	What, TraceID, ClientOrderID, Exchange, Quantity, Since string
}

// unsettledSQL lists the traces still reconciling and the dispatch intents
// still open — but an intent the sweeper left open after the venue
// answered that it holds no order under its ID (asked_at set: a dead
// Bybit attempt's, left for the signal's resend to send under the same
// ID, jobs.leftForTheResend): that is its settled state, and its order,
// should the venue book it late, is judged as any order at the venue.
const unsettledSQL = `
SELECT 'trace reconciling', trace_id, coalesce(client_order_id, ''), exchange, coalesce(signal->>'quantity', ''), updated_at
FROM trace_ids WHERE status = 'reconciling'
UNION ALL
SELECT 'dispatch intent open', trace_id, client_order_id, exchange, coalesce(order_spec->>'quantity', ''), sent_at
FROM dispatch_intents WHERE outcome IS NULL AND asked_at IS NULL`

// unsettled reads the attempts hoox has not settled yet.
func (s *sim) unsettled(ctx context.Context) ([]unsettledRow, error) {
	rows, err := s.query(ctx, unsettledSQL)
	if err != nil {
		return nil, err
	}
	out := make([]unsettledRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, unsettledRow{What: r[0], TraceID: r[1], ClientOrderID: r[2], Exchange: r[3], Quantity: normQty(r[4]), Since: r[5]})
	}
	return out, nil
}

// judgeUnsettled fails every attempt still unsettled after the recovery
// bound (DESIGN.md: "Nothing stays reconciling forever"): an order its
// reconcile places after the checker's snapshot would never be judged.
func (s *sim) judgeUnsettled(res *Result, rows []unsettledRow) {
	for _, r := range rows {
		res.Failures = append(res.Failures, Failure{Check: checkSettled, Signal: s.signalOfTrace(r), ClientOrderID: r.ClientOrderID, TraceID: r.TraceID,
			Detail: fmt.Sprintf("%s %s (client order ID %s, since %s) %s after the faults stopped (bound %s)",
				r.What, r.TraceID, orNone(r.ClientOrderID), r.Since, s.waited.Round(time.Millisecond), s.cfg.RecoveryBound)})
	}
	if len(rows) == 0 {
		res.Checks[checkSettled]++
	}
}

// signalOfTrace is the signal an unsettled attempt belongs to: the one an
// answer named its trace to, else the one of its venue and quantity; -1
// when none.
func (s *sim) signalOfTrace(r unsettledRow) int {
	for id, st := range s.sigState {
		if slices.Contains(st.traces, r.TraceID) || slices.ContainsFunc(st.answers, func(a answer) bool { return a.TraceID == r.TraceID }) {
			return id
		}
	}
	if id, ok := s.byQuantity[r.Exchange+"|"+r.Quantity]; ok {
		return id
	}
	return -1
}

// fillsNotRecorded are the venue's filled orders that hoox records, but
// not as filled.
func fillsNotRecorded(vos []venueOrder, hos map[string]hooxOrder) []venueOrder {
	var out []venueOrder
	for _, o := range vos {
		if h, ok := hos[o.ClientOrderID]; ok && h.records(o) && filledAtVenue(o) && h.Status != "filled" && !h.Unfollowed {
			out = append(out, o)
		}
	}
	return out
}

// filledAtVenue reports whether the venue filled o: an entry it says
// filled, an exit that executed (triggered, or one of its list's orders
// filled).
func filledAtVenue(o venueOrder) bool {
	if o.Exit != "" {
		return executed(o).IsPositive()
	}
	return strings.EqualFold(o.Status, "filled")
}

// reopenings are the moments a signal's trace was legitimately opened
// again, in order: a successful release of its trace followed by a send, a
// purge requested at least one TTL after its first send, or hoox's record
// of purging one of its traces, followed by a send, and, in
// window mode, a send one window after the first. Each allows one more
// execution, after it.
func (s *sim) reopenings(sp *signalPlan, st *signalState, ttl, slack time.Duration) []time.Duration {
	if len(st.sends) == 0 {
		return nil
	}
	first, last := st.sends[0], st.sends[len(st.sends)-1]
	var out []time.Duration
	for _, at := range s.releases[sp.ID] {
		if last > at {
			out = append(out, at)
		}
	}
	// A purge reopens the trace when it deletes it. hoox records that
	// moment (trace_purges); a purge asked for before the trace expired
	// may still delete it after (it runs as a job). When hoox recorded
	// purging one of the signal's traces those moments are the reopenings;
	// else (no trace of it known, or none purged) the requests one TTL
	// after its first send are.
	var freedAt []time.Duration
	for _, trace := range st.traces {
		freedAt = append(freedAt, s.purged[trace]...)
	}
	if len(freedAt) == 0 {
		for _, at := range s.purges {
			if at >= first+ttl-slack {
				freedAt = append(freedAt, at)
			}
		}
	}
	for _, at := range freedAt {
		if last > at {
			out = append(out, at)
		}
	}
	if sp.Mode == ModeWindow {
		for _, at := range st.sends[1:] {
			if at >= first+ttl-slack {
				out = append(out, at)
			}
		}
	}
	slices.Sort(out)
	return out
}

// opening is the index of the opening at is in: how many re-openings
// came before it.
func opening(reopenings []time.Duration, at time.Duration) int {
	n, _ := slices.BinarySearch(reopenings, at)
	return n
}

// crowdedOpening finds an opening in which the venue accepted more than one
// of the signal's placements: at most one acceptance before the first
// re-opening and one between consecutive re-openings. It returns the
// opening and its accepted requests' arrivals, or -1.
func crowdedOpening(reopenings []time.Duration, accepted []acceptance) (int, []time.Duration) {
	by := map[int][]time.Duration{}
	for _, a := range accepted {
		// By the request's arrival: a placement sent before a
		// re-opening is the old opening's, whenever the venue answered.
		n := opening(reopenings, a.arrival())
		by[n] = append(by[n], a.arrival())
	}
	for _, n := range slices.Sorted(maps.Keys(by)) {
		if len(by[n]) > 1 {
			return n, by[n]
		}
	}
	return -1, nil
}

// minimalHistory is the signal's own events, the run-wide faults while it
// was alive, its venue orders and hoox's records of them.
func (s *sim) minimalHistory(ctx context.Context, sig int, events []event, bySig map[int][]venueOrder, hos map[string]hooxOrder) []string {
	if sig < 0 {
		return nil
	}
	sp := s.plan.signals[sig]
	var out []string
	out = append(out, fmt.Sprintf("signal %d: %s %s %s qty=%s limit=%s exits=%v mode=%s client=%s lb_retry=%v text_plain=%v planned_fault=%s at %.3fs",
		sp.ID, sp.Venue.name, sp.Symbol, sp.Side, sp.Quantity, orNone(sp.Limit), sp.Exits, sp.Mode, sp.Client, sp.LBRetry, sp.TextPlain, orNone(sp.Fault), sp.At.Seconds()))
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
		if o.Triggered != "" {
			// Recorded under its exit's ID (checkExitFill).
			continue
		}
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
		if o.Triggered != "" {
			// The market order an exit became: judged with its exit.
			continue
		}
		byClientID[o.Exchange+"|"+o.ClientOrderID] = o
		if o.Close {
			// A close's quantity is the position's: it is its signal's
			// by the trace hoox recorded it under.
			id := s.closeSignalOf(o, hos)
			if id < 0 {
				fail(checkAttributed, -1, "reduce-only order matches no close signal (hoox's trace: %s): %s", hos[o.ClientOrderID].TraceID, o)
				continue
			}
			res.Checks[checkAttributed]++
			bySig[id] = append(bySig[id], o)
			continue
		}
		id, ok := s.byQuantity[o.Exchange+"|"+o.Quantity]
		if !ok || o.Symbol != s.plan.signals[id].Symbol || o.Side != s.plan.signals[id].Side || s.plan.signals[id].isClose() {
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
			continue
		case h.Side != "" && (h.Side != o.Side || h.Quantity != o.Quantity || h.Symbol != o.Symbol):
			fail(checkTruthful, sig, "hoox recorded order %s as %s %s %s, but the venue holds %s", o.ClientOrderID, h.Symbol, h.Side, h.Quantity, o)
		default:
			res.Checks[checkTruthful]++
		}
		if o.Exit != "" {
			// An exit's fill is checkExitFill's.
			continue
		}
		if strings.EqualFold(o.Status, "filled") {
			if h.Status != "filled" && h.Unfollowed && s.traceFreed(sig, h.TraceID, o.Placed) {
				// Its follow horizon, the trace, was released or purged
				// while it rested (since it was placed, not since it
				// filled): hoox said it stopped following it.
				res.Checks[checkFilled]++
				continue
			}
			if h.Status != "filled" {
				failOrder(checkFilled, sig, o.ClientOrderID, "the venue filled order %s, yet hoox records it %s %s after the faults stopped (bound %s): %s",
					o.ClientOrderID, h.Status, s.waited.Round(time.Millisecond), s.cfg.RecoveryBound, o)
			} else {
				res.Checks[checkFilled]++
			}
		}
	}

	ttl := s.cfg.window()
	slack := time.Second
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		st := s.sigState[sp.ID]
		orders := bySig[sp.ID]
		reopenings := s.reopenings(sp, st, ttl, slack)
		reopens := len(reopenings)
		switch n, crowd := crowdedOpening(reopenings, st.accepted); {
		case len(orders) > 1+reopens:
			fail(checkAtMostOnce, sp.ID, "%d orders at %s for one signal (%d legitimate re-openings by release, purge or window)",
				len(orders), sp.Venue.name, reopens)
		case n >= 0:
			fail(checkAtMostOnce, sp.ID, "%s accepted %d placements of the signal (at %s) between its re-openings %d and %d (re-openings at %s): one allowed",
				sp.Venue.name, len(crowd), seconds(crowd), n, n+1, seconds(reopenings))
		default:
			res.Checks[checkAtMostOnce]++
		}
		for _, a := range st.answers {
			switch {
			case a.Status == 422 || (a.Status == 409 && a.Code == "duplicate" && a.Original != nil && a.Original.Status == "rejected"):
				// The signal's order was refused: nothing executed but
				// what a re-opening allowed.
				if len(orders) > reopens {
					fail(check422, sp.ID, "answered %d %s (original %s) at %.3fs, yet %d orders executed (%d re-openings)",
						a.Status, a.Code, originalStatus(a), a.At.Seconds(), len(orders), reopens)
				} else {
					res.Checks[check422]++
				}
			case a.Status == 503 && strings.Contains(a.Body, "nothing was placed"):
				switch at, ok := placedDuring(st, a); {
				case !ok:
					res.Checks[check503]++
				case at >= 0:
					fail(check503, sp.ID, "answered 503 %s %q (sent %.3fs, answered %.3fs), yet %s accepted a placement from replica %d whose request arrived at %.3fs",
						a.Code, "nothing was placed", a.At.Seconds(), a.Done.Seconds(), sp.Venue.name, a.Replica, at.Seconds())
				}
			case a.Status == 200 || (a.Status == 409 && a.Code == "duplicate"):
				s.judgeAnswer(res, sp, a, byClientID)
			}
		}
		s.judgeAgreement(res, sp, st, reopenings)
	}
	s.judgeHalted(res, s.h.events())
	s.judgeExits(res, vos, exits, hos)
	s.judgeExitFills(res, exits, hos)
	resting := slices.Clone(exits)
	for _, o := range vos {
		if o.Limit && o.Exit == "" && o.Triggered == "" {
			resting = append(resting, o)
		}
	}
	s.judgeCancels(res, resting, hos)
	s.judgeCloses(res, bySig, exits, hos)
	return bySig
}

// judgeAnswer checks a 200's or a 409 duplicate's order: what the answer
// itself says it placed is the signal's order, and the venue holds that
// order with the signal's symbol, side and quantity.
func (s *sim) judgeAnswer(res *Result, sp *signalPlan, a answer, byClientID map[string]venueOrder) {
	if sp.isCancel() {
		// A cancel names no order of its own (judgeCancels).
		return
	}
	fail := func(format string, args ...any) {
		res.Failures = append(res.Failures, Failure{Check: checkAnswer, Signal: sp.ID, Detail: fmt.Sprintf(format, args...)})
	}
	if sp.isClose() {
		s.judgeCloseAnswer(res, sp, a, byClientID)
		return
	}
	if o := a.Order; a.Status == 200 && o != nil &&
		(o.Exchange != sp.Venue.name || o.Symbol != sp.Symbol || o.Side != sp.Side || normQty(o.Quantity) != normQty(sp.Quantity)) {
		fail("200 at %.3fs says it placed %s %s %s qty=%s, not the signal's %s %s %s qty=%s",
			a.At.Seconds(), o.Exchange, o.Symbol, o.Side, o.Quantity, sp.Venue.name, sp.Symbol, sp.Side, sp.Quantity)
		return
	}
	cid, what := "", ""
	if a.Order != nil && a.Order.Status != "rejected" {
		cid, what = a.Order.ClientOrderID, "order"
	} else if a.Original != nil && a.Original.ClientOrderID != nil && a.Original.Status == "dispatched" {
		cid, what = *a.Original.ClientOrderID, "original"
	}
	if cid == "" {
		if a.Status == 200 {
			fail("200 at %.3fs names no order: %s", a.At.Seconds(), a.Body)
		}
		return
	}
	o, ok := byClientID[sp.Venue.name+"|"+cid]
	switch {
	case !ok:
		fail("%d at %.3fs names %s %s, which %s does not hold", a.Status, a.At.Seconds(), what, cid, sp.Venue.name)
	case o.Symbol != sp.Symbol || o.Side != sp.Side || o.Quantity != normQty(sp.Quantity):
		fail("%d at %.3fs names %s, which is %s, not the signal's %s %s %s", a.Status, a.At.Seconds(), cid, o, sp.Symbol, sp.Side, sp.Quantity)
	default:
		res.Checks[checkAnswer]++
	}
}

// settledAnswer is the outcome an answer says its trace settled on
// (dispatched, rejected or failed) and the client order ID it names; ok
// false for an answer that tells no settled outcome (202 reconciling, 409
// in_progress, 5xx, …).
func settledAnswer(a answer) (outcome, cid string, ok bool) {
	switch {
	case a.Status == 200 && a.Order != nil:
		outcome = "dispatched"
		if a.Order.Status == "rejected" {
			outcome = "rejected"
		}
		return outcome, a.Order.ClientOrderID, true
	case a.Status == 422 && a.Code == "order_rejected":
		if a.Order != nil {
			cid = a.Order.ClientOrderID
		}
		return "rejected", cid, true
	case a.Status == 409 && a.Code == "duplicate" && a.Original != nil:
		switch a.Original.Status {
		case "dispatched", "rejected", "failed":
			if a.Original.ClientOrderID != nil {
				cid = *a.Original.ClientOrderID
			}
			return a.Original.Status, cid, true
		}
	}
	return "", "", false
}

// reopenLag is how long after a re-opening was sent an answer may still
// tell the old opening's story: the release's or the purge's commit comes
// after its request (the admin client's timeout).
const reopenLag = 5 * time.Second

// judgeAgreement checks that the settled answers of one trace, within one
// opening, agree with its first: a settled trace never changes (db.
// TraceStatus.Settled) until a release or the purge frees it. Answers in
// flight around a re-opening may tell either story and are not judged.
func (s *sim) judgeAgreement(res *Result, sp *signalPlan, st *signalState, reopenings []time.Duration) {
	type story struct {
		outcome, cid string
		a            answer
	}
	answers := slices.Clone(st.answers)
	slices.SortStableFunc(answers, func(a, b answer) int { return int(a.Done - b.Done) })
	first := map[string]story{}
	for _, a := range answers {
		outcome, cid, ok := settledAnswer(a)
		if !ok || a.TraceID == "" || slices.ContainsFunc(reopenings, func(r time.Duration) bool { return r <= a.Done && r+reopenLag >= a.At }) {
			continue
		}
		key := fmt.Sprintf("%s|%d", a.TraceID, opening(reopenings, a.At))
		f, seen := first[key]
		switch {
		case !seen:
			first[key] = story{outcome, cid, a}
		case f.outcome != outcome || (f.cid != "" && cid != "" && f.cid != cid):
			res.Failures = append(res.Failures, Failure{Check: checkAgree, Signal: sp.ID, Detail: fmt.Sprintf(
				"trace %s: %d at %.3fs says %s (client order ID %s), but its first settled answer, %d at %.3fs, said %s (client order ID %s)",
				a.TraceID, a.Status, a.At.Seconds(), outcome, orNone(cid), f.a.Status, f.a.At.Seconds(), f.outcome, orNone(f.cid))})
		default:
			res.Checks[checkAgree]++
		}
	}
}

// spell is a stretch of the run in which the kill switch was surely
// engaged.
type spell struct{ From, To time.Duration }

// killSwitchSpells are the stretches from an engagement's 200 until the
// first release sent after it (any release attempt may have committed,
// answered or not). An engagement whose request overlapped a release's
// may have been undone by it: it opens no spell.
func killSwitchSpells(events []event) []spell {
	sent := func(e event) time.Duration {
		if e.Sent > 0 {
			return e.Sent
		}
		return e.At
	}
	var out []spell
	for _, on := range events {
		if on.Kind != "kill_switch_on" || !strings.HasPrefix(on.Detail, "→ 200") {
			continue
		}
		sp, overlapped := spell{From: on.At, To: time.Duration(math.MaxInt64)}, false
		for _, off := range events {
			if off.Kind != "kill_switch_off" {
				continue
			}
			if sent(off) <= on.At && off.At >= sent(on) {
				overlapped = true
			}
			if sent(off) > on.At && sent(off) < sp.To {
				sp.To = sent(off)
			}
		}
		if !overlapped {
			out = append(out, sp)
		}
	}
	return out
}

// judgeHalted checks DESIGN.md's "The kill switch halts every placement,
// including a reconcile's": no placement request (an entry's or an
// exit's, accepted or not) reaches a venue's front inside a kill switch
// spell, unless a send of its signal was already under way when the
// engagement was answered (its claim may have read the switch before).
// The paper venue has no front: its placements are not judged.
func (s *sim) judgeHalted(res *Result, events []event) {
	spells := killSwitchSpells(events)
	reqs := slices.Clone(s.placements)
	for _, id := range slices.Sorted(maps.Keys(s.sigState)) {
		for _, a := range s.sigState[id].accepted {
			if a.Arrived == 0 {
				// No arrival recorded (a made-up history): the
				// acceptance stands for its request.
				reqs = append(reqs, placementRequest{Arrived: a.At, Replica: a.Replica, Signal: id, What: "placement"})
			}
		}
	}
	for _, p := range reqs {
		i := slices.IndexFunc(spells, func(sp spell) bool { return p.Arrived > sp.From && p.Arrived < sp.To })
		if i < 0 || (p.Signal >= 0 && underWay(s.sigState[p.Signal], spells[i].From, p.Arrived)) {
			res.Checks[checkHalted]++
			continue
		}
		to := "never"
		if spells[i].To != time.Duration(math.MaxInt64) {
			to = fmt.Sprintf("%.3fs", spells[i].To.Seconds())
		}
		f := Failure{Check: checkHalted, Signal: p.Signal, Detail: fmt.Sprintf(
			"%s from replica %d reached the venue at %.3fs while the kill switch was engaged (engaged by %.3fs, release sent %s), and no send of its signal was under way before",
			p.What, p.Replica, p.Arrived.Seconds(), spells[i].From.Seconds(), to)}
		if p.Exit {
			f.Known, f.Tolerated = KnownLegUnderKillSwitch, s.tolerates(KnownLegUnderKillSwitch)
		}
		res.Failures = append(res.Failures, f)
	}
}

// underWay reports whether a send of the signal began before from and was
// still unanswered at at.
func underWay(st *signalState, from, at time.Duration) bool {
	if st == nil {
		return false
	}
	return slices.ContainsFunc(st.spans, func(sp span) bool { return sp.Start < from && (sp.End == 0 || sp.End >= at) })
}

func originalStatus(a answer) string {
	if a.Original == nil {
		return "none"
	}
	return a.Original.Status
}

func seconds(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%.3fs", d.Seconds())
	}
	return "[" + strings.Join(out, " ") + "]"
}

// exitQuantityFits reports whether exit x's quantity is its entry's: on
// USDⓈ-M what the entry opened (cover, see exitCover) or, for an entry
// that filled nothing, the entry's; on spot what the entry received (net
// of a commission in the coin bought, rounded down), so at most the
// entry's and more than nothing.
func exitQuantityFits(x, entry venueOrder, cover *exitCover) bool {
	q, err1 := decimal.NewFromString(x.Quantity)
	e, err2 := decimal.NewFromString(entry.Quantity)
	switch {
	case err1 != nil || err2 != nil:
		return false
	case cover != nil:
		return q.Equal(cover.Opened) || cover.cappedTo(q)
	case x.Exchange != "binance":
		return q.Equal(e)
	}
	return q.IsPositive() && !q.GreaterThan(e)
}

// judgeExits checks the exits of the Binance entries that asked for them:
// every exit at the venue is one an entry planned (derived from the
// entry's client order ID, on the entry's market, with the role and the
// opposite side of the entry, for its quantity: on USDⓈ-M what the entry
// opened, from the position its intent stores, which must be one the
// venue held), no planned exit was placed twice, and every entry the venue
// filled got each exit it asked for, whatever hoox recorded of the entry
// (s.legs only explains a missing one), or, when it opened nothing, none,
// each recorded rejected with its reason and never sent. On USDⓈ-M an exit
// refused because its position closed, or capped to what was held, passes
// only as the replay of the symbol's fills after the entry's bears out
// (exitCover.closed, exitCover.cappedTo).
func (s *sim) judgeExits(res *Result, vos, exits []venueOrder, hos map[string]hooxOrder) {
	type planned struct {
		entry venueOrder
		sig   int
		role  string
		// cover is what the exit must cover on a venue whose exits
		// cover only what the entry opened; nil elsewhere, and for an
		// entry that executed nothing.
		cover *exitCover
	}
	want := map[string]planned{}
	fills := positionFills(vos)
	for _, e := range vos {
		if e.Exit != "" || e.Triggered != "" || e.Close || (e.Exchange != "binance-futures" && e.Exchange != "binance") {
			continue
		}
		sig, ok := s.byQuantity[e.Exchange+"|"+e.Quantity]
		if !ok || len(s.plan.signals[sig].exitLegs()) == 0 {
			continue
		}
		var cover *exitCover
		if coversOpened(e.Exchange) && executed(e).IsPositive() {
			c := s.exitCover(res, e, sig, fills[e.Symbol])
			cover = &c
		}
		for n, role := range s.plan.signals[sig].exitLegs() {
			want[e.Exchange+"|"+signal.LegClientOrderID(e.ClientOrderID, n+1)] = planned{e, sig, role, cover}
		}
	}
	// Keyed by venue and client order ID: an exit lives on its entry's
	// market (a USDⓈ-M sell carrying a spot entry's leg ID opens a short,
	// it does not sell the coins bought).
	placed, seen := map[string]int{}, map[string]bool{}
	for _, x := range exits {
		w, ok := want[x.Exchange+"|"+x.ClientOrderID]
		if !ok {
			other := slices.IndexFunc([]string{"binance", "binance-futures"}, func(ex string) bool {
				_, found := want[ex+"|"+x.ClientOrderID]
				return found
			})
			if other >= 0 {
				w := want[[]string{"binance", "binance-futures"}[other]+"|"+x.ClientOrderID]
				res.Failures = append(res.Failures, Failure{Check: checkExitAttributed, Signal: w.sig, ClientOrderID: x.ClientOrderID,
					Detail: fmt.Sprintf("exit order carries the leg ID of entry %s on %s, but is on %s: %s", w.entry.ClientOrderID, w.entry.Exchange, x.Exchange, x)})
				continue
			}
		}
		seen[x.Exchange+"|"+x.ClientOrderID] = true
		if !ok || x.Exit != w.role || x.Side == w.entry.Side || !exitQuantityFits(x, w.entry, w.cover) || x.Symbol != w.entry.Symbol {
			sig, why := -1, ""
			if ok {
				sig = w.sig
			}
			if ok && w.cover != nil {
				why = fmt.Sprintf(" (entry %s: %s; held on its side since: %s)", w.entry.ClientOrderID, w.cover, w.cover.heldString())
				if w.cover.Opened.IsZero() {
					why = fmt.Sprintf(" (entry %s opened nothing for it to protect: %s)", w.entry.ClientOrderID, w.cover)
				}
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitAttributed, Signal: sig, ClientOrderID: x.ClientOrderID,
				Detail: fmt.Sprintf("exit order matches no exit an entry planned: %s%s", x, why)})
			continue
		}
		res.Checks[checkExitAttributed]++
		placed[x.Exchange+"|"+x.ClientOrderID]++
	}
	for key, n := range placed {
		w := want[key]
		id := strings.TrimPrefix(key, w.entry.Exchange+"|")
		if n > 1 {
			res.Failures = append(res.Failures, Failure{Check: checkExitOnce, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("%d %s orders for entry %s", n, w.role, w.entry.ClientOrderID)})
		} else {
			res.Checks[checkExitOnce]++
		}
	}
	// The venue's word, not hoox's record, says whether the entry filled:
	// an entry hoox still records open would hide its missing exits.
	for key, w := range want {
		id := strings.TrimPrefix(key, w.entry.Exchange+"|")
		if !strings.EqualFold(w.entry.Status, "filled") || placed[key] > 0 {
			if placed[key] > 0 {
				res.Checks[checkExitPlaced]++
			}
			continue
		}
		recorded := "not recorded by hoox"
		if h, ok := hos[w.entry.ClientOrderID]; ok && h.records(w.entry) {
			recorded = "recorded " + h.Status
		}
		leg, planned := s.legs[id]
		switch {
		case w.cover != nil && w.cover.Opened.IsZero() && seen[key]:
			// At the venue though the entry opened nothing: failed above.
		case w.cover != nil && w.cover.Opened.IsZero():
			// The entry only reduced the position on the other side:
			// hoox records the exit rejected, with why, and sends nothing
			// (or a cancel after the entry dropped it first, seed 191202).
			if planned && (leg.Outcome == "rejected" && leg.Attempts == 0 && leg.Reason != "" || s.droppedByACancel(w.entry, leg)) {
				res.Checks[checkExitPlaced]++
				continue
			}
			state := "never planned"
			if planned {
				state = leg.String()
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled (%s) and opened nothing (%s): its %s should be recorded rejected with a reason, never sent; hoox's leg: %s",
					w.entry.ClientOrderID, recorded, w.cover, w.role, state)})
		case w.cover != nil && planned && leg.Outcome == "rejected" && leg.Attempts == 0 && strings.Contains(leg.Reason, "is closed"):
			// hoox read the position before the first send and found it
			// closed: true only if the replay closed (or flipped) it
			// after the entry's fill.
			if w.cover.closed() {
				res.Checks[checkExitPlaced]++
				continue
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled (%s; %s), its %s was refused as its position closed, yet no fill after the entry's closed the position on its side: held %s; hoox's leg: %s",
					w.entry.ClientOrderID, recorded, w.cover, w.role, w.cover.heldString(), leg)})
		case planned && (s.droppedByACancel(w.entry, leg) || s.droppedAfterASibling(w.entry, leg) || s.refusedAsReached(w.entry, w.role, leg) ||
			s.refusedUnheard(w.entry, w.role, id, leg) || !seen[key] && s.unknownAfterAClose(w.entry, w.cover, leg)):
			// A cancel that came after the entry stopped it before its
			// first send, a sibling exit the venue executed closed its
			// position first, the venue refused it because the price had
			// already reached it (and the run's price did), or a close
			// that did close its position marked it while its first send
			// was unknown, and the venue holds none.
			res.Checks[checkExitPlaced]++
		case planned && leg.Outcome != "" && leg.Outcome != "dispatched":
			// hoox recorded why the exit is not at the venue (a refusal):
			// nothing lost silently, but nothing else here should refuse
			// one.
			opened := ""
			if w.cover != nil {
				opened = "; " + w.cover.String()
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled (%s%s), its %s is not at the venue; hoox's leg: %s", w.entry.ClientOrderID, recorded, opened, w.role, leg)})
		default:
			state := "never planned"
			if planned {
				state = "leg " + leg.String()
			}
			opened := ""
			if w.cover != nil {
				opened = "; " + w.cover.String()
			}
			res.Failures = append(res.Failures, Failure{Check: checkExitPlaced, Signal: w.sig, ClientOrderID: id,
				Detail: fmt.Sprintf("entry %s filled at the venue (%s%s), its %s was never placed (%s)", w.entry.ClientOrderID, recorded, opened, w.role, state)})
		}
	}
}

// signalOf is the signal a venue order belongs to by its venue and
// quantity, -1 when none.
func (s *sim) signalOf(o venueOrder) int {
	if o.Close {
		return -1
	}
	if id, ok := s.byQuantity[o.Exchange+"|"+o.Quantity]; ok {
		return id
	}
	return -1
}

func (s *sim) tolerates(issue string) bool { return slices.Contains(s.cfg.Tolerate, issue) }

// stuckReconciles are the traces reconciling with their reconcile job
// 'running' on a River client that is no longer alive (its replica was
// killed), by trace ID and by client order ID: KnownStuckReconcile.
func (s *sim) stuckReconciles(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	rows, err := s.query(ctx, `SELECT t.trace_id, coalesce(t.client_order_id, ''), j.attempted_by[array_length(j.attempted_by, 1)]
FROM trace_ids t JOIN river_job j ON j.kind = 'reconcile' AND j.args->>'trace_id' = t.trace_id
WHERE t.status = 'reconciling' AND j.state = 'running'`)
	if err != nil {
		return out
	}
	live := s.liveRiverClients()
	for _, r := range rows {
		if !live[r[2]] {
			out[r[0]] = true
			if r[1] != "" {
				out[r[1]] = true
			}
		}
	}
	return out
}

// stuckFollows are the client order IDs whose follow job is 'running' on
// a River client that is no longer alive (its replica was killed):
// KnownStuckFollow.
func (s *sim) stuckFollows(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	rows, err := s.query(ctx, `SELECT args->>'client_order_id', attempted_by[array_length(attempted_by, 1)]
FROM river_job WHERE kind = 'follow' AND state = 'running'`)
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

// followRescueBound is how long after its attempt began hoox runs again a
// follow job left 'running' by a replica killed with -9: River's rescuer
// takes it for dead 75 s after (jobs.Config.rescueStuckAfter at the
// default HOOX_VENUE_TIMEOUT, which the run keeps), at its next pass
// (every 30 s), then the job waits about a second for its retry and up to
// 5 s for River's scheduler; the rest is the look's own time.
const followRescueBound = 2 * time.Minute

// deadJobs are the follow and reconcile jobs whose recovery by hoox is
// still due, by kind and then by their args' key (a follow's client order
// ID, a reconcile's trace ID): 'running' on a River client no replica
// runs, or just rescued from one and waiting for its retry (River's
// rescuer makes it retryable, its error "Stuck job rescued by
// JobRescuer", and it runs again about a second later: seed 191204),
// attempted less than followRescueBound ago (by Postgres's clock).
type deadJobs map[string]map[string]bool

func (s *sim) deadJobs(ctx context.Context) deadJobs {
	rows, err := s.query(ctx, `SELECT kind, CASE kind WHEN 'follow' THEN args->>'client_order_id' ELSE args->>'trace_id' END, attempted_by[array_length(attempted_by, 1)], state::text
FROM river_job WHERE kind IN ('follow', 'reconcile') AND attempted_at > now() - $1::bigint * interval '1 millisecond'
  AND (state = 'running' OR (state IN ('retryable', 'available')
    AND errors[array_length(errors, 1)]->>'error' LIKE 'Stuck job rescued%'))`,
		cmp.Or(s.rescueBound, followRescueBound).Milliseconds())
	out := deadJobs{}
	if err != nil {
		return out
	}
	live := s.liveRiverClients()
	for _, r := range rows {
		if r[3] != "running" || !live[r[2]] {
			if out[r[0]] == nil {
				out[r[0]] = map[string]bool{}
			}
			out[r[0]][r[1]] = true
		}
	}
	return out
}

// followsDue reports whether an order among fills (filled at the venue,
// not yet recorded filled) has its follow job among d.
func (d deadJobs) followsDue(fills []venueOrder) bool {
	return slices.ContainsFunc(fills, func(o venueOrder) bool { return d["follow"][o.ClientOrderID] })
}

// reconcilesDue reports whether a trace among unsettled (still
// reconciling) has its reconcile job among d. The sweeper takes such a
// job's worker for dead 65 s after its attempt began
// (jobs.Config.reconcileDeadAfter at the default HOOX_VENUE_TIMEOUT) and
// settles the trace from the venue at its next pass (every second in the
// run), before River's rescuer (75 s) would run the job again: a replica
// killed 2 s after the faults stopped put that 7 s past the recovery
// bound (seed 240604).
func (d deadJobs) reconcilesDue(unsettled []unsettledRow) bool {
	return slices.ContainsFunc(unsettled, func(u unsettledRow) bool {
		return u.What == "trace reconciling" && d["reconcile"][u.TraceID]
	})
}

// onlyStuck reports whether every unrecorded order and every unsettled
// attempt is a stuck reconcile's.
func (s *sim) onlyStuck(ctx context.Context, unrecorded []venueOrder, unsettled []unsettledRow) bool {
	stuck := s.stuckReconciles(ctx)
	for _, o := range unrecorded {
		if !stuck[o.ClientOrderID] {
			return false
		}
	}
	for _, r := range unsettled {
		if !stuck[r.TraceID] {
			return false
		}
	}
	return true
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

// placedDuring finds a venue acceptance of the signal's placement whose
// request arrived from the replica that answered a while a was in flight: at >= 0 when one proves
// a's "nothing was placed" wrong, at < 0 (with ok) when one happened but
// another send of the signal to that replica was also in flight, so it
// proves nothing.
func placedDuring(st *signalState, a answer) (at time.Duration, ok bool) {
	for _, acc := range st.accepted {
		at := acc.arrival()
		if acc.Replica != a.Replica || at < a.At || at > a.Done {
			continue
		}
		for _, sp := range st.spans {
			if sp.Replica == a.Replica && sp.Start != a.At && sp.Start <= at && (sp.End == 0 || sp.End >= at) {
				return -1, true
			}
		}
		return at, true
	}
	return 0, false
}

// Package paper is hoox's simulated venue. It keeps its book in the
// paper_orders table and behaves like a real exchange where it matters for
// exactly-once dispatch: it refuses a reused client order ID, it finds an
// order again by that ID, and it can be told to fail the ways a real venue
// fails (see Faults).
//
// The venue must be given its OWN *pgxpool.Pool, distinct from the gateway's.
// The gateway places an order while it holds a transaction (and its
// connection) open; if the venue wrote through that transaction, a rollback
// would undo a fill that a real exchange would have kept, and if it borrowed
// from the same pool, a burst of signals could hold every connection while
// each waits for one more to place its order: a pool deadlock. A separate
// pool, in autocommit, gives the paper fill the independence of a real venue.
//
// Symbols: any symbol the signal validator accepts trades, except those that
// start with "INVALID", which are refused for good with reason
// "unknown symbol". That gives users and tests a deterministic way to see a
// rejection.
//
// Market orders fill at once and in full (FilledQuantity = Quantity), at the
// order's price when it has one, else at Config.ReferencePrice. Limit orders
// rest (status open, nothing filled) until a price set with SetPrice crosses
// them (the paper venue has no market data of its own), or until Cancel
// cancels them. Paper charges no fee.
//
// Positions are the net executed quantity per symbol and book (live and test
// are separate books). close takes the side that flattens the position;
// close_long, close_short and close are reduce-only; at market they
// flatten the whole position whatever their quantity says, as the venues'
// closes do (a share of it, exchange.Order.Partial below 100 %, and a
// limit close are for their quantity). They are refused for good with
// "no position to close" when there is no position in the right direction,
// and with "quantity exceeds position" when a share would flip it, counting
// the reducing orders of the same side still resting (a resting limit close
// takes its part of the position when a price crosses it); paper cancels
// resting closes to make room only for a close of the whole position, as
// hoox on Binance USDⓈ-M does, never for a smaller share. A plain order is not checked against
// resting closes and may shrink, close or flip the position under them, so
// a reduce-only order is checked again when it fills: it fills at most the
// position left on its reducing side, and the rest ends cancelled (with
// nothing filled when nothing is left to reduce), as Binance USDⓈ-M and
// Bybit linear end what a reduce-only order cannot reduce. A reduce-only
// order therefore never grows a position nor opens the other side. Reducing
// orders and fills serialise per symbol and book on an advisory lock, so
// concurrent closes cannot sell the same long twice; plain orders skip the
// lock to stay at one round trip.
package paper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgconv"
)

// Reasons the paper venue gives when it refuses an order for good. They are
// part of what a user sees in a 422 order_rejected.
const (
	ReasonUnknownSymbol     = "unknown symbol"
	ReasonNoPosition        = "no position to close"
	ReasonExceedsPosition   = "quantity exceeds position"
	ReasonLimitWithoutPrice = "limit order without price"
	ReasonInvalidOrder      = "invalid order"
)

const (
	invalidSymbolPrefix      = "INVALID"
	defaultReferencePriceStr = "100"
)

// Config configures a paper Venue.
type Config struct {
	// Pool is the venue's own pool, never the gateway's (see the package
	// documentation for why).
	Pool *pgxpool.Pool
	// ReferencePrice is where market orders without a price fill; 100 when
	// zero.
	ReferencePrice decimal.Decimal
}

// Venue is the paper exchange. It is safe for concurrent use.
type Venue struct {
	pool           *pgxpool.Pool
	referencePrice decimal.Decimal
	faults         atomic.Pointer[Faults]
}

var _ exchange.Venue = (*Venue)(nil)

// PoolConfig is how the venue's own pool is opened. Its fills commit with
// synchronous_commit off, and that loses nothing: the gateway commits the
// signal's claim synchronously after the fill, and a WAL flush covers every
// record before it, so once the claim is durable so is its fill. If Postgres
// crashes first, the claim is lost with the fill and the sender's retry
// places the order once. This takes one of the two WAL flushes off every
// new signal.
func PoolConfig(maxConns int32) db.PoolConfig {
	return db.PoolConfig{MaxConns: maxConns, AppName: "hoox-paper", AsyncCommit: true, Prepare: []string{InsertSQL}}
}

// New returns a paper venue writing through cfg.Pool, with no faults set.
func New(cfg Config) *Venue {
	v := &Venue{pool: cfg.Pool, referencePrice: cfg.ReferencePrice}
	if v.referencePrice.IsZero() {
		v.referencePrice = decimal.RequireFromString(defaultReferencePriceStr)
	}
	v.faults.Store(&Faults{})
	return v
}

// SetFaults replaces the faults the venue simulates; the zero Faults turns
// them all off. Calls already past the fault checks are not affected.
func (v *Venue) SetFaults(f Faults) {
	v.faults.Store(&f)
}

// Faults returns the faults currently simulated.
func (v *Venue) Faults() Faults {
	return *v.faults.Load()
}

// Place places one order. Refusals for good are a rejected Report and a nil
// error, and leave no row, as a real venue keeps no order it refused. A
// client order ID already in the book gives exchange.ErrDuplicateClientOrderID.
func (v *Venue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	f := v.Faults()
	if f.Unreachable {
		return exchange.Report{}, fmt.Errorf("paper: fault drill: %w", exchange.ErrUnreachable)
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	// Checked even without a delay: a caller that has given up must not
	// find a fill it was told was never sent.
	if err := ctx.Err(); err != nil {
		return exchange.Report{}, fmt.Errorf("paper: %w: %w", exchange.ErrUnreachable, err)
	}
	if f.Reject != "" {
		return rejected(f.Reject), nil
	}
	if reason := validate(o); reason != "" {
		return rejected(reason), nil
	}

	fillPrice, status := decimal.NullDecimal{}, exchange.StatusOpen
	if o.OrderType == "market" {
		status = exchange.StatusFilled
		fillPrice = decimal.NewNullDecimal(v.referencePrice)
		if o.Price.Valid {
			fillPrice = o.Price
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return exchange.Report{}, fmt.Errorf("paper: exchange order id: %w: %w", exchange.ErrUnreachable, err)
	}
	row := PaperOrder{
		ClientOrderID:   o.ClientOrderID,
		ExchangeOrderID: "paper-" + id.String(),
		Symbol:          o.Symbol,
		Side:            o.Side,
		OrderType:       o.OrderType,
		Quantity:        o.Quantity,
		Price:           o.Price,
		FillPrice:       fillPrice,
		Status:          status,
		Test:            o.Test,
		TakeProfit:      attachedPrice(o.TakeProfit),
		StopLoss:        attachedPrice(o.StopLoss),
		ReduceOnly:      o.Side == "" || o.ReduceOnly,
	}

	// Acquired explicitly so that a pool that cannot hand out a connection
	// in time reads as "nothing sent", not as a lost answer.
	conn, err := v.pool.Acquire(ctx)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("paper: acquire connection: %w: %w", exchange.ErrUnreachable, err)
	}
	defer conn.Release()

	var r exchange.Report
	if row.ReduceOnly {
		// A market close of the whole position — a close not sized to a
		// share (Partial), or a share of 100 % — flattens it, whatever its
		// quantity says, as the venues' closes do. (A limit close rests for
		// its quantity: paper's own.)
		whole := exchange.IsClose(o.Action) && o.OrderType == "market" && (!o.Partial || exchange.WholePosition(o.Sizing))
		r, err = placeReducing(ctx, conn, row, o.Sizing, whole)
	} else {
		r, err = insert(ctx, conn, row)
	}
	if err != nil {
		return exchange.Report{}, err
	}
	if f.LoseAnswer && r.Status != exchange.StatusRejected {
		return exchange.Report{}, fmt.Errorf("paper: fault drill: answer lost: %w", exchange.ErrUnknownOutcome)
	}
	return r, nil
}

// positionLockNamespace keeps the paper venue's advisory locks apart from
// the gateway's: two-key advisory locks never collide with one-key ones.
const positionLockNamespace = 0x70617072 // "papr"

// placeReducing places a close or reduce-only order. It reads the position
// and writes the order in one transaction holding a lock per symbol and
// mode, so two closes cannot both sell the same long. Plain orders do not take
// the lock, to keep them at one round trip: a plain sell racing a market
// close may commit between the close's read and its fill, and the book then
// holds what the close followed by the sell leaves (the sell, not the
// close, opens the other side). A resting close is checked again when it
// fills (SetPrice).
func placeReducing(ctx context.Context, conn *pgxpool.Conn, row PaperOrder, sizing *exchange.Sizing, whole bool) (exchange.Report, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return exchange.Report{}, classify("begin", err)
	}
	// Rollback after Commit is a no-op; on every other path it discards a
	// transaction that wrote nothing durable.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	r, err := reduce(ctx, tx, row, sizing, whole)
	if err != nil {
		if errors.Is(err, exchange.ErrDuplicateClientOrderID) {
			return exchange.Report{}, err
		}
		// Nothing commits before Commit: whatever failed, no order exists.
		return exchange.Report{}, fmt.Errorf("paper: place order: %w: %w", exchange.ErrUnreachable, err)
	}
	if r.Status == exchange.StatusRejected {
		return r, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return exchange.Report{}, classify("commit order", err)
	}
	return r, nil
}

// reduce resolves the side of a reducing order from the position and
// inserts it, or returns a rejected Report. sizing is how the gateway sized
// the order (nil: a base quantity), for the refusal's reason. A whole
// close is for all of the position, whatever row's quantity says: the
// resting reducing orders of its side are cancelled first.
func reduce(ctx context.Context, tx pgx.Tx, row PaperOrder, sizing *exchange.Sizing, whole bool) (exchange.Report, error) {
	var (
		held                      bool
		position                  decimal.Decimal
		restingBuys, restingSells decimal.Decimal
	)
	if err := lockPosition(ctx, tx, row.Symbol, row.Test); err != nil {
		return exchange.Report{}, err
	}
	if err := tx.QueryRow(ctx, positionQuerySQL, row.ClientOrderID, row.Symbol, row.Test).Scan(&held, &position, &restingBuys, &restingSells); err != nil {
		return exchange.Report{}, fmt.Errorf("read position: %w", err)
	}
	// A reused ID is a duplicate before it is anything else, so that a
	// retried close adopts the first one instead of finding nothing left
	// to close.
	if held {
		return exchange.Report{}, fmt.Errorf("paper: client order id %s: %w", row.ClientOrderID, exchange.ErrDuplicateClientOrderID)
	}
	if row.Side == "" {
		switch position.Sign() {
		case 1:
			row.Side = "sell"
		case -1:
			row.Side = "buy"
		default:
			return rejected(ReasonNoPosition), nil
		}
	}
	// A reducing order must face a position in the other direction, and
	// not be larger than it, or it would open a new one.
	if (row.Side == "sell" && position.Sign() <= 0) || (row.Side == "buy" && position.Sign() >= 0) {
		return rejected(ReasonNoPosition), nil
	}
	// The reducing orders of the same side resting unfilled will take
	// their part of the position when a price crosses them: what is left
	// to close is the position less theirs, so that two closes never sell
	// one long twice and flip it.
	resting := restingSells
	if row.Side == "buy" {
		resting = restingBuys
	}
	var cancelled []exchange.CancelledOrder
	switch {
	case whole:
		// A close of the whole position leaves nothing for the resting
		// closes to protect: they are cancelled first, as hoox does on
		// Binance USDⓈ-M for a close that flattens (-2022), and listed in
		// the report (CancelledFirst).
		row.Quantity = position.Abs()
		if resting.IsPositive() {
			var err error
			if cancelled, err = cancelResting(ctx, tx, row); err != nil {
				return exchange.Report{}, err
			}
		}
	case row.Quantity.GreaterThan(position.Abs().Sub(resting)):
		return rejected(exceedsReason(row, position, resting, sizing)), nil
	}
	var id string
	err := tx.QueryRow(ctx, InsertSQL, row.args()...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent order under the same ID that the lock does not
		// cover (a plain order, another symbol) won the race.
		return exchange.Report{}, fmt.Errorf("paper: client order id %s: %w", row.ClientOrderID, exchange.ErrDuplicateClientOrderID)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("insert order: %w", err)
	}
	r := row.report(id)
	r.CancelledFirst = cancelled
	return r, nil
}

// cancelRestingSQL cancels the resting reduce-only orders of side $3 of
// symbol $1 in book $2, returning what each still had to execute.
const cancelRestingSQL = `
UPDATE paper_orders SET status = 'cancelled'
WHERE symbol = $1 AND test = $2 AND side = $3 AND status = 'open' AND reduce_only
RETURNING client_order_id, exchange_order_id, side, quantity - coalesce(filled_quantity, 0)`

// cancelResting cancels the reducing orders of row's side resting on its
// symbol and book, under the position's lock (reduce).
func cancelResting(ctx context.Context, tx pgx.Tx, row PaperOrder) ([]exchange.CancelledOrder, error) {
	rows, err := tx.Query(ctx, cancelRestingSQL, row.Symbol, row.Test, row.Side)
	if err != nil {
		return nil, fmt.Errorf("cancel resting closes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (exchange.CancelledOrder, error) {
		var c exchange.CancelledOrder
		var remaining decimal.Decimal
		err := r.Scan(&c.ClientOrderID, &c.ExchangeOrderID, &c.Side, &remaining)
		c.Remaining = remaining.String()
		c.PlacedByHoox = strings.HasPrefix(c.ClientOrderID, "hx")
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("cancel resting closes: %w", err)
	}
	return out, nil
}

// exceedsReason is why reducing order row is refused when it asks for more
// than the position less the same side's resting reducing orders. When
// some rest, it says how much they take and what is left: the trader's
// choice is to cancel them or close at most that: paper (like hoox on
// Binance USDⓈ-M) cancels them to make room only for a close of 100 % of
// the position.
func exceedsReason(row PaperOrder, position, resting decimal.Decimal, sizing *exchange.Sizing) string {
	if !resting.IsPositive() {
		return ReasonExceedsPosition
	}
	left := decimal.Max(position.Abs().Sub(resting), decimal.Zero)
	asked := row.Quantity.String()
	if sizing != nil && sizing.Type == exchange.QuantityPercentOfPosition {
		asked += " (" + sizing.Asked + "% of the position)"
	}
	todo := "cancel them first"
	if left.IsPositive() {
		todo = "cancel them, or close at most " + left.String()
	}
	return fmt.Sprintf("%s: resting reduce-only %ss already take %s of the position of %s, so %s is left to close and this close asks %s; "+
		"paper cancels resting closes only for a close of the whole position: %s",
		ReasonExceedsPosition, row.Side, resting, position.Abs(), left, asked, todo)
}

const lockSQL = `SELECT pg_advisory_xact_lock($1, hashtext($2))`

// lockPosition takes, for the rest of tx, the lock that serialises the
// reducing orders and the fills of symbol in book test. It gets its own
// statement: a read in the same statement would use a snapshot taken
// before the lock was granted, and miss the order that held it.
func lockPosition(ctx context.Context, tx pgx.Tx, symbol string, test bool) error {
	if _, err := tx.Exec(ctx, lockSQL, positionLockNamespace, symbol+":"+strconv.FormatBool(test)); err != nil {
		return fmt.Errorf("lock position: %w", err)
	}
	return nil
}

// executedSQL is what a paper order executed: filled_quantity when the
// venue ended it short of its quantity (a reduce-only order cut to the
// position, 00036), else all of it when filled and nothing otherwise.
const executedSQL = `COALESCE(filled_quantity, CASE WHEN status = 'filled' THEN quantity ELSE 0 END)`

// positionQuerySQL reads whether client order ID $1 is taken, the net
// executed position of symbol $2 in book $3, and the quantities of its
// reducing buys and sells resting unfilled.
const positionQuerySQL = `
SELECT EXISTS (SELECT 1 FROM paper_orders WHERE client_order_id = $1),
       COALESCE(sum(CASE side WHEN 'buy' THEN ` + executedSQL + ` ELSE -` + executedSQL + ` END), 0),
       COALESCE(sum(quantity) FILTER (WHERE status = 'open' AND reduce_only AND side = 'buy'), 0),
       COALESCE(sum(quantity) FILTER (WHERE status = 'open' AND reduce_only AND side = 'sell'), 0)
FROM paper_orders
WHERE symbol = $2 AND test = $3`

// InsertSQL is the venue's fill, exported so the benchmarks run exactly it.
const InsertSQL = `
INSERT INTO paper_orders (client_order_id, exchange_order_id, symbol, side, order_type,
                          quantity, price, fill_price, status, test, take_profit, stop_loss, reduce_only)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (client_order_id) DO NOTHING
RETURNING exchange_order_id`

// report is the venue's answer for row, stored under exchange order id id.
func (o PaperOrder) report(id string) exchange.Report {
	return exchange.Report{ExchangeOrderID: id, Symbol: o.Symbol, Side: o.Side, Quantity: o.Quantity,
		FilledQuantity: filledQuantity(o.Status, o.Quantity), Price: o.Price, Status: o.Status, FillPrice: o.FillPrice,
		TakeProfit: o.TakeProfit, StopLoss: o.StopLoss}
}

// filledQuantity is what a paper order in status executed: the paper venue
// fills all of an order at once or nothing of it (a resting limit).
func filledQuantity(status exchange.Status, quantity decimal.Decimal) decimal.Decimal {
	if status == exchange.StatusFilled {
		return quantity
	}
	return decimal.Zero
}

// args are the InsertSQL parameters for o.
func (o PaperOrder) args() []any {
	return []any{o.ClientOrderID, o.ExchangeOrderID, o.Symbol, o.Side, o.OrderType,
		pgconv.Numeric(o.Quantity), pgconv.NullNumeric(o.Price), pgconv.NullNumeric(o.FillPrice), string(o.Status), o.Test,
		pgconv.NullNumeric(o.TakeProfit), pgconv.NullNumeric(o.StopLoss), o.ReduceOnly}
}

// insert writes a plain order in one autocommit round trip.
func insert(ctx context.Context, conn *pgxpool.Conn, row PaperOrder) (exchange.Report, error) {
	var id string
	err := conn.QueryRow(ctx, InsertSQL, row.args()...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		// Like a real venue, refuse a reused client order ID; the caller
		// adopts the held order with Lookup.
		return exchange.Report{}, fmt.Errorf("paper: client order id %s: %w", row.ClientOrderID, exchange.ErrDuplicateClientOrderID)
	}
	if err != nil {
		return exchange.Report{}, classify("place order", err)
	}
	return row.report(id), nil
}

const lookupSQL = `
SELECT exchange_order_id, symbol, side, quantity, price, status, fill_price, take_profit, stop_loss,
       ` + executedSQL + `
FROM paper_orders WHERE client_order_id = $1`

// Lookup finds an order by client order ID, or exchange.ErrNotFound. The
// Unreachable fault applies here too (the venue is down); Delay, Reject and
// LoseAnswer do not, so a drill can always reconcile what Place left behind.
//
// An order held under the ID that does not match o (another symbol, side or
// quantity) is an error wrapping exchange.ErrMismatch.
func (v *Venue) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	clientOrderID := o.ClientOrderID
	if v.Faults().Unreachable {
		return exchange.Report{}, fmt.Errorf("paper: fault drill: %w", exchange.ErrUnreachable)
	}
	var (
		r         exchange.Report
		status    string
		fillPrice decimal.NullDecimal
	)
	err := v.pool.QueryRow(ctx, lookupSQL, clientOrderID).Scan(&r.ExchangeOrderID, &r.Symbol, &r.Side, &r.Quantity, &r.Price, &status, &fillPrice,
		&r.TakeProfit, &r.StopLoss, &r.FilledQuantity)
	if errors.Is(err, pgx.ErrNoRows) {
		return exchange.Report{}, fmt.Errorf("paper: client order id %s: %w", clientOrderID, exchange.ErrNotFound)
	}
	if err != nil {
		return exchange.Report{}, classify("look up order", err)
	}
	r.Status = exchange.Status(status)
	if r.FilledQuantity.IsPositive() {
		// Everything executes at one price: the average is the fill
		// price. A reduce-only order cut to the position ends cancelled
		// with what it executed, reported as Binance and Bybit report a
		// limit order ended after a partial fill: FilledQuantity and
		// AvgPrice, FillPrice only for a full fill.
		r.AvgPrice = fillPrice
	}
	if r.Status == exchange.StatusFilled {
		r.FillPrice = fillPrice
	}
	if err := exchange.Matches(o, o.Symbol, o.Quantity, r); err != nil {
		return exchange.Report{}, fmt.Errorf("paper: %w", err)
	}
	if err := exchange.MatchesAttached(o, attachedPrice(o.TakeProfit), attachedPrice(o.StopLoss), r); err != nil {
		return exchange.Report{}, fmt.Errorf("paper: %w", err)
	}
	return r, nil
}

// SharesHooxDatabase is true: paper_orders is in hoox's own database, so the
// gateway's intent before a fill needs no synchronous commit of its own.
func (v *Venue) SharesHooxDatabase() bool { return true }

// AcceptWindow is zero: a paper order is visible to Lookup the moment its
// insert commits, and a Place whose answer was lost has committed or never
// will.
func (v *Venue) AcceptWindow() time.Duration { return 0 }

// RefusesLateRequests is true: a paper order that is not committed now never
// will be (see exchange.LateRefuser).
func (v *Venue) RefusesLateRequests() bool { return true }

// classify maps a database error to the venue error the gateway branches on:
// when pgx knows nothing reached the server, nothing was placed; otherwise
// the write may have committed.
func classify(what string, err error) error {
	if pgconn.SafeToRetry(err) {
		return fmt.Errorf("paper: %s: %w: %w", what, exchange.ErrUnreachable, err)
	}
	return fmt.Errorf("paper: %s: %w: %w", what, exchange.ErrUnknownOutcome, err)
}

func rejected(reason string) exchange.Report {
	return exchange.Report{Status: exchange.StatusRejected, Reason: reason}
}

// validate returns why o is refused before it reaches the book, or "".
func validate(o exchange.Order) string {
	switch {
	case strings.HasPrefix(strings.ToUpper(o.Symbol), invalidSymbolPrefix):
		return ReasonUnknownSymbol
	case o.ClientOrderID == "" || o.Symbol == "" || !o.Quantity.IsPositive():
		return ReasonInvalidOrder
	case o.Side != "buy" && o.Side != "sell" && o.Side != "":
		return ReasonInvalidOrder
	case o.OrderType != "market" && o.OrderType != "limit":
		return ReasonInvalidOrder
	case o.OrderType == "limit" && !o.Price.Valid:
		return ReasonLimitWithoutPrice
	case o.HasAttachments() && (o.Side == "" || o.ReduceOnly):
		return ReasonInvalidOrder + ": a close takes no take_profit/stop_loss"
	case o.HasAttachments():
		if reason := (&Venue{}).RefuseAttachments(o); reason != "" {
			return reason
		}
		for _, a := range []*exchange.Attached{o.TakeProfit, o.StopLoss} {
			if a != nil && !a.Price.Valid {
				return ReasonInvalidOrder + ": a percent take_profit/stop_loss was not resolved to a price"
			}
		}
	}
	return ""
}

var _ exchange.AttachmentCapable = (*Venue)(nil)

// RefuseAttachments: paper takes a take-profit and a stop-loss on any
// entry and records them with the order (paper_orders, and the order row),
// but does not trigger them: it has no price feed that moves (every market
// order fills at its price or ReferencePrice), so a trigger would never be
// reached. A trailing stop is refused (paper has no moving price to trail).
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	if o.TrailingStop != nil {
		return "trailing_stop is not supported on paper yet; send take_profit/stop_loss only"
	}
	return ""
}

// attachedPrice is an exit's trigger price, invalid when there is none.
func attachedPrice(a *exchange.Attached) decimal.NullDecimal {
	if a == nil {
		return decimal.NullDecimal{}
	}
	return a.Price
}

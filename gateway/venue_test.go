package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/exchange"
)

// memVenue is an exchange outside Postgres with Binance's client order ID
// rule: a duplicate is refused only while the first order is open, so a
// filled market order's ID is accepted again and a blind re-place doubles
// the position. Its orders survive anything that happens to hoox or to
// Postgres, as a real venue's do.
type memVenue struct {
	mu sync.Mutex
	// orders is every order the venue accepted, oldest first.
	orders []memOrder
	// window is AcceptWindow; lookupLag hides an order from Lookup for that
	// long after it was accepted.
	window, lookupLag time.Duration
	// panicNext panics in the next Place before anything is accepted.
	panicNext bool
	// loseNext accepts the next order and reports its outcome unknown.
	loseNext bool
	// dropNext loses the next order before the venue takes it (the request
	// timed out on the way) and reports its outcome unknown.
	dropNext bool
	// gated orders (by symbol) wait in Place until open is called (or
	// their context ends); entered receives once per gated Place that
	// reached it.
	gated         string
	gate, entered chan struct{}
	opened        sync.Once
	// refusesLate makes it a venue that refuses a request past its own
	// expiry (exchange.LateRefuser): "not found" past the window is proof.
	refusesLate bool
}

func (v *memVenue) RefusesLateRequests() bool { return v.refusesLate }

type memOrder struct {
	order exchange.Order
	at    time.Time
	r     exchange.Report
}

var _ exchange.Venue = (*memVenue)(nil)

func (v *memVenue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if v.gated != "" && o.Symbol == v.gated {
		v.entered <- struct{}{}
		select {
		case <-v.gate:
		case <-ctx.Done():
			return exchange.Report{}, fmt.Errorf("memVenue: held at the gate: %v: %w", ctx.Err(), exchange.ErrUnknownOutcome)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.panicNext {
		v.panicNext = false
		panic("memVenue: blew up before sending")
	}
	if v.dropNext {
		v.dropNext = false
		return exchange.Report{}, fmt.Errorf("memVenue: request timed out: %w", exchange.ErrUnknownOutcome)
	}
	for _, held := range v.orders {
		if held.order.ClientOrderID == o.ClientOrderID && held.r.Status == exchange.StatusOpen {
			return exchange.Report{}, exchange.ErrDuplicateClientOrderID
		}
	}
	r := exchange.Report{ExchangeOrderID: fmt.Sprintf("mem-%d", len(v.orders)+1), Symbol: o.Symbol, Side: o.Side,
		Quantity: o.Quantity, Price: o.Price, Status: exchange.StatusFilled}
	if o.OrderType == "limit" {
		r.Status = exchange.StatusOpen
	} else {
		r.FillPrice = o.Price
	}
	v.orders = append(v.orders, memOrder{order: o, at: time.Now(), r: r})
	if v.loseNext {
		v.loseNext = false
		return exchange.Report{}, fmt.Errorf("memVenue: 503 after accepting: %w", exchange.ErrUnknownOutcome)
	}
	return r, nil
}

func (v *memVenue) Lookup(_ context.Context, o exchange.Order) (exchange.Report, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := len(v.orders) - 1; i >= 0; i-- {
		held := v.orders[i]
		if held.order.ClientOrderID != o.ClientOrderID || time.Since(held.at) < v.lookupLag {
			continue
		}
		if err := exchange.Matches(o, o.Symbol, o.Quantity, held.r); err != nil {
			return exchange.Report{}, err
		}
		return held.r, nil
	}
	return exchange.Report{}, exchange.ErrNotFound
}

func (v *memVenue) AcceptWindow() time.Duration { return v.window }

// gatedVenue is a memVenue whose orders for symbol wait in Place until
// open.
func gatedVenue(symbol string) *memVenue {
	return &memVenue{gated: symbol, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
}

// open lets gated orders through; safe to call more than once.
func (v *memVenue) open() { v.opened.Do(func() { close(v.gate) }) }

func (v *memVenue) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.orders)
}

// hold puts an order on the book as if placed earlier, outside hoox.
func (v *memVenue) hold(o exchange.Order, status exchange.Status) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.orders = append(v.orders, memOrder{order: o, at: time.Now().Add(-time.Hour), r: exchange.Report{
		ExchangeOrderID: "held", Symbol: o.Symbol, Side: o.Side, Quantity: o.Quantity, Status: status}})
}

// jobRecorder stands in for River: it records the jobs the gateway queues.
type jobRecorder struct {
	mu   sync.Mutex
	args []river.JobArgs
}

func (j *jobRecorder) InsertTx(_ context.Context, _ pgx.Tx, args river.JobArgs, _ *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.args = append(j.args, args)
	return &rivertype.JobInsertResult{Job: &rivertype.JobRow{}}, nil
}

func (j *jobRecorder) InsertManyTx(_ context.Context, _ pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]*rivertype.JobInsertResult, len(params))
	for i, p := range params {
		j.args = append(j.args, p.Args)
		out[i] = &rivertype.JobInsertResult{Job: &rivertype.JobRow{}}
	}
	return out, nil
}

func (j *jobRecorder) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.args)
}

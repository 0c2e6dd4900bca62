package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// PlaceTiming is the latency of one venue's Place, called one order at a
// time: what a single signal pays between the claim and the record. Against
// a fake on loopback it is the adapter's own cost (signing, HTTP, JSON, its
// filter and clock bookkeeping) plus the fake's, which does the same work
// on the other side; the real venue's network and matching come on top.
type PlaceTiming struct {
	// Venue names what was timed, e.g. "paper" or "binance (fake)".
	Venue string
	// Orders is the number of timed placements (warm-up excluded).
	Orders int
	// Rejected counts placements the venue refused for good; they are
	// timed too, but a run with any is suspect.
	Rejected                int
	P50, P90, P99, Max, Avg time.Duration
}

// PlaceOrder builds the i-th order of a timing run: a market buy of qty on
// symbol under a client order ID unique to run (valid on every venue: at
// most 36 characters of [a-z0-9]).
func PlaceOrder(run string, i int, symbol string, qty decimal.Decimal) exchange.Order {
	return exchange.Order{ClientOrderID: fmt.Sprintf("hxb%s%d", run, i), Symbol: symbol, Action: "buy", Side: "buy",
		OrderType: "market", Quantity: qty}
}

// TimePlace places warm orders (to fill the adapter's caches: filters,
// server-time offset, kept-alive connections), then n orders one after
// another, timing each Place. An error from Place ends the run: a timing
// with failures in it would measure the failure path.
func TimePlace(ctx context.Context, name string, v exchange.Venue, warm, n int, order func(i int) exchange.Order) (PlaceTiming, error) {
	t := PlaceTiming{Venue: name, Orders: n}
	for i := range warm {
		if _, err := v.Place(ctx, order(i)); err != nil {
			return t, fmt.Errorf("%s: warm-up order %d: %w", name, i, err)
		}
	}
	lats := make([]time.Duration, 0, n)
	var sum time.Duration
	for i := range n {
		start := time.Now()
		rep, err := v.Place(ctx, order(warm+i))
		lat := time.Since(start)
		if err != nil {
			return t, fmt.Errorf("%s: order %d: %w", name, i, err)
		}
		if rep.Status == exchange.StatusRejected {
			t.Rejected++
		}
		lats = append(lats, lat)
		sum += lat
	}
	if n == 0 {
		return t, nil
	}
	slices.Sort(lats)
	q := func(p float64) time.Duration { return lats[min(max(int(p*float64(n)+0.5)-1, 0), n-1)] }
	t.P50, t.P90, t.P99, t.Max, t.Avg = q(0.50), q(0.90), q(0.99), lats[n-1], sum/time.Duration(n)
	return t, nil
}

// PrintPlaceTimings writes timings side by side, each with its difference
// to the first (the baseline, paper).
func PrintPlaceTimings(w io.Writer, ts ...PlaceTiming) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "venue\torders\trejected\tp50\tp90\tp99\tmax\tavg\tp50 vs first\tp99 vs first\t")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", t.Venue, t.Orders, t.Rejected,
			ms(t.P50), ms(t.P90), ms(t.P99), ms(t.Max), ms(t.Avg), signedMs(t.P50-ts[0].P50), signedMs(t.P99-ts[0].P99))
	}
	_ = tw.Flush()
}

func signedMs(d time.Duration) string {
	if d >= 0 {
		return "+" + ms(d)
	}
	return ms(d)
}

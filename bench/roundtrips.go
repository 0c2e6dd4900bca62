package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/codes"
)

// rtCounter counts what a pool sends to Postgres. With pgx's statement cache
// warm, each Query/QueryRow/Exec and each SendBatch is one round trip; a
// Prepare is one more.
type rtCounter struct {
	queries, batches, batchStatements, prepares, connects atomic.Int64
}

func (c *rtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *rtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *rtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}
func (c *rtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.batchStatements.Add(1)
}
func (c *rtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *rtCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}
func (c *rtCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
func (c *rtCounter) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	c.connects.Add(1)
	return ctx
}
func (c *rtCounter) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) {}

func (c *rtCounter) reset() {
	c.queries.Store(0)
	c.batches.Store(0)
	c.batchStatements.Store(0)
	c.prepares.Store(0)
	c.connects.Store(0)
}

// PoolTrips is what one pool sent per signal.
type PoolTrips struct {
	Pool                                    string
	RoundTrips, Statements, Prepares, Conns float64
}

// RoundTrips is the per-signal count of the gateway's hot path, measured
// through Service.Execute on the three pools hoox runs on (app.OpenPools).
type RoundTrips struct {
	Signals int
	// New and Repeat are per new signal and per repeat of a settled key.
	New, Repeat []PoolTrips
	// NewLatency and RepeatLatency are Service.Execute's p50 and p99, one
	// signal at a time, without HTTP.
	NewP50, NewP99, RepeatP50, RepeatP99 time.Duration
}

// CountRoundTrips runs n new signals and n repeats through a gateway.Service
// on hoox's own pools (claims, markers, paper venue; app.OpenPools), traced,
// after a warm-up that fills pgx's statement caches.
func CountRoundTrips(ctx context.Context, databaseURL string, n int) (RoundTrips, error) {
	// The pools hoox runs on (app.OpenPools, two connections each), with a
	// counting tracer on each.
	names := []string{"claims", "markers", "paper"}
	counters := map[string]*rtCounter{}
	for _, name := range names {
		counters[name] = &rtCounter{}
	}
	pools, err := app.OpenPools(ctx, app.PoolsConfig{DatabaseURL: databaseURL, MaxConns: 2,
		Tracer: func(pool string) pgx.QueryTracer { return counters[pool] }})
	if err != nil {
		return RoundTrips{}, err
	}
	defer pools.Close()
	venue := paper.New(paper.Config{Pool: pools.Paper})
	newService := func() *gateway.Service {
		return gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pools.Claims, MarkerPool: pools.Markers,
			Venues: exchange.NewRegistry(map[string]exchange.Venue{"paper": venue})})
	}
	// The warm-up runs on a service of its own, closed before the count
	// starts: a repeat's audit row commits after its answer, and the
	// warm-up's last batch had landed in the first counted signal (5
	// round trips, 15 statements, where a signal's own are 4 and 7).
	warm := newService()
	run := RunID()
	symbol := "TRIPS-" + run
	send := func(svc *gateway.Service, key string) (time.Duration, error) {
		body := fmt.Sprintf(`{"exchange":"paper","symbol":%q,"action":"buy","quantity":"0.01","strategy":"bench","trace_id":%q}`, symbol, key)
		in, err := gateway.ParseInput([]byte(body), "", time.Now())
		if err != nil {
			return 0, err
		}
		start := time.Now()
		_, err = svc.Execute(ctx, in)
		d := time.Since(start)
		var ge *gateway.Error
		if errors.As(err, &ge) && ge.Code == codes.Duplicate {
			err = nil
		}
		return d, err
	}
	per := func() []PoolTrips {
		out := make([]PoolTrips, len(names))
		for i, name := range names {
			c, f := counters[name], float64(n)
			out[i] = PoolTrips{Pool: name, RoundTrips: float64(c.queries.Load()+c.batches.Load()+c.prepares.Load()) / f,
				Statements: float64(c.queries.Load()+c.batchStatements.Load()) / f, Prepares: float64(c.prepares.Load()) / f,
				Conns: float64(c.connects.Load()) / f}
			c.reset()
		}
		return out
	}
	// Warm-up: connections open and every statement is in pgx's cache, on
	// both connections of each pool. One sender at a time used one
	// connection, and a counted signal that met the other prepared its
	// statements there: a suite counted 8 round trips for a signal whose
	// 4 were its own. Two senders at once use both.
	var wg sync.WaitGroup
	warmErrs := make([]error, 2)
	for w := range warmErrs {
		wg.Go(func() {
			for i := range 20 {
				key := fmt.Sprintf("warm-%s-%d-%d", run, w, i)
				for range 2 {
					if _, err := send(warm, key); err != nil {
						warmErrs[w] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	warm.Close()
	if err := errors.Join(warmErrs...); err != nil {
		return RoundTrips{}, fmt.Errorf("warm-up: %w", err)
	}
	svc := newService()
	// A repeat's audit row commits after its answer, off the answer's
	// path, and mostly after its pass is counted; Close waits for it
	// before the pools close.
	defer svc.Close()
	for _, c := range counters {
		c.reset()
	}
	// The same n keys twice: new signals, then repeats of them.
	pass := func(what string) (trips []PoolTrips, p50, p99 time.Duration, err error) {
		lats := make([]time.Duration, 0, n)
		for i := range n {
			d, err := send(svc, fmt.Sprintf("trip-%s-%d", run, i))
			if err != nil {
				return nil, 0, 0, fmt.Errorf("%s: %w", what, err)
			}
			lats = append(lats, d)
		}
		p50, p99 = quantiles(lats)
		return per(), p50, p99, nil
	}
	res := RoundTrips{Signals: n}
	if res.New, res.NewP50, res.NewP99, err = pass("new signal"); err != nil {
		return res, err
	}
	if res.Repeat, res.RepeatP50, res.RepeatP99, err = pass("repeat"); err != nil {
		return res, err
	}
	return res, nil
}

func quantiles(lats []time.Duration) (p50, p99 time.Duration) {
	o := summarise("", slices.Clone(lats))
	return o.P50, o.P99
}

// Print writes the count for a person.
func (r RoundTrips) Print(w io.Writer) {
	for _, part := range []struct {
		name     string
		trips    []PoolTrips
		p50, p99 time.Duration
	}{{"new signal", r.New, r.NewP50, r.NewP99}, {"repeat of a settled key", r.Repeat, r.RepeatP50, r.RepeatP99}} {
		total, stmts := 0.0, 0.0
		for _, t := range part.trips {
			total += t.RoundTrips
			stmts += t.Statements
		}
		fmt.Fprintf(w, "round trips per %s: %.2f (%.2f statements); Service.Execute alone p50 %s p99 %s\n",
			part.name, total, stmts, ms(part.p50), ms(part.p99))
		for _, t := range part.trips {
			fmt.Fprintf(w, "  %-8s %.2f round trips, %.2f statements, %.2f prepares, %.2f new connections\n",
				t.Pool, t.RoundTrips, t.Statements, t.Prepares, t.Conns)
		}
	}
}

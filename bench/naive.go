package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StormConfig is a duplicate storm: Senders concurrent senders fire the same
// key at once, Rounds times, each round with a new key.
type StormConfig struct {
	Senders, Rounds int
}

// StormResult counts what a storm let through.
type StormResult struct {
	Keys int
	// Orders is the number of orders written; Duplicates = Orders - Keys.
	Orders, Duplicates int
	// Statuses counts HTTP answers (hoox storm only).
	Statuses map[int]int
}

// NaiveStorm runs the check-then-act baseline most webhook bots use: SELECT
// the key, INSERT when absent, no lock and no unique index. It works on a
// scratch table that it creates and drops, and reports how many duplicate
// orders the race let through.
func NaiveStorm(ctx context.Context, pool *pgxpool.Pool, cfg StormConfig) (StormResult, error) {
	table := pgx.Identifier{"bench_naive_" + strings.ToLower(RunID())}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (trace_id text NOT NULL, sender int NOT NULL)"); err != nil {
		return StormResult{}, fmt.Errorf("create scratch table: %w", err)
	}
	defer func() { _, _ = pool.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+table) }()

	res := StormResult{Keys: cfg.Rounds}
	errs := make(chan error, cfg.Senders)
	for round := range cfg.Rounds {
		key := "naive-" + strconv.Itoa(round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for s := range cfg.Senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var exists bool
				if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+table+" WHERE trace_id = $1)", key).Scan(&exists); err != nil {
					errs <- err
					return
				}
				if !exists {
					if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (trace_id, sender) VALUES ($1, $2)", key, s); err != nil {
						errs <- err
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		select {
		case err := <-errs:
			return res, fmt.Errorf("naive storm: %w", err)
		default:
		}
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&res.Orders); err != nil {
		return res, fmt.Errorf("count naive orders: %w", err)
	}
	res.Duplicates = res.Orders - res.Keys
	return res, nil
}

// HooxStorm sends the same storm to hoox's webhook and counts the orders it
// recorded for the storm's symbol.
func HooxStorm(ctx context.Context, url, secret string, conn *pgx.Conn, cfg StormConfig) (StormResult, error) {
	run := RunID()
	symbol := "STORM-" + run
	res := StormResult{Keys: cfg.Rounds, Statuses: map[int]int{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Senders}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var firstErr error
	for round := range cfg.Rounds {
		body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":%q,"action":"buy","quantity":"0.01","trace_id":"storm-%s-%d"}`,
			secret, symbol, strings.ToLower(run), round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range cfg.Senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+"/webhook", bytes.NewReader([]byte(body)))
				if err == nil {
					req.Header.Set("Content-Type", "application/json")
					var resp *http.Response
					if resp, err = client.Do(req); err == nil {
						_ = resp.Body.Close()
						mu.Lock()
						res.Statuses[resp.StatusCode]++
						mu.Unlock()
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	if firstErr != nil {
		return res, fmt.Errorf("hoox storm: %w", firstErr)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE symbol = $1", symbol).Scan(&res.Orders); err != nil {
		return res, fmt.Errorf("count hoox orders: %w", err)
	}
	res.Duplicates = res.Orders - res.Keys
	return res, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Package bench is hoox's load generator and the baselines it is measured
// against: an HTTP load from lean keep-alive senders (sender.go; open loop
// at a fixed rate, or closed loop at maximum with N senders), the exactly-once check read back from the
// database, pgbench running the same SQL as hoox's claim-and-record
// transaction, a naive SELECT-then-INSERT baseline under a duplicate storm,
// and a round-trip count of the gateway's hot path. The `hoox bench` command
// wires it; nothing here starts a server.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Target names what a load run sends.
type Target string

// Targets a load run can send.
const (
	// TargetWebhook posts signals to /webhook.
	TargetWebhook Target = "webhook"
	// TargetHealthz gets /healthz: the floor of the measurement itself.
	TargetHealthz Target = "healthz"
)

// LoadConfig describes one load run.
type LoadConfig struct {
	// URL is hoox's base URL, e.g. http://127.0.0.1:8080.
	URL string
	// Secret is the webhook secret.
	Secret string
	// Target picks the endpoint; empty means TargetWebhook.
	Target Target
	// Rate is requests per second (open loop, vegeta's constant pacer);
	// 0 runs a closed loop at maximum with Workers senders.
	Rate int
	// Duration bounds the run.
	Duration time.Duration
	// Workers is the number of concurrent senders in a closed loop, and the
	// initial number in an open loop.
	Workers int
	// DupRatio is the share of requests that repeat a key already sent.
	DupRatio float64
	// RepeatOne makes every request repeat one key, settled before the run.
	RepeatOne bool
	// Timeout bounds one request.
	Timeout time.Duration
	// Symbol marks this run's signals so the exactly-once check can find
	// them; empty picks a fresh one. A real venue (or its fake) needs one
	// it lists, e.g. BTCUSDT.
	Symbol string
	// Exchange is the signals' exchange; empty means paper.
	Exchange string
}

// RunID returns a short random id for a run's keys and symbol.
func RunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.ToUpper(hex.EncodeToString(b))
}

// signalTargeter hands vegeta one request at a time: a new signal with a
// unique client key, or a repeat of a key already sent.
type signalTargeter struct {
	url, secret, symbol, prefix string
	exchange                    string
	dupRatio                    float64
	repeatKey                   string

	mu   sync.Mutex
	rng  *mrand.Rand
	next int
	sent []string // keys issued as new signals, for repeats
	dups int
}

func (t *signalTargeter) body(key string) []byte {
	var b bytes.Buffer
	b.Grow(192)
	b.WriteString(`{"secret":`)
	b.WriteString(strconv.Quote(t.secret))
	b.WriteString(`,"exchange":`)
	b.WriteString(strconv.Quote(t.exchange))
	b.WriteString(`,"symbol":"`)
	b.WriteString(t.symbol)
	b.WriteString(`","action":"buy","quantity":"0.01","strategy":"bench","trace_id":"`)
	b.WriteString(key)
	b.WriteString(`"}`)
	return b.Bytes()
}

// newKey issues a fresh key; it is what a first attempt carries.
func (t *signalTargeter) newKey() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	k := t.prefix + strconv.Itoa(t.next)
	t.sent = append(t.sent, k)
	return k
}

func (t *signalTargeter) pick() string {
	if t.repeatKey != "" {
		return t.repeatKey
	}
	t.mu.Lock()
	if len(t.sent) > 0 && t.rng.Float64() < t.dupRatio {
		k := t.sent[t.rng.IntN(len(t.sent))]
		t.dups++
		t.mu.Unlock()
		return k
	}
	t.next++
	k := t.prefix + strconv.Itoa(t.next)
	t.sent = append(t.sent, k)
	t.mu.Unlock()
	return k
}

// distinct is the number of distinct keys sent as new signals.
func (t *signalTargeter) distinct() (keys, dups int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sent), t.dups
}

// Run sends cfg's load and returns what came back. The exactly-once check
// is separate (Check), because it needs the database.
func Run(ctx context.Context, cfg LoadConfig) (*Report, error) {
	if cfg.Target == "" {
		cfg.Target = TargetWebhook
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Exchange == "" {
		cfg.Exchange = "paper"
	}
	base := strings.TrimRight(cfg.URL, "/")
	run := RunID()
	if cfg.Symbol == "" {
		cfg.Symbol = "BENCH-" + run
	}
	rep := &Report{Config: cfg, byOutcome: map[string][]time.Duration{}}

	host, err := hostPort(base)
	if err != nil {
		return nil, err
	}
	var next func(dst []byte) []byte
	var st *signalTargeter
	switch cfg.Target {
	case TargetHealthz:
		healthz := request(nil, http.MethodGet, host, "/healthz", "", nil)
		next = func(dst []byte) []byte { return append(dst, healthz...) }
	case TargetWebhook:
		st = &signalTargeter{url: base + "/webhook", secret: cfg.Secret, symbol: cfg.Symbol, exchange: cfg.Exchange,
			prefix: "bench-" + strings.ToLower(run) + "-", dupRatio: cfg.DupRatio, rng: mrand.New(mrand.NewPCG(1, 2))}
		if cfg.RepeatOne {
			// Settle the key first, so every request measured is a repeat
			// of a committed, settled trace.
			st.repeatKey = st.newKey()
			if err := settle(ctx, st); err != nil {
				return nil, err
			}
		}
		next = func(dst []byte) []byte {
			return request(dst, http.MethodPost, host, "/webhook", "application/json", st.body(st.pick()))
		}
	default:
		return nil, fmt.Errorf("unknown target %q (webhook or healthz)", cfg.Target)
	}

	var mu sync.Mutex
	record := func(s *sender, code int, err error, lat time.Duration, end time.Time) {
		label := outcome(code, err, s.body)
		mu.Lock()
		rep.add(label, lat, end)
		mu.Unlock()
	}
	began := time.Now()
	deadline := began.Add(cfg.Duration)
	if cfg.Rate == 0 {
		closedLoop(ctx, cfg, host, next, deadline, record)
	} else {
		openLoop(ctx, cfg, host, next, began, deadline, record)
	}
	rep.Elapsed = time.Since(began)
	if st != nil {
		rep.DistinctKeys, rep.Repeats = st.distinct()
	}
	rep.finish(began)
	return rep, nil
}

type recordFunc func(s *sender, code int, err error, lat time.Duration, end time.Time)

// closedLoop runs exactly cfg.Workers senders, each sending its next
// request when the previous one is answered, until deadline.
func closedLoop(ctx context.Context, cfg LoadConfig, host string, next func([]byte) []byte, deadline time.Time, record recordFunc) {
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			s := newSender(host, cfg.Timeout)
			defer s.close()
			var req []byte
			for ctx.Err() == nil {
				start := time.Now()
				if !start.Before(deadline) {
					return
				}
				req = next(req[:0])
				code, err := s.do(req)
				end := time.Now()
				record(s, code, err, end.Sub(start), end)
			}
		})
	}
	wg.Wait()
}

// maxOpenSenders bounds an open loop's concurrent requests (and
// connections) when hoox falls behind the rate.
const maxOpenSenders = 10000

// openLoop sends at cfg.Rate requests per second until deadline, request n
// at scheduled(began, n, interval) whether or not earlier ones were
// answered: a sender that is free takes it, and a new sender (with its
// own connection) starts when none is. Each latency counts from the
// request's scheduled time, so a stall in the generator or the server is
// not hidden.
func openLoop(ctx context.Context, cfg LoadConfig, host string, next func([]byte) []byte, began, deadline time.Time, record recordFunc) {
	interval := time.Second / time.Duration(cfg.Rate)
	shots := make(chan time.Time)
	var wg sync.WaitGroup
	senders := 0
	spawn := func() {
		senders++
		wg.Go(func() {
			s := newSender(host, cfg.Timeout)
			defer s.close()
			var req []byte
			for at := range shots {
				req = next(req[:0])
				code, err := s.do(req)
				end := time.Now()
				record(s, code, err, end.Sub(at), end)
			}
		})
	}
	for range cfg.Workers {
		spawn()
	}
	for seq := uint64(0); ctx.Err() == nil; seq++ {
		at := scheduled(began, seq, interval)
		if !at.Before(deadline) {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		select {
		case shots <- at:
			continue
		default:
		}
		if senders < maxOpenSenders {
			spawn()
		}
		select {
		case shots <- at:
		case <-ctx.Done():
		}
	}
	close(shots)
	wg.Wait()
}

// scheduled is when an open loop that began at began sends request seq
// (0-based): at (n+1)·interval, as vegeta's constant pacer did before
// (docs/BENCHMARKS.md compares runs across the change).
func scheduled(began time.Time, seq uint64, interval time.Duration) time.Time {
	return began.Add(time.Duration(seq+1) * interval)
}

// settle sends the repeat key once, before the run.
func settle(ctx context.Context, st *signalTargeter) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url, bytes.NewReader(st.body(st.repeatKey)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("settle the repeated key: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("settle the repeated key: hoox answered %s", resp.Status)
	}
	return nil
}

// outcome labels an answer by status and, for problems, hoox's stable code,
// so "409 duplicate" and "409 in_progress" are told apart.
func outcome(code int, err error, body []byte) string {
	if err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "error: " + msg
	}
	label := strconv.Itoa(code)
	if code >= 400 {
		if i := bytes.Index(body, []byte(`"code":"`)); i >= 0 {
			rest := body[i+8:]
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				label += " " + string(rest[:j])
			}
		}
	}
	return label
}

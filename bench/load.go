// Package bench is hoox's load generator and the baselines it is measured
// against: an HTTP load built on vegeta (open loop at a fixed rate, or closed
// loop at maximum with N senders), the exactly-once check read back from the
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

	vegeta "github.com/tsenart/vegeta/v12/lib"
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

var jsonHeader = http.Header{"Content-Type": []string{"application/json"}}

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

func (t *signalTargeter) targeter() vegeta.Targeter {
	return func(tgt *vegeta.Target) error {
		tgt.Method = http.MethodPost
		tgt.URL = t.url
		tgt.Header = jsonHeader
		tgt.Body = t.body(t.pick())
		return nil
	}
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

	var tr vegeta.Targeter
	var st *signalTargeter
	switch cfg.Target {
	case TargetHealthz:
		tr = vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: base + "/healthz"})
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
		tr = st.targeter()
	default:
		return nil, fmt.Errorf("unknown target %q (webhook or healthz)", cfg.Target)
	}

	opts := []func(*vegeta.Attacker){vegeta.Timeout(cfg.Timeout), vegeta.Workers(uint64(cfg.Workers)), vegeta.KeepAlive(true),
		// Enough of a problem body to read its code; a result keeps its body.
		vegeta.MaxBody(1024)}
	pacer := vegeta.ConstantPacer{Freq: cfg.Rate, Per: time.Second}
	if cfg.Rate == 0 {
		// Closed loop: exactly Workers senders, each sending its next
		// request when the previous one is answered.
		opts = append(opts, vegeta.MaxWorkers(uint64(cfg.Workers)), vegeta.Connections(cfg.Workers))
	}
	atk := vegeta.NewAttacker(opts...)
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Second / time.Duration(cfg.Rate)
	}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	began := time.Now()
	for res := range atk.Attack(tr, pacer, cfg.Duration, "hoox-bench") {
		lat := res.Latency
		if interval > 0 {
			// Time each request from when the constant pacer scheduled it,
			// so a stall in the generator or the server is not hidden.
			if d := res.End().Sub(scheduled(began, res.Seq, interval)); d > lat {
				lat = d
			}
		}
		rep.add(outcome(res), lat, res.End())
	}
	rep.Elapsed = time.Since(began)
	if st != nil {
		rep.DistinctKeys, rep.Repeats = st.distinct()
	}
	rep.finish(began)
	return rep, nil
}

// scheduled is when vegeta's constant pacer meant to send request seq
// (0-based) of a run that began at began: the pacer sends hit n at
// (n+1)·interval, not at n·interval, so counting from n·interval would add
// one interval to every latency (1 ms at 1000/s, 50 ms at 20/s).
func scheduled(began time.Time, seq uint64, interval time.Duration) time.Time {
	return began.Add(time.Duration(seq+1) * interval)
}

// settle sends the repeat key once, before the run.
func settle(ctx context.Context, st *signalTargeter) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url, bytes.NewReader(st.body(st.repeatKey)))
	if err != nil {
		return err
	}
	req.Header = jsonHeader.Clone()
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

// outcome labels a result by status and, for problems, hoox's stable code,
// so "409 duplicate" and "409 in_progress" are told apart.
func outcome(res *vegeta.Result) string {
	if res.Code == 0 {
		msg := res.Error
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "error: " + msg
	}
	label := strconv.Itoa(int(res.Code))
	if res.Code >= 400 {
		if i := bytes.Index(res.Body, []byte(`"code":"`)); i >= 0 {
			rest := res.Body[i+8:]
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				label += " " + string(rest[:j])
			}
		}
	}
	return label
}

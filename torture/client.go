package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// answer is what a client heard back from one send.
type answer struct {
	At time.Duration
	// Done is when the answer (or the failure) came.
	Done    time.Duration
	Replica int
	Status  int // 0: no answer
	// Err is "timeout" or "connection" when no answer came.
	Err      string
	Code     string
	TraceID  string
	Order    *answerOrder
	Original *answerOriginal
	// Cancelled is what a cancel signal's 200 says it cancelled.
	Cancelled []answerOrder
	Body      string
}

type answerOrder struct {
	ClientOrderID string `json:"client_order_id"`
	Exchange      string `json:"exchange"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"`
	Quantity      string `json:"quantity"`
	Status        string `json:"status"`
}

type answerOriginal struct {
	Status        string  `json:"status"`
	ClientOrderID *string `json:"client_order_id"`
}

// body is the signal's JSON, the same bytes on every send.
func (sp *signalPlan) body(seed uint64, epoch time.Time) []byte {
	m := map[string]any{"secret": webhookSecret, "exchange": sp.Venue.name, "symbol": sp.Symbol, "action": sp.Side,
		"quantity": sp.Quantity, "strategy": "torture", "comment": fmt.Sprintf("signal %d", sp.ID)}
	if sp.isCancel() {
		// A cancel carries no order fields.
		delete(m, "quantity")
	}
	if sp.Limit != "" {
		m["price"], m["order_type"] = sp.Limit, "limit"
	}
	percent := map[string]float64{"take_profit": 2, "stop_loss": 1, "trailing_stop": 1.5}
	for _, e := range sp.Exits {
		m[e] = map[string]any{"percent": percent[e]}
	}
	switch sp.Mode {
	case ModeKey:
		m["trace_id"] = sp.key(seed)
	case ModeDerived:
		m["timestamp"] = epoch.Add(sp.At).UnixMilli()
	}
	b, _ := json.Marshal(m)
	return b
}

// key is the signal's client key (ModeKey).
func (sp *signalPlan) key(seed uint64) string { return fmt.Sprintf("torture-%d-%d", seed, sp.ID) }

// runClient plays one signal's client: TradingView or an impatient script.
func (s *sim) runClient(ctx context.Context, sp *signalPlan) {
	r := rand.New(rand.NewPCG(sp.Seed, uint64(sp.ID)))
	n := len(s.replicas)
	body := sp.body(s.cfg.Seed, s.h.start)
	ctype := "application/json"
	if sp.TextPlain {
		ctype = "text/plain; charset=utf-8"
	}
	timeout := s.cfg.scaled(3 * time.Second)
	s.ops.inc("signal_" + sp.Mode)
	s.ops.inc("client_" + sp.Client)
	rep := r.IntN(n)
	if sp.Client == ClientFanout {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.send(ctx, sp, body, ctype, i, timeout)
			}()
		}
		wg.Wait()
		return
	}
	for attempt := 0; attempt <= 3; attempt++ {
		if attempt > 0 {
			s.ops.inc("resend_" + sp.Client)
		}
		a := s.lbSend(ctx, sp, body, ctype, rep, timeout, r)
		retry := false
		switch sp.Client {
		case ClientTradingView:
			// TradingView gives up on a timeout and resends a 5xx other
			// than 504 (a refused connection reads as a 502 from its
			// side) after 5 s.
			if (a.Status >= 500 && a.Status != http.StatusGatewayTimeout) || a.Err == "connection" {
				retry = true
				time.Sleep(s.cfg.scaled(5 * time.Second))
				rep = r.IntN(n)
			}
		case ClientImpatient:
			if a.Err != "" || a.Status >= 500 || a.Code == "in_progress" {
				retry = true
				if a.Code == "in_progress" {
					time.Sleep(s.cfg.scaled(500 * time.Millisecond))
				}
				if n > 1 {
					rep = (rep + 1 + r.IntN(n-1)) % n
				}
			}
		}
		if !retry || ctx.Err() != nil {
			return
		}
	}
}

// lbSend is the load balancer: it sends to replica rep and, when the
// signal's balancer retries, once more to the next replica if the first
// refused the connection or answered 502.
func (s *sim) lbSend(ctx context.Context, sp *signalPlan, body []byte, ctype string, rep int, timeout time.Duration, r *rand.Rand) answer {
	a := s.send(ctx, sp, body, ctype, rep, timeout)
	if sp.LBRetry && len(s.replicas) > 1 && (a.Err == "connection" || a.Status == http.StatusBadGateway) {
		s.ops.inc("lb_retry")
		next := (rep + 1 + r.IntN(len(s.replicas)-1)) % len(s.replicas)
		a = s.send(ctx, sp, body, ctype, next, timeout)
	}
	return a
}

// send posts the signal once and records the send and its answer.
func (s *sim) send(ctx context.Context, sp *signalPlan, body []byte, ctype string, rep int, timeout time.Duration) answer {
	s.ops.inc("send")
	at := time.Since(s.h.start)
	s.h.add(sp.ID, "send", rep, "%s %s %s qty=%s limit=%s mode=%s via %s", sp.Venue.name, sp.Symbol, sp.Side, sp.Quantity, orNone(sp.Limit), sp.Mode, sp.Client)
	s.mu.Lock()
	s.sigState[sp.ID].sends = append(s.sigState[sp.ID].sends, at)
	s.inFlight[[2]int{rep, sp.ID}]++
	s.mu.Unlock()
	a := answer{At: at, Replica: rep}
	defer func() {
		s.mu.Lock()
		s.inFlight[[2]int{rep, sp.ID}]--
		st := s.sigState[sp.ID]
		end := time.Duration(0)
		if a.Status != 0 {
			end = a.Done
		}
		st.spans = append(st.spans, span{Replica: rep, Start: at, End: end})
		s.mu.Unlock()
	}()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, s.replicas[rep].url+"/webhook", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", ctype)
	resp, err := s.client.Do(req)
	a.Done = time.Since(s.h.start)
	if err != nil {
		a.Err = "connection"
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			a.Err = "timeout"
		}
		s.answers.inc(a.Err)
		s.h.add(sp.ID, "no_answer", rep, "%s", a.Err)
		return a
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.Done = time.Since(s.h.start)
	if err != nil {
		a.Err = "timeout"
		s.answers.inc(a.Err)
		s.h.add(sp.ID, "no_answer", rep, "body cut: %v", err)
		return a
	}
	a.Status, a.Body = resp.StatusCode, clip(raw, 400)
	var b struct {
		TraceID   string          `json:"trace_id"`
		Code      string          `json:"code"`
		Order     *answerOrder    `json:"order"`
		Original  *answerOriginal `json:"original"`
		Cancelled []answerOrder   `json:"cancelled"`
	}
	_ = json.Unmarshal(raw, &b)
	a.Code, a.TraceID, a.Order, a.Original, a.Cancelled = b.Code, b.TraceID, b.Order, b.Original, b.Cancelled
	kind := strconv.Itoa(a.Status)
	if a.Code != "" {
		kind += " " + a.Code
	}
	s.answers.inc(kind)
	s.h.add(sp.ID, "answer", rep, "%s %s", kind, a.Body)
	s.mu.Lock()
	st := s.sigState[sp.ID]
	st.answers = append(st.answers, a)
	if a.TraceID != "" && !slices.Contains(st.traces, a.TraceID) {
		if len(st.traces) == 0 {
			s.answered = append(s.answered, sp.ID)
		}
		st.traces = append(st.traces, a.TraceID)
	}
	s.mu.Unlock()
	return a
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// admin sends an operator request to replica rep.
func (s *sim) admin(ctx context.Context, rep int, method, path, body string) (int, string, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, method, s.replicas[rep].url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, clip(raw, 300), nil
}

// runOp carries out one operator action or nemesis event.
func (s *sim) runOp(ctx context.Context, op *opPlan) {
	switch op.Kind {
	case opRelease:
		s.mu.Lock()
		if len(s.answered) == 0 {
			s.mu.Unlock()
			return
		}
		sig := s.answered[op.Pick%uint64(len(s.answered))]
		traces := s.sigState[sig].traces
		trace := traces[len(traces)-1]
		s.mu.Unlock()
		s.ops.inc("release")
		at := time.Since(s.h.start)
		st, body, err := s.admin(ctx, op.Replica, http.MethodDelete, "/admin/traces/"+url.PathEscape(trace), `{"reason":"torture"}`)
		s.h.addSent(at, sig, "release", op.Replica, "%s → %d %v %s", trace, st, errText(err), body)
		if releaseReopens(st, body) {
			s.ops.inc("release_ok")
			s.mu.Lock()
			s.releases[sig] = append(s.releases[sig], at)
			s.mu.Unlock()
		}
	case opPurge:
		s.ops.inc("purge")
		at := time.Since(s.h.start)
		st, body, err := s.admin(ctx, op.Replica, http.MethodPost, "/admin/purge", "")
		s.h.add(-1, "purge", op.Replica, "→ %d %v %s", st, errText(err), body)
		// 202: the purge job is queued (or one already pending or running
		// is the answer); it deletes after this moment either way.
		if st == http.StatusOK || st == http.StatusAccepted {
			s.mu.Lock()
			s.purges = append(s.purges, at)
			s.mu.Unlock()
		}
	case opKillSwitch:
		s.ops.inc("kill_switch_on")
		st, _, err := s.admin(ctx, op.Replica, http.MethodPut, "/admin/kill-switch", `{"engaged":true,"reason":"torture"}`)
		s.h.add(-1, "kill_switch_on", op.Replica, "→ %d %v", st, errText(err))
		time.Sleep(op.For)
		s.ops.inc("kill_switch_off")
		for i := range 10 {
			sent := time.Since(s.h.start)
			st, _, err = s.admin(ctx, (op.Replica+i)%len(s.replicas), http.MethodPut, "/admin/kill-switch", `{"engaged":false,"reason":"torture"}`)
			s.h.addSent(sent, -1, "kill_switch_off", (op.Replica+i)%len(s.replicas), "→ %d %v", st, errText(err))
			if st == http.StatusOK {
				break
			}
			time.Sleep(s.cfg.scaled(300 * time.Millisecond))
		}
	case opKill:
		if s.replicas[op.Replica].kill() {
			s.faults.inc(FaultKill)
			s.h.add(-1, "replica_killed", op.Replica, "nemesis, down for %s", op.For)
			s.restartAfter(op.Replica, op.For)
		}
	case opPGRestart:
		s.pgMu.Lock()
		defer s.pgMu.Unlock()
		s.faults.inc(FaultPostgresRestart)
		s.h.add(-1, "postgres_crash", -1, "pg_ctl stop -m immediate")
		if err := s.cluster.Crash(ctx); err != nil {
			s.h.add(-1, "postgres_crash", -1, "failed: %v", err)
		}
		err := s.cluster.Start(context.WithoutCancel(ctx))
		s.h.add(-1, "postgres_started", -1, "%v", errText(err))
	case opLockLost:
		pid, query, err := s.terminateLockHolder(ctx, op.For)
		switch {
		case err != nil:
			s.h.add(-1, "lock_lost", -1, "failed: %v", err)
		case pid != 0:
			s.faults.inc(FaultLockLost)
			s.h.add(-1, "lock_lost", -1, "terminated backend %d holding an advisory lock (%s)", pid, query)
		}
	case opReset:
		n, err := s.resetSessions(ctx)
		if err != nil {
			s.h.add(-1, "sessions_reset", -1, "failed: %v", err)
			break
		}
		s.faults.inc(FaultSessionsReset)
		s.h.add(-1, "sessions_reset", -1, "terminated %d of hoox's sessions", n)
	case opPriceMove:
		s.movePrice(op.Price)
	case opSlowCommit:
		s.faults.inc(FaultSlowCommit)
		delay := min(op.For/3, 1500*time.Millisecond)
		err := s.setSlowCommit(ctx, delay)
		s.h.add(-1, "slow_commit_on", -1, "%s per write for %s %v", delay, op.For, errText(err))
		time.Sleep(op.For)
		err = s.setSlowCommit(ctx, 0)
		s.h.add(-1, "slow_commit_off", -1, "%v", errText(err))
	}
}

// releaseReopens reports whether a release's answer frees the trace for a
// new attempt: a 200 for a settled trace. A reconciling trace's order may
// exist at the venue, and a failed one's is unknown: hoox refuses to
// release either (the simulator never forces), so a 200 naming one is not
// taken as a re-opening.
func releaseReopens(status int, body string) bool {
	if status != http.StatusOK {
		return false
	}
	var b struct {
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return false
	}
	return b.Status != "reconciling" && b.Status != "failed"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

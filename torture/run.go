package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/localpg"
	"github.com/hoox/hoox/signal"
)

// ErrCheckFailed is returned by Run when the checker found a violation;
// the failures and their histories are in the Result and on Config.Out.
var ErrCheckFailed = errors.New("torture: checks failed")

// Secrets the replicas run with; loopback only, never real.
const (
	webhookSecret = "torture-webhook-secret"
	adminToken    = "torture-admin-token"
)

// sim is one run in progress.
type sim struct {
	cfg  Config
	plan plan
	h    *history

	ops, faults, answers counter

	cluster  *localpg.Cluster
	dbURL    string
	binance  *binancefake.Server
	bybit    *bybitfake.Server
	fronts   []*front
	replicas []*replica
	client   *http.Client
	// venueClient is the fronts' client to the fakes; a request ends with
	// the replica's.
	venueClient *http.Client
	faultsOn    atomic.Bool
	// pgMu keeps one Postgres restart at a time.
	pgMu sync.Mutex
	// bg counts the nemesis's and clients' goroutines.
	bg sync.WaitGroup

	mu         sync.Mutex
	byQuantity map[string]int
	faultTaken map[int]bool
	// legs is hoox's order_legs at the check, by client order ID.
	legs map[string]hooxLeg
	// positionBefore is the position each intent stores as read before
	// its entry (order_spec's PositionBefore, "" when it stores none), by
	// client order ID, at the check.
	positionBefore map[string]string
	// exitOwner is the signal of each exit client order ID hoox may
	// derive from an entry placed so far (signal.LegClientOrderID).
	exitOwner map[string]int
	// exitFaultTaken: the signal's exit fault was handed out.
	exitFaultTaken map[int]bool
	sigState       map[int]*signalState
	answered       []int
	releases       map[int][]time.Duration
	purges         []time.Duration
	// purged are the moments hoox recorded deleting each trace (its
	// trace_purges rows, on the history's clock), read at the check: a
	// purge requested before a trace expired runs as a job and may delete
	// it after, so the request's moment alone cannot say.
	purged map[string][]time.Duration
	// placements are every placement request the fronts saw, in arrival
	// order.
	placements []placementRequest
	skewUsed   map[int]int
	// waited is how long the checker waited for recovery.
	waited time.Duration
	// rescueBound replaces followRescueBound when set (the checker's
	// tests).
	rescueBound time.Duration
	// prices is HXUSDT's last price at the Binance fake as the run moved
	// it, oldest first; 1 before the first move.
	prices []pricePoint
	// exitRefusals are the venue's refusals (its msg) of each exit's
	// placements, by client order ID, as the fronts saw them;
	// exitAccepted the exits a venue accepted a placement of.
	exitRefusals map[string][]string
	exitAccepted map[string]bool
	// priceMu keeps one price move at a time, so each move's before and
	// after readings of the book see only what that move executed.
	priceMu sync.Mutex
	// inFlight counts the sends under way, by replica and signal.
	inFlight map[[2]int]int
	// triggered is when each resting order (by client order ID: an exit's
	// algo order, OCO list or lone spot exit, a limit entry) executed at
	// the venue: the start of the price move that reached it.
	triggered map[string]time.Duration
}

// pricePoint is a price the run moved HXUSDT to, and when the move began.
type pricePoint struct {
	At    time.Duration
	Price decimal.Decimal
}

// signalState is what the clients learnt about one signal.
type signalState struct {
	sends   []time.Duration
	answers []answer
	traces  []string
	// spans are every send's replica, start and end (0: no answer).
	spans []span
	// accepted are the venue's acceptances of the signal's placements,
	// as the fronts saw them (the paper venue has no front).
	accepted []acceptance
}

// placementRequest is a placement (an entry's or an exit's) as it arrived
// at a front, whether or not the venue accepted it.
type placementRequest struct {
	Arrived time.Duration
	Replica int
	Signal  int // -1: no signal known
	Exit    bool
	// What is the request, for a failure's detail.
	What string
}

// span is one send of a signal as its client saw it.
type span struct {
	Replica    int
	Start, End time.Duration
}

// acceptance is a placement the venue accepted, and which replica sent it.
type acceptance struct {
	// At is when the front heard the venue accept it; Arrived when the
	// request reached the front (0: unknown, take At).
	At, Arrived time.Duration
	Replica     int
}

// arrival is when the accepted request reached the venue's front.
func (a acceptance) arrival() time.Duration {
	if a.Arrived > 0 {
		return a.Arrived
	}
	return a.At
}

// Run executes one seeded run: it starts Postgres, the venue fakes and
// cfg.Replicas hoox processes, plays the plan, stops the faults, waits for
// recovery and checks the history. It returns ErrCheckFailed (with the
// Result) when a check fails, another error when the run itself could not
// be carried out.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Replay == "" {
		cfg.Replay = replayCommand(cfg)
	}
	s := &sim{cfg: cfg, plan: makePlan(cfg), h: &history{start: time.Now()},
		byQuantity: map[string]int{}, faultTaken: map[int]bool{}, exitFaultTaken: map[int]bool{}, exitOwner: map[string]int{}, sigState: map[int]*signalState{},
		releases: map[int][]time.Duration{}, skewUsed: map[int]int{}, triggered: map[string]time.Duration{}, inFlight: map[[2]int]int{},
		exitRefusals: map[string][]string{}, exitAccepted: map[string]bool{}}
	// A new connection per request, as TradingView opens one per alert: a
	// pooled connection to a killed replica would fail sends that a real
	// client never makes.
	s.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	s.venueClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for _, sp := range s.plan.signals {
		if !sp.isCancel() && !sp.isClose() {
			s.byQuantity[sp.Venue.name+"|"+normQty(sp.Quantity)] = sp.ID
		}
		s.sigState[sp.ID] = &signalState{}
	}
	fmt.Fprintf(cfg.Out, "torture: seed %d, %s at %.3g signals/s (%d planned), %d replicas, time scale %g, faults %v\n",
		cfg.Seed, cfg.Duration, cfg.Rate, len(s.plan.signals), cfg.Replicas, cfg.TimeScale, cfg.Faults)
	workDir := cfg.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "hoox-torture-")
		if err != nil {
			return nil, err
		}
		workDir = d
	}
	res, err := s.run(ctx, workDir)
	if err == nil && cfg.WorkDir == "" {
		_ = os.RemoveAll(workDir)
	} else {
		fmt.Fprintf(cfg.Out, "torture: replica logs and the Postgres log are kept in %s\n", workDir)
	}
	return res, err
}

func (s *sim) run(ctx context.Context, workDir string) (res *Result, err error) {
	// A failed run keeps its Postgres data (stopped) beside the logs.
	defer func() { s.teardown(err != nil) }()
	if err := s.setup(ctx, workDir); err != nil {
		return nil, err
	}
	setupDone := time.Since(s.h.start)
	s.h = &history{start: time.Now()}
	s.faultsOn.Store(true)
	fmt.Fprintf(s.cfg.Out, "torture: setup took %s; playing the plan\n", setupDone.Round(time.Millisecond))
	s.play(ctx)
	s.faultsOn.Store(false)
	fmt.Fprintf(s.cfg.Out, "torture: plan played at %s; faults off, waiting for recovery\n", time.Since(s.h.start).Round(time.Millisecond))
	if err := s.quiesce(ctx); err != nil {
		return nil, err
	}
	res, err = s.check(ctx)
	if err != nil {
		return nil, err
	}
	if f, err := os.Create(filepath.Join(workDir, "history.txt")); err == nil {
		for _, e := range s.h.events() {
			fmt.Fprintln(f, e)
		}
		f.Close()
	}
	res.print(s.cfg.Out, 8)
	if len(res.Failures) > 0 {
		if f, err := os.Create(filepath.Join(workDir, "failures.txt")); err == nil {
			res.print(f, len(res.Failures))
			f.Close()
			fmt.Fprintf(s.cfg.Out, "torture: every failure with its history is in %s\n", f.Name())
		}
		if res.Failed() > 0 {
			return res, ErrCheckFailed
		}
	}
	return res, nil
}

// setup starts Postgres, migrates, starts the fakes, the fronts and the
// replicas.
func (s *sim) setup(ctx context.Context, workDir string) error {
	var err error
	s.cluster, err = localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(workDir, "pg"), Fast: true,
		Settings: []string{"max_connections=200"}})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.dbURL = s.cluster.URL("postgres")
	if out, err := runHoox(ctx, s.cfg.Binary, []string{"DATABASE_URL=" + s.dbURL}, "migrate", "up"); err != nil {
		return fmt.Errorf("migrate: %w\n%s", err, out)
	}
	if err := s.installSlowCommit(ctx); err != nil {
		return err
	}
	d := decimal.RequireFromString
	hx := binancefake.Symbol{Symbol: symbol, Base: "HX", Quote: "USDT", StepSize: d("1"), MinQty: d("1"), MaxQty: d("100000000"),
		TickSize: d("0.0001"), MinPrice: d("0.0001"), MaxPrice: d("1000"), MinNotional: d("5"), ApplyMinToMarket: true, Price: d("1")}
	s.binance, err = binancefake.Start("127.0.0.1:0", binancefake.Options{Symbols: []binancefake.Symbol{hx},
		Balances: map[string]decimal.Decimal{"USDT": d("1000000000000"), "HX": d("1000000000000")}, FuturesWallet: d("1000000000000")})
	if err != nil {
		return fmt.Errorf("start binance fake: %w", err)
	}
	s.bybit, err = bybitfake.Start("127.0.0.1:0", bybitfake.Options{})
	if err != nil {
		return fmt.Errorf("start bybit fake: %w", err)
	}
	for _, c := range []string{bybitfake.CategoryLinear, bybitfake.CategorySpot} {
		s.bybit.SetInstrument(c, bybitfake.Instrument{Symbol: symbol, BaseCoin: "HX", QuoteCoin: "USDT", TickSize: d("0.0001"),
			QtyStep: d("1"), MinOrderQty: d("1"), MinNotional: d("5"), MaxLeverage: 100})
		s.bybit.SetTicker(c, symbol, d("1"))
	}
	s.bybit.SetBalance("USDT", d("1000000000000"))
	s.bybit.SetBalance("HX", d("1000000000000"))

	window := s.cfg.window()
	for i := range s.cfg.Replicas {
		port, err := freePort()
		if err != nil {
			return err
		}
		r := &replica{idx: i, addr: fmt.Sprintf("127.0.0.1:%d", port), bin: s.cfg.Binary,
			logPath: filepath.Join(workDir, fmt.Sprintf("replica-%d.log", i))}
		r.url = "http://" + r.addr
		r.env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + s.dbURL, "HOOX_ADDR=" + r.addr,
			"HOOX_WEBHOOK_SECRET=" + webhookSecret, "HOOX_ADMIN_TOKEN=" + adminToken, "HOOX_LOG_LEVEL=info",
			"HOOX_DB_MAX_CONNS=8", "HOOX_DB_MIN_CONNS=1", "HOOX_SHUTDOWN_WAIT=2s",
			"HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=2s", "HOOX_PURGE_INTERVAL=1h",
			"HOOX_TRACE_TTL=" + window.String(), "HOOX_DEDUP_WINDOW=" + window.String(),
			"HOOX_MAX_SIGNAL_AGE=" + (window / 2).String(),
			"HOOX_LOCK_WAIT=" + min(2*time.Second, s.cfg.scaled(2*time.Second)).String()}
		bf, err := startFront(s, "binance", s.binance.URL, i)
		if err != nil {
			return err
		}
		yf, err := startFront(s, "bybit", s.bybit.URL, i)
		if err != nil {
			return err
		}
		s.fronts = append(s.fronts, bf, yf)
		for _, v := range []struct{ env, key, secret, url string }{
			{"BINANCE", s.binance.APIKey(), s.binance.APISecret(), bf.url},
			{"BINANCE_FUTURES", s.binance.APIKey(), s.binance.APISecret(), bf.url},
			{"BYBIT", bybitfake.DefaultAPIKey, bybitfake.DefaultAPISecret, yf.url},
			{"BYBIT_SPOT", bybitfake.DefaultAPIKey, bybitfake.DefaultAPISecret, yf.url},
		} {
			r.env = append(r.env, "HOOX_"+v.env+"_API_KEY="+v.key, "HOOX_"+v.env+"_API_SECRET="+v.secret, "HOOX_"+v.env+"_BASE_URL="+v.url)
		}
		s.replicas = append(s.replicas, r)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(s.replicas))
	for i := range s.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.startReplica(ctx, i, true)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startReplica starts replica i unless it runs, with its next planned
// clock skew when skewed (none once the faults are over).
func (s *sim) startReplica(ctx context.Context, i int, skewed bool) (bool, error) {
	s.mu.Lock()
	n := s.skewUsed[i]
	s.skewUsed[i]++
	s.mu.Unlock()
	skews := s.plan.skews[i]
	skew := skews[n%len(skews)]
	if !skewed {
		skew = 0
	}
	t0 := time.Now()
	started, err := s.replicas[i].ensureUp(ctx, skew)
	if started && err == nil {
		s.h.add(-1, "replica_started", i, "clock skew %s, up in %s", skew, time.Since(t0).Round(time.Millisecond))
		if skew != 0 {
			s.faults.inc(FaultClockSkew)
		}
	}
	return started, err
}

func (s *sim) teardown(keep bool) {
	for _, r := range s.replicas {
		r.stop()
	}
	for _, f := range s.fronts {
		f.close()
	}
	if s.binance != nil {
		s.binance.Close()
	}
	if s.bybit != nil {
		s.bybit.Close()
	}
	if s.cluster != nil {
		if keep {
			_ = s.cluster.Stop(context.Background())
		} else {
			_ = s.cluster.Remove(context.Background())
		}
	}
}

// play runs the plan: each signal's client and each operator or nemesis
// action at its planned time, then waits for every client to finish.
func (s *sim) play(ctx context.Context) {
	type item struct {
		at  time.Duration
		sig *signalPlan
		op  *opPlan
	}
	var items []item
	si, oi := 0, 0
	for si < len(s.plan.signals) || oi < len(s.plan.ops) {
		if oi >= len(s.plan.ops) || (si < len(s.plan.signals) && s.plan.signals[si].At <= s.plan.ops[oi].At) {
			items = append(items, item{at: s.plan.signals[si].At, sig: &s.plan.signals[si]})
			si++
		} else {
			items = append(items, item{at: s.plan.ops[oi].At, op: &s.plan.ops[oi]})
			oi++
		}
	}
	stop := s.progress(30 * time.Second)
	defer stop()
	for _, it := range items {
		if wait := it.at - time.Since(s.h.start); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			if it.sig != nil {
				s.runClient(ctx, it.sig)
			} else {
				s.runOp(ctx, it.op)
			}
		}()
	}
	s.bg.Wait()
}

// quiesce ends every fault: each replica runs, Postgres runs, the kill
// switch is off, lookups no longer lag.
func (s *sim) quiesce(ctx context.Context) error {
	s.binance.SetLookupLag(0)
	if err := s.setSlowCommit(ctx, 0); err != nil {
		return err
	}
	for i := range s.replicas {
		if _, err := s.startReplica(ctx, i, false); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sent := time.Since(s.h.start)
		st, _, err := s.admin(ctx, 0, http.MethodPut, "/admin/kill-switch", `{"engaged":false,"reason":"torture: faults over"}`)
		s.h.addSent(sent, -1, "kill_switch_off", 0, "→ %d %v (faults over)", st, errText(err))
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("could not release the kill switch: %d %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.h.add(-1, "faults_over", -1, "every replica up, kill switch off")
	return nil
}

// runHoox runs the hoox binary to completion.
func runHoox(ctx context.Context, bin string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	return cmd.CombinedOutput()
}

// replayCommand is the command line that plays cfg again.
func replayCommand(cfg Config) string {
	cmd := fmt.Sprintf("go run ./cmd/hoox torture --seed %d --duration %s --rate %s --replicas %d --time-scale %s",
		cfg.Seed, cfg.Duration, strconv.FormatFloat(cfg.Rate, 'f', -1, 64), cfg.Replicas, strconv.FormatFloat(cfg.TimeScale, 'f', -1, 64))
	if len(cfg.Faults) != len(AllFaults()) {
		cmd += " --faults " + strings.Join(cfg.Faults, ",")
	}
	if len(cfg.Tolerate) > 0 {
		cmd += " --tolerate " + strings.Join(cfg.Tolerate, ",")
	}
	return cmd
}

// signalByQuantity names the signal a venue request belongs to, -1 when
// none.
func (s *sim) signalByQuantity(qty string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range venues {
		if id, ok := s.byQuantity[v.name+"|"+qty]; ok {
			return id
		}
	}
	return -1
}

// takeFault hands out a signal's planned venue fault on its first
// placement, while faults are on.
func (s *sim) takeFault(sig int) (string, time.Duration) {
	if sig < 0 || !s.faultsOn.Load() {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faultTaken[sig] {
		return "", 0
	}
	s.faultTaken[sig] = true
	sp := s.plan.signals[sig]
	if sp.Fault != "" {
		s.faults.inc(sp.Fault)
	}
	return sp.Fault, sp.FaultDelay
}

// entryPlaced notes the client order ID of a placement of signal sig's
// entry, so its exits' placements are known as the signal's.
func (s *sim) entryPlaced(sig int, clientOrderID string) {
	if sig < 0 || clientOrderID == "" || len(s.plan.signals[sig].Exits) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := 1; n <= len(s.plan.signals[sig].Exits); n++ {
		s.exitOwner[signal.LegClientOrderID(clientOrderID, n)] = sig
	}
}

// exitSignal is the signal an exit's client order ID belongs to (-1: none
// known).
func (s *sim) exitSignal(clientOrderID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.exitOwner[clientOrderID]; ok {
		return sig
	}
	return -1
}

// takeExitFault hands out a signal's planned exit fault on the first
// placement of one of its exits, while faults are on.
func (s *sim) takeExitFault(sig int) string {
	if sig < 0 || !s.faultsOn.Load() {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitFaultTaken[sig] {
		return ""
	}
	s.exitFaultTaken[sig] = true
	f := s.plan.signals[sig].ExitFault
	if f != "" {
		s.faults.inc("exit_" + f)
	}
	return f
}

// lagNextLookup hides the next placement at fake from order queries.
func (s *sim) lagNextLookup(fake string, d time.Duration) {
	switch fake {
	case "binance":
		// binancefake's lag holds for every order placed while it is set;
		// it is lifted again after d.
		s.binance.SetLookupLag(d)
		time.AfterFunc(d, func() { s.binance.SetLookupLag(0) })
	case "bybit":
		s.bybit.LagLookups(1, d)
	}
}

// killReplica kills replica i (kill -9) and schedules its restart.
func (s *sim) killReplica(i, sig int, why string) {
	if !s.replicas[i].kill() {
		return
	}
	s.h.add(sig, "replica_killed", i, "%s", why)
	down := s.cfg.scaled(time.Second)
	s.restartAfter(i, down)
}

func (s *sim) restartAfter(i int, d time.Duration) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		time.Sleep(d)
		if _, err := s.startReplica(context.Background(), i, s.faultsOn.Load()); err != nil {
			s.h.add(-1, "replica_start_failed", i, "%v", err)
		}
	}()
}

// slowCommitSQL installs a trigger that sleeps inside hoox's order and
// trace writes for as long as torture_slow says: a slow commit, with the
// venue's order already placed.
const slowCommitSQL = `
CREATE TABLE IF NOT EXISTS torture_slow (id int PRIMARY KEY, delay_ms int NOT NULL);
INSERT INTO torture_slow VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION torture_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE d int;
BEGIN
  SELECT delay_ms INTO d FROM torture_slow WHERE id = 1;
  IF d > 0 THEN PERFORM pg_sleep(d / 1000.0); END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS torture_slow_orders ON orders;
CREATE TRIGGER torture_slow_orders AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION torture_slow_commit();
DROP TRIGGER IF EXISTS torture_slow_traces ON trace_ids;
CREATE TRIGGER torture_slow_traces AFTER UPDATE ON trace_ids FOR EACH ROW EXECUTE FUNCTION torture_slow_commit();`

func (s *sim) installSlowCommit(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, slowCommitSQL); err != nil {
		return fmt.Errorf("install slow-commit trigger: %w", err)
	}
	return nil
}

func (s *sim) setSlowCommit(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := func() error {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conn, err := pgx.Connect(cctx, s.dbURL)
			if err != nil {
				return err
			}
			defer conn.Close(cctx)
			_, err = conn.Exec(cctx, `UPDATE torture_slow SET delay_ms = $1 WHERE id = 1`, d.Milliseconds())
			return err
		}()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// terminateLockHolderSQL terminates one session (chosen at random) that
// holds an advisory lock in hoox's database, and says which, with the
// start of what it was running.
const terminateLockHolderSQL = `
SELECT h.pid, left(regexp_replace(btrim(h.query), '\s+', ' ', 'g'), 80), pg_terminate_backend(h.pid)
FROM (SELECT DISTINCT ON (l.pid) l.pid, a.query
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) h
ORDER BY random()
LIMIT 1`

// terminateLockHolder polls for up to within until some session holds an
// advisory lock and terminates it; pid 0 when none appeared in time.
func (s *sim) terminateLockHolder(ctx context.Context, within time.Duration) (pid int, query string, err error) {
	cctx, cancel := context.WithTimeout(ctx, within+5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.dbURL)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(within)
	for {
		var terminated bool
		err := conn.QueryRow(cctx, terminateLockHolderSQL).Scan(&pid, &query, &terminated)
		switch {
		case err == nil:
			return pid, query, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, "", err
		case time.Now().After(deadline):
			return 0, "", nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resetSessionsSQL terminates a random half of the replicas' sessions in
// hoox's database (their pools name themselves hoox, hoox-markers,
// hoox-paper; the simulator's own connections have no name).
const resetSessionsSQL = `
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'hoox%' AND random() < 0.5`

// resetSessions terminates a random half of hoox's sessions at once
// (FaultSessionsReset) and says how many.
func (s *sim) resetSessions(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(cctx, resetSessionsSQL).Scan(&n)
	return n, err
}

// progress prints a line every interval until stopped, so a long run shows
// it is alive.
func (s *sim) progress(every time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ops, faults := s.ops.snapshot(), s.faults.snapshot()
				n := 0
				for _, v := range faults {
					n += v
				}
				fmt.Fprintf(s.cfg.Out, "torture: %s: %d sends, %d faults\n", time.Since(s.h.start).Round(time.Second), ops["send"], n)
			}
		}
	}()
	return func() { close(done) }
}

// accepted records that the venue booked a placement of sig from
// replica, whose request arrived at arrived.
func (s *sim) accepted(sig, replica int, arrived time.Duration) {
	at := time.Since(s.h.start)
	s.mu.Lock()
	st := s.sigState[sig]
	st.accepted = append(st.accepted, acceptance{At: at, Arrived: arrived, Replica: replica})
	s.mu.Unlock()
}

// movePrice moves HXUSDT's price at the Binance fake (spot and USDⓈ-M)
// and records the resting orders the move executed (exits, limit
// entries), each with the move's start: the fake executes them inside
// MovePrice, under its lock.
func (s *sim) movePrice(price string) {
	p, err := decimal.NewFromString(price)
	if err != nil {
		s.h.add(-1, "price_move", -1, "bad price %q: %v", price, err)
		return
	}
	s.priceMu.Lock()
	defer s.priceMu.Unlock()
	before := s.restingExecuted()
	at := time.Since(s.h.start)
	s.binance.MovePrice(symbol, p)
	s.ops.inc(opPriceMove)
	s.mu.Lock()
	s.prices = append(s.prices, pricePoint{At: at, Price: p})
	s.mu.Unlock()
	s.h.add(-1, "price_move", -1, "%s %s", symbol, p)
	after := s.restingExecuted()
	for _, id := range slices.Sorted(maps.Keys(after)) {
		if _, was := before[id]; was {
			continue
		}
		sig := s.exitSignal(id)
		if sig < 0 {
			sig = s.signalByQuantity(after[id].qty)
		}
		s.mu.Lock()
		if _, seen := s.triggered[id]; !seen {
			s.triggered[id] = at
		}
		s.mu.Unlock()
		s.h.add(sig, "resting_executed", -1, "%s %s executed %s at price %s", after[id].what, id, after[id].executed, p)
	}
}

// restingExec is what a resting order executed, what it is and its
// quantity.
type restingExec struct {
	what     string // "exit" or "limit entry"
	qty      string
	executed decimal.Decimal
}

// restingExecuted are the resting orders the Binance fake executed so
// far, by client order ID: a USDⓈ-M algo order triggered into a market
// order, an OCO list one of whose orders filled, a lone spot exit order,
// a limit entry.
func (s *sim) restingExecuted() map[string]restingExec {
	out := map[string]restingExec{}
	for _, o := range s.binanceOrders() {
		if o.Exit == "" && !o.Limit {
			continue
		}
		if q := executed(o); q.IsPositive() {
			what := "exit"
			if o.Exit == "" {
				what = "limit entry"
			}
			out[o.ClientOrderID] = restingExec{what: what, qty: o.Quantity, executed: q}
		}
	}
	return out
}

// closeInFlight is the close signal a reduce-only USDⓈ-M placement from
// replica belongs to: the one close with a send under way to it; -1 when
// none or several are (a reconcile's placement, or one the checker
// cannot tell).
func (s *sim) closeInFlight(replica int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := -1
	for k, n := range s.inFlight {
		if k[0] != replica || n <= 0 || !s.plan.signals[k[1]].isClose() {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = k[1]
	}
	return found
}

// closeTrace is the trace ID hoox gives a close signal: a client key's
// (signal.DeriveTrace: "k:" and the key).
func (s *sim) closeTrace(sp *signalPlan) string { return "k:" + sp.key(s.cfg.Seed) }

// exitAnswered records the venue's answer to a placement of exit id: a
// refusal's message, or that it accepted it.
func (s *sim) exitAnswered(id string, status int, answer []byte) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == http.StatusOK {
		s.exitAccepted[id] = true
		return
	}
	var b struct {
		Msg string `json:"msg"`
	}
	if json.Unmarshal(answer, &b) != nil || b.Msg == "" {
		b.Msg = fmt.Sprintf("http %d", status)
	}
	s.exitRefusals[id] = append(s.exitRefusals[id], b.Msg)
}

// placementArrived records a placement request as it reached a front.
func (s *sim) placementArrived(p placementRequest) {
	s.mu.Lock()
	s.placements = append(s.placements, p)
	s.mu.Unlock()
}

package torture

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Identity modes: how a signal's trace ID is chosen (DESIGN.md, "Trace ID").
const (
	ModeKey     = "key"     // client key: trace_id in the body
	ModeDerived = "derived" // timestamp in the body
	ModeWindow  = "window"  // neither: sliding window
)

// Client kinds.
const (
	// ClientTradingView times out after 3 s and resends after 5 s on a 5xx
	// other than 504, at most three times.
	ClientTradingView = "tradingview"
	// ClientImpatient resends at once, to another replica, on a timeout,
	// a 5xx or an in_progress, at most three times.
	ClientImpatient = "impatient"
	// ClientFanout sends the same signal to every replica at once, as two
	// alerts with one message or a mirroring proxy do, and never resends.
	ClientFanout = "fanout"
)

// venue is one exchange name a signal can use and where its orders are.
type venue struct {
	name string // the signal's exchange field
	fake string // "paper", "binance" or "bybit": which book holds it
}

var venues = []venue{{"paper", "paper"}, {"binance", "binance"}, {"binance-futures", "binance"}, {"bybit", "bybit"}, {"bybit-spot", "bybit"}}

// symbol is what every signal trades: a cheap symbol every fake serves, so
// thousands of orders never run out of balance. Paper's refusals use
// rejectSymbol.
const (
	symbol       = "HXUSDT"
	rejectSymbol = "INVALIDHX"
)

// signalPlan is one logical signal: what the strategy fires once, however
// often its client sends it. Its quantity is unique in the run, so the
// checker groups the venues' orders by signal without asking hoox.
type signalPlan struct {
	ID       int
	At       time.Duration
	Venue    venue
	Symbol   string
	Side     string
	Quantity string
	Mode     string
	Client   string
	// TextPlain sends it as text/plain, as TradingView does.
	TextPlain bool
	// LBRetry: the load balancer resends to another replica when the
	// first refuses the connection or answers 502.
	LBRetry bool
	// Fault is a venue-side fault for the signal's first placement ("" =
	// none): one of the answer faults, kill_after_accept, lookup_lag.
	Fault string
	// FaultDelay is slow_answer's hold or lookup_lag's lag.
	FaultDelay time.Duration
	// Seed drives the client's own choices (replicas, jitter).
	Seed uint64
	// Exits are the exits the entry asks for, in the order hoox plans
	// them (take_profit, stop_loss, trailing_stop): on binance-futures
	// each is its own conditional order; on binance (spot) a take-profit
	// with a stop-loss is one OCO list and a lone one a single sell order,
	// and a spot sell's exits are refused (422). Each order is a leg,
	// placed once the entry filled.
	Exits []string
	// ExitFault is a venue-side fault for the first placement of one of
	// the signal's exits ("" = none): an answer fault or
	// kill_after_accept.
	ExitFault string
	// Limit is a limit entry's price ("" = a market entry): below the
	// price planned for its moment for a buy, above it for a sell, so it
	// rests until the price reaches it. A limit entry carries no exits.
	Limit string
}

// actionCancel is the Side of a cancel signal: {"action": "cancel"} for
// the venue and symbol, no quantity (DECISIONS.md, "the cancel action").
const actionCancel = "cancel"

// isCancel reports whether sp is a cancel signal: it places nothing and
// cancels the orders hoox recorded open for its venue and symbol.
func (sp *signalPlan) isCancel() bool { return sp.Side == actionCancel }

// actionClose is the Side of a close signal: {"action": "close"}, a
// reduce-only market order for the whole USDⓈ-M position, whatever its
// quantity says (README, "close").
const actionClose = "close"

// isClose reports whether sp is a close of the whole position.
func (sp *signalPlan) isClose() bool { return sp.Side == actionClose }

// exitLegs are the roles of the legs that carry sp's exits, leg n at
// n-1 (signal.LegClientOrderID(entry, n)); none where the venue refuses
// them (a spot sell).
func (sp *signalPlan) exitLegs() []string {
	if sp.Venue.name != "binance" {
		return sp.Exits
	}
	switch {
	case len(sp.Exits) == 0 || sp.Side != "buy":
		return nil
	case len(sp.Exits) == 2:
		return []string{"oco"}
	}
	return sp.Exits
}

// exitFaults are the faults an exit's placement can meet.
var exitFaults = []string{FaultAnswerLost, FaultHTTP5xx, FaultHTTP408, FaultNonJSON, FaultKillAfterAccept}

// opPlan is a timed operator or nemesis action.
type opPlan struct {
	At      time.Duration
	Kind    string // see the op* constants
	Replica int
	// For is how long the action lasts (kill switch on, replica down,
	// slow commits).
	For time.Duration
	// Pick chooses among the signals answered so far (release).
	Pick uint64
	// Price is the symbol's new last price (price_move), as the Binance
	// fake takes it.
	Price string
}

// Operator actions and nemesis events that are not tied to one signal.
const (
	opRelease    = "release"
	opKillSwitch = "kill_switch"
	opPurge      = "purge"
	opKill       = FaultKill
	opPGRestart  = FaultPostgresRestart
	opSlowCommit = FaultSlowCommit
	opLockLost   = FaultLockLost
	opReset      = FaultSessionsReset
	// opPriceMove moves HXUSDT's last price at the Binance fake, spot and
	// USDⓈ-M alike: market entries fill at it and the exits it reaches
	// trigger (binancefake.MovePrice).
	opPriceMove = "price_move"
)

// plan is the whole run, drawn from the seed before anything starts.
type plan struct {
	signals []signalPlan
	ops     []opPlan
	// skews is each replica's clock skew per incarnation (start, restart…).
	skews [][]time.Duration
}

// signalFaults are the per-signal venue faults.
var signalFaults = []string{FaultAnswerLost, FaultHTTP5xx, FaultHTTP408, FaultNonJSON, FaultSlowAnswer, FaultKillAfterAccept, FaultLookupLag}

func makePlan(cfg Config) plan {
	// Each stream draws from its own PCG, so a shorter --duration plays a
	// prefix of a longer run with the same seed.
	r := rand.New(rand.NewPCG(cfg.Seed, 0x686f6f78))
	on := map[string]bool{}
	for _, f := range cfg.Faults {
		on[f] = true
	}
	var faults []string
	for _, f := range signalFaults {
		if on[f] {
			faults = append(faults, f)
		}
	}
	var p plan
	// The price walk first: a limit entry's price is drawn against it.
	prices := pricePath(cfg)
	// Signals: a Poisson stream at Rate.
	var t time.Duration
	for i := 0; ; i++ {
		t += time.Duration(r.ExpFloat64() / cfg.Rate * float64(time.Second))
		if t >= cfg.Duration {
			break
		}
		s := signalPlan{ID: i, At: t, Venue: venues[r.IntN(len(venues))], Symbol: symbol,
			Side: []string{"buy", "sell"}[r.IntN(2)], Quantity: strconv.Itoa(10 + i),
			Mode: []string{ModeKey, ModeDerived, ModeWindow}[r.IntN(3)], Seed: r.Uint64()}
		s.Client = ClientTradingView
		if r.IntN(3) == 0 {
			s.Client = ClientImpatient
		}
		// Drawn from the signal's own stream, so adding this kind changed
		// no other draw of existing seeds.
		if rand.New(rand.NewPCG(s.Seed, 1)).IntN(8) == 0 {
			s.Client = ClientFanout
		}
		s.TextPlain = r.IntN(4) == 0
		s.LBRetry = r.IntN(3) == 0
		if s.Venue.fake == "paper" && r.IntN(8) == 0 {
			s.Symbol = rejectSymbol
		}
		// A third of the signals on real venues meet a venue fault.
		if s.Venue.fake != "paper" && len(faults) > 0 && r.IntN(3) == 0 {
			s.Fault = faults[r.IntN(len(faults))]
			switch s.Fault {
			case FaultSlowAnswer:
				s.FaultDelay = cfg.scaled(time.Duration(500+r.IntN(4000)) * time.Millisecond)
			case FaultLookupLag:
				// Within the lookup lag hoox's accept window allows for
				// (10 s, docs/DECISIONS.md "Recovery protocol"), which
				// hoox must wait out before believing "not found".
				s.FaultDelay = time.Duration(500+r.IntN(7500)) * time.Millisecond
			}
		}
		// Like the fan-out client, from the signal's own stream.
		if s.Venue.fake != "paper" && s.Fault == "" && on[FaultUnsent5xx] && rand.New(rand.NewPCG(s.Seed, 2)).IntN(12) == 0 {
			s.Fault = FaultUnsent5xx
		}
		// One USDⓈ-M signal in eight is a cancel of the symbol's resting
		// orders (its exits), from the signal's own stream: a cancel
		// places nothing, so it carries no quantity, fault or exits.
		if s.Venue.name == "binance-futures" && rand.New(rand.NewPCG(s.Seed, 4)).IntN(8) == 0 {
			s.Side, s.Quantity, s.Fault, s.FaultDelay = actionCancel, "", "", 0
			p.signals = append(p.signals, s)
			continue
		}
		// One USDⓈ-M signal in ten (of the rest) closes the whole
		// position, from the signal's own stream. Its order's quantity is
		// the position's, not the signal's, so the checker knows it by its
		// trace, which a client key fixes (k:<key>): a close always
		// carries one. It meets no planned fault and asks for no exits.
		if s.Venue.name == "binance-futures" && rand.New(rand.NewPCG(s.Seed, 6)).IntN(10) == 0 {
			s.Side, s.Mode, s.Fault, s.FaultDelay = actionClose, ModeKey, "", 0
			p.signals = append(p.signals, s)
			continue
		}
		// One Binance entry in five is a limit order a little off the
		// price planned for its moment, from the signal's own stream; it
		// asks for no exits.
		if s.Venue.fake == "binance" {
			if lr := rand.New(rand.NewPCG(s.Seed, 5)); lr.IntN(5) == 0 {
				off := 30 + lr.IntN(91) // 0.3 % to 1.2 %
				at := priceAt(prices, s.At)
				if s.Side == "buy" {
					off = -off
				}
				s.Limit = decimalTicks(at + at*off/10000)
				p.signals = append(p.signals, s)
				continue
			}
		}
		// Exits, from the signal's own stream too: half the USDⓈ-M
		// signals carry a take-profit and a stop-loss, a third of those a
		// trailing stop as well; a third of the spot signals carry a
		// take-profit and a stop-loss, or one of the two.
		if s.Venue.name == "binance-futures" || s.Venue.name == "binance" {
			er := rand.New(rand.NewPCG(s.Seed, 3))
			if s.Venue.name == "binance-futures" && er.IntN(2) == 0 {
				s.Exits = []string{"take_profit", "stop_loss"}
				if er.IntN(3) == 0 {
					s.Exits = append(s.Exits, "trailing_stop")
				}
			}
			if s.Venue.name == "binance" && er.IntN(3) == 0 {
				s.Exits = [][]string{{"take_profit", "stop_loss"}, {"stop_loss"}, {"take_profit"}}[er.IntN(3)]
			}
			if len(s.Exits) > 0 {
				var ef []string
				for _, f := range exitFaults {
					if on[f] {
						ef = append(ef, f)
					}
				}
				if len(ef) > 0 && er.IntN(3) == 0 {
					s.ExitFault = ef[er.IntN(len(ef))]
				}
			}
		}
		p.signals = append(p.signals, s)
	}
	// Operator actions and nemesis events, each a Poisson stream of its own
	// rate (per minute at real timings).
	stream := func(kind string, perMinute float64, fn func(*opPlan)) {
		if perMinute <= 0 {
			return
		}
		r := rand.New(rand.NewPCG(cfg.Seed, streamID(kind)))
		rate := perMinute / 60 / cfg.TimeScale
		var t time.Duration
		for {
			t += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
			if t >= cfg.Duration {
				return
			}
			op := opPlan{At: t, Kind: kind, Replica: r.IntN(cfg.Replicas), Pick: r.Uint64()}
			if fn != nil {
				fn(&op)
			}
			p.ops = append(p.ops, op)
		}
	}
	stream(opRelease, 6, nil)
	stream(opPurge, 3, nil)
	stream(opKillSwitch, 1.5, func(o *opPlan) { o.For = cfg.scaled(time.Duration(1000+r.IntN(3000)) * time.Millisecond) })
	if on[FaultKill] {
		stream(opKill, 4, func(o *opPlan) { o.For = cfg.scaled(time.Duration(200+r.IntN(3000)) * time.Millisecond) })
	}
	if on[FaultPostgresRestart] {
		stream(opPGRestart, 1.5, nil)
	}
	if on[FaultSlowCommit] {
		stream(opSlowCommit, 2, func(o *opPlan) { o.For = cfg.scaled(time.Duration(1000+r.IntN(4000)) * time.Millisecond) })
	}
	if on[FaultLockLost] {
		// For is how long the nemesis waits for a lock holder to appear.
		stream(opLockLost, 6, func(o *opPlan) { o.For = cfg.scaled(2 * time.Second) })
	}
	if on[FaultSessionsReset] {
		stream(opReset, 3, nil)
	}
	p.ops = append(p.ops, prices...)
	slices.SortStableFunc(p.ops, func(a, b opPlan) int { return int(a.At - b.At) })
	p.skews = make([][]time.Duration, cfg.Replicas)
	r = rand.New(rand.NewPCG(cfg.Seed, streamID("skew")))
	for i := range p.skews {
		for range 64 {
			var d time.Duration
			if on[FaultClockSkew] && r.IntN(2) == 0 {
				d = time.Duration(r.IntN(60001)-30000) * time.Millisecond
			}
			p.skews[i] = append(p.skews[i], d)
		}
	}
	return p
}

// pricePath is the run's price walk (opPriceMove), a Poisson stream of
// its own at 20 moves a minute (scaled like the others): moves of 0.3 % to
// 2.5 % each, kept within 6 % of 1, so the exits (take-profit 2 %,
// stop-loss 1 %, trailing 1.5 %) and the limit entries (0.3 % to 1.2 %
// off) are reached during the run.
func pricePath(cfg Config) []opPlan {
	r := rand.New(rand.NewPCG(cfg.Seed, streamID(opPriceMove)))
	pr := rand.New(rand.NewPCG(cfg.Seed, streamID("price")))
	rate := 20.0 / 60 / cfg.TimeScale
	price := 10000 // in ticks of 0.0001
	var out []opPlan
	var t time.Duration
	for {
		t += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
		if t >= cfg.Duration {
			return out
		}
		step := 30 + pr.IntN(221)
		if pr.IntN(2) == 0 {
			step = -step
		}
		price = min(10600, max(9400, price+step))
		out = append(out, opPlan{At: t, Kind: opPriceMove, Replica: -1, Price: decimalTicks(price)})
	}
}

// priceAt is the planned price at t, in ticks of 0.0001.
func priceAt(path []opPlan, t time.Duration) int {
	at := 10000
	for _, op := range path {
		if op.At > t {
			break
		}
		d, err := decimal.NewFromString(op.Price)
		if err == nil {
			at = int(d.Shift(4).IntPart())
		}
	}
	return at
}

// decimalTicks writes n ticks of 0.0001 as a decimal.
func decimalTicks(n int) string { return fmt.Sprintf("%d.%04d", n/10000, n%10000) }

// streamID names a PCG stream after what it draws.
func streamID(kind string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * 1099511628211
	}
	return h
}

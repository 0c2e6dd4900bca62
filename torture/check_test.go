package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/signal"
)

// checkBundle is a finished run made up by hand: signals, what their
// clients heard, the venues' books and hoox's orders.
type checkBundle struct {
	s   *sim
	vos []venueOrder
	hos map[string]hooxOrder
}

func setupCheck(t *testing.T, signals ...signalPlan) *checkBundle {
	t.Helper()
	s := &sim{cfg: Config{TimeScale: 1, RecoveryBound: time.Second}, h: &history{start: time.Now()},
		byQuantity: map[string]int{}, sigState: map[int]*signalState{}, releases: map[int][]time.Duration{}}
	for i, sp := range signals {
		sp.ID = i
		s.plan.signals = append(s.plan.signals, sp)
		s.byQuantity[sp.Venue.name+"|"+sp.Quantity] = i
		s.sigState[i] = &signalState{}
	}
	return &checkBundle{s: s, hos: map[string]hooxOrder{}}
}

// send records one send of signal sig at at with its answer.
func (b *checkBundle) send(sig int, at time.Duration, a answer) {
	st := b.s.sigState[sig]
	st.sends = append(st.sends, at)
	a.At = at
	if a.Status != 0 {
		st.answers = append(st.answers, a)
	}
}

// order books an order at the venue, recorded by hoox unless unrecorded.
func (b *checkBundle) order(sig int, cid, eid string, recorded bool) {
	sp := b.s.plan.signals[sig]
	o := venueOrder{Exchange: sp.Venue.name, ClientOrderID: cid, ExchangeOrderID: eid, Symbol: sp.Symbol, Side: sp.Side, Quantity: sp.Quantity, Status: "FILLED"}
	b.vos = append(b.vos, o)
	if recorded {
		b.hos[cid] = hooxOrder{TraceID: "k:x", ClientOrderID: cid, Exchange: o.Exchange, Symbol: o.Symbol, Side: o.Side, Quantity: o.Quantity, Status: "filled", ExchangeOrderID: eid}
	}
}

func (b *checkBundle) judge() map[string]int {
	res := &Result{Checks: map[string]int{}}
	b.s.judge(res, b.vos, b.hos, unrecordedOrders(b.vos, b.hos))
	failed := map[string]int{}
	for _, f := range res.Failures {
		failed[f.Check]++
	}
	return failed
}

func binanceSignal(mode string) signalPlan {
	return signalPlan{Venue: venue{"binance", "binance"}, Symbol: symbol, Side: "buy", Quantity: "10", Mode: mode}
}

func placed(cid string) answer {
	return answer{Status: 200, Order: &answerOrder{ClientOrderID: cid, Symbol: symbol, Side: "buy", Quantity: "10", Status: "filled"}}
}

func TestCheckerPassesOneRecordedOrder(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey))
	b.send(0, time.Second, placed("hxa"))
	b.send(0, 2*time.Second, answer{Status: 409, Code: "duplicate", Original: &answerOriginal{Status: "dispatched", ClientOrderID: ptr("hxa")}})
	b.order(0, "hxa", "1", true)
	require.Empty(t, b.judge())
}

func TestCheckerCatchesASecondOrderUnderAReusedClientID(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey))
	b.send(0, time.Second, answer{Status: 503, Code: "unavailable"})
	b.send(0, 6*time.Second, placed("hxa"))
	b.order(0, "hxa", "1", false) // hoox recorded only the second
	b.order(0, "hxa", "2", true)
	require.Equal(t, map[string]int{checkAtMostOnce: 1, checkRecorded: 1}, b.judge())
}

func TestCheckerAllowsAReleaseFollowedByASend(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey))
	b.send(0, time.Second, placed("hxa"))
	b.s.releases[0] = []time.Duration{2 * time.Second}
	b.send(0, 3*time.Second, placed("hxb"))
	b.order(0, "hxa", "1", true)
	b.order(0, "hxb", "2", true)
	require.Empty(t, b.judge())

	// A release after the last send re-opens nothing.
	b.s.releases[0] = []time.Duration{4 * time.Second}
	require.Equal(t, map[string]int{checkAtMostOnce: 1}, b.judge())
}

func TestCheckerAllowsAPurgeOnlyAfterTheTTL(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeDerived))
	b.send(0, time.Second, placed("hxa"))
	b.send(0, 40*time.Second, placed("hxb"))
	b.order(0, "hxa", "1", true)
	b.order(0, "hxb", "2", true)
	b.s.purges = []time.Duration{5 * time.Second} // before the 30 s TTL
	require.Equal(t, map[string]int{checkAtMostOnce: 1}, b.judge())
	b.s.purges = []time.Duration{35 * time.Second}
	require.Empty(t, b.judge())
}

func TestChecker422MeansNothingExecuted(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeWindow))
	b.send(0, time.Second, answer{Status: 422, Code: "order_rejected"})
	require.Empty(t, b.judge())
	b.order(0, "hxa", "1", true)
	b.hos["hxa"] = hooxOrder{TraceID: "w:x", ClientOrderID: "hxa", Exchange: "binance", Symbol: symbol, Side: "buy", Quantity: "10", Status: "rejected", ExchangeOrderID: "1"}
	require.Equal(t, map[string]int{check422: 1, checkTruthful: 1}, b.judge())
}

func TestCheckerAnswersMustNameTheSignalsOrder(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey), signalPlan{Venue: venue{"bybit", "bybit"}, Symbol: symbol, Side: "sell", Quantity: "11", Mode: ModeKey})
	b.order(0, "hxa", "1", true)
	b.send(1, time.Second, placed("hxa")) // signal 0's order, and on another venue
	b.send(0, time.Second, placed("hxmissing"))
	require.Equal(t, map[string]int{checkAnswer: 2}, b.judge())
}

func TestCheckerRefusesOrdersNoSignalAskedFor(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey))
	b.vos = append(b.vos, venueOrder{Exchange: "binance", ClientOrderID: "hxz", ExchangeOrderID: "9", Symbol: symbol, Side: "buy", Quantity: "999"})
	b.hos["hxz"] = hooxOrder{ClientOrderID: "hxz", Exchange: "binance", Symbol: symbol, Side: "buy", Quantity: "999", Status: "filled", ExchangeOrderID: "9"}
	require.Equal(t, map[string]int{checkAttributed: 1}, b.judge())
}

func TestPlanIsTheSeeds(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 5, Duration: time.Minute, Rate: 3, Replicas: 3, TimeScale: 1, Faults: AllFaults()}
	a, b := makePlan(cfg), makePlan(cfg)
	require.Equal(t, a, b, "one seed, one plan")
	cfg.Seed = 6
	require.NotEqual(t, a.signals, makePlan(cfg).signals)

	// A shorter run with the same seed is a prefix of the longer one.
	cfg.Seed, cfg.Duration = 5, 20*time.Second
	short := makePlan(cfg)
	require.Equal(t, a.signals[:len(short.signals)], short.signals)
	require.Equal(t, a.skews, short.skews)
}

func ptr(s string) *string { return &s }

func TestChecker503NothingPlacedMustBeTrue(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, binanceSignal(ModeKey))
	unavailable := answer{Status: 503, Code: "unavailable", Replica: 1, Done: 1500 * time.Millisecond,
		Body: `{"detail":"venue binance is unreachable; nothing was placed","code":"unavailable"}`}
	b.send(0, time.Second, unavailable)
	st := b.s.sigState[0]
	st.spans = []span{{Replica: 1, Start: time.Second, End: 1500 * time.Millisecond}}
	require.Empty(t, b.judge(), "no acceptance: the 503 told the truth")

	st.accepted = []acceptance{{At: 1200 * time.Millisecond, Replica: 1}}
	b.order(0, "hxa", "1", true)
	require.Equal(t, map[string]int{check503: 1}, b.judge())

	// Another send of the signal in flight on that replica could have
	// placed it: inconclusive, not a failure.
	st.spans = append(st.spans, span{Replica: 1, Start: 500 * time.Millisecond})
	require.Empty(t, b.judge())
}

func futuresSignalWithExits() signalPlan {
	return signalPlan{Venue: venue{"binance-futures", "binance"}, Symbol: symbol, Side: "buy", Quantity: "10", Mode: ModeKey,
		Exits: []string{"take_profit", "stop_loss"}}
}

// exit books entry's n-th exit at the venue, recorded by hoox unless
// unrecorded.
func (b *checkBundle) exit(entry string, n int, eid string, recorded bool) {
	o := venueOrder{Exchange: "binance-futures", ClientOrderID: signal.LegClientOrderID(entry, n), ExchangeOrderID: eid,
		Symbol: symbol, Side: "sell", Quantity: "10", Status: "NEW", Exit: []string{"take_profit", "stop_loss", "trailing_stop"}[n-1]}
	b.vos = append(b.vos, o)
	if recorded {
		b.hos[o.ClientOrderID] = hooxOrder{TraceID: "k:x", ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Symbol: o.Symbol,
			Side: o.Side, Quantity: o.Quantity, Status: "open", ExchangeOrderID: eid}
	}
}

func TestCheckerPassesAnEntryWithItsExitsOnce(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignalWithExits())
	b.send(0, time.Second, placed("hxa"))
	b.order(0, "hxa", "1", true)
	b.exit("hxa", 1, "2", true)
	b.exit("hxa", 2, "3", true)
	require.Empty(t, b.judge())
}

func TestCheckerCatchesASecondExitUnderItsClientID(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignalWithExits())
	b.send(0, time.Second, placed("hxa"))
	b.order(0, "hxa", "1", true)
	b.exit("hxa", 1, "2", true)
	b.exit("hxa", 1, "4", false) // placed again after a cancel freed the ID
	b.exit("hxa", 2, "3", true)
	require.Equal(t, map[string]int{checkExitOnce: 1, checkRecorded: 1}, b.judge())
}

func TestCheckerCatchesAnExitNoEntryPlanned(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignalWithExits())
	b.send(0, time.Second, placed("hxa"))
	b.order(0, "hxa", "1", true)
	b.exit("hxa", 1, "2", true)
	b.exit("hxa", 2, "3", true)
	b.exit("hxa", 3, "4", true) // a trailing stop the signal never asked for
	require.Equal(t, map[string]int{checkExitAttributed: 1}, b.judge())
}

func TestCheckerCatchesAnExitNeverPlaced(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignalWithExits())
	b.send(0, time.Second, placed("hxa"))
	b.order(0, "hxa", "1", true)
	b.exit("hxa", 1, "2", true)
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge())

	// A leg hoox recorded as refused is not silent, but still not placed.
	b.s.legs = map[string]string{signal.LegClientOrderID("hxa", 2): "rejected (sent 1 times)"}
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge())
}

func TestCheckerJudgesASpotEntrysOCOListByWhatTheEntryReceived(t *testing.T) {
	t.Parallel()
	sp := binanceSignal(ModeKey)
	sp.Exits = []string{"take_profit", "stop_loss"}
	b := setupCheck(t, sp)
	b.send(0, time.Second, placed("hxa"))
	b.order(0, "hxa", "1", true)
	list := venueOrder{Exchange: "binance", ClientOrderID: signal.LegClientOrderID("hxa", 1), ExchangeOrderID: "7",
		Symbol: symbol, Side: "sell", Quantity: "9", Status: "EXECUTING", Exit: "oco"}
	b.vos = append(b.vos, list)
	b.hos[list.ClientOrderID] = hooxOrder{TraceID: "k:x", ClientOrderID: list.ClientOrderID, Exchange: "binance", Symbol: symbol,
		Side: "sell", Quantity: "9", Status: "open", ExchangeOrderID: "7"}
	require.Empty(t, b.judge(), "the list sells what the entry received, net of the commission")

	b.vos[len(b.vos)-1].Quantity = "11"
	b.hos[list.ClientOrderID] = hooxOrder{TraceID: "k:x", ClientOrderID: list.ClientOrderID, Exchange: "binance", Symbol: symbol,
		Side: "sell", Quantity: "11", Status: "open", ExchangeOrderID: "7"}
	require.Equal(t, map[string]int{checkExitAttributed: 1, checkExitPlaced: 1}, b.judge(), "a list selling more than the entry bought")
}

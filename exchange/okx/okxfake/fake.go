// Package okxfake is an in-process fake of OKX's v5 REST API, enough for
// hoox's okx adapter: server time, instruments, place and query orders,
// positions, balances, leverage, and trailing stops as algo orders
// (algo.go). It enforces the rules hoox relies on, as OKX documents them
// (docs/venues/okx.md): the signature and passphrase, a timestamp within
// 30 s of its clock, expTime (an order processed after it is refused with
// 50037 and not booked), clOrdId's form and its uniqueness among pending
// orders only (a filled order's clOrdId may be used again), lot size, tick
// size, minimum size and maxMktSz (market orders), balances on spot and
// reduce-only against the net position on swaps. Faults inject what a real
// venue does to an answer.
package okxfake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/shopspring/decimal"
)

// Default credentials the fake accepts when Options leaves them empty.
const (
	DefaultAPIKey     = "fake-okx-key"
	DefaultAPISecret  = "fake-okx-secret"
	DefaultPassphrase = "fake-okx-passphrase"
)

// The instrument types the fake serves, as OKX names them.
const (
	InstSpot = "SPOT"
	InstSwap = "SWAP"
)

// TimestampTolerance is how far OK-ACCESS-TIMESTAMP may be from the fake's
// clock before it answers 50102 "Timestamp request expired".
const TimestampTolerance = 30 * time.Second

// Instrument is one instrument with the rules /api/v5/account/instruments
// reports for it.
type Instrument struct {
	InstType, InstID, BaseCcy, QuoteCcy, SettleCcy string
	// CtVal is the contract value in the base currency (swaps).
	CtVal                decimal.Decimal
	TickSz, LotSz, MinSz decimal.Decimal
	// MaxMktSz is the largest sz of one market order (contracts on a
	// swap; zero: none), Get_Instruments.md: "Max order quantity of a
	// single market order".
	MaxMktSz decimal.Decimal
	// Lever is the swap's maximum leverage (Get_Instruments.md, lever;
	// zero: 125). A set-leverage above it is refused with 59102.
	Lever int
	State string // live unless set
}

// DefaultInstruments are BTC-USDT and ETH-USDT spot and their USDT swaps;
// the swaps take market orders of up to 100000 contracts (1000 BTC,
// 10000 ETH).
func DefaultInstruments() []Instrument {
	d := decimal.RequireFromString
	return []Instrument{
		{InstType: InstSpot, InstID: "BTC-USDT", BaseCcy: "BTC", QuoteCcy: "USDT", TickSz: d("0.1"), LotSz: d("0.00000001"), MinSz: d("0.00001")},
		{InstType: InstSpot, InstID: "ETH-USDT", BaseCcy: "ETH", QuoteCcy: "USDT", TickSz: d("0.01"), LotSz: d("0.000001"), MinSz: d("0.0001")},
		{InstType: InstSwap, InstID: "BTC-USDT-SWAP", SettleCcy: "USDT", CtVal: d("0.01"), TickSz: d("0.1"), LotSz: d("0.01"), MinSz: d("0.01"), MaxMktSz: d("100000")},
		{InstType: InstSwap, InstID: "ETH-USDT-SWAP", SettleCcy: "USDT", CtVal: d("0.1"), TickSz: d("0.01"), LotSz: d("0.01"), MinSz: d("0.01"), MaxMktSz: d("100000")},
	}
}

// Options configures a Server.
type Options struct {
	APIKey, APISecret, Passphrase string
	// Now is the fake's clock; time.Now when nil.
	Now func() time.Time
	// Instruments are served; DefaultInstruments when empty.
	Instruments []Instrument
}

// Order is one order in the fake's book.
type Order struct {
	InstType, InstID, OrdID, ClOrdID string
	Side                             string // buy or sell
	OrdType                          string // market or limit
	// Sz is the size as sent: contracts on a swap.
	Sz, Px, AccFillSz, AvgPx decimal.Decimal
	// Fee is what spot charged once SetSpotFeeRate set a rate, as OKX
	// reports it: negative, in FeeCcy, the currency the order received.
	Fee              decimal.Decimal
	FeeCcy           string
	State            string // live, partially_filled, filled, canceled
	ReduceOnly       bool
	CTime, VisibleAt time.Time
	// CancelAt is when a cancel OKX accepted takes effect (DelayCancels;
	// zero: none under way). Until then the order stays pending, and
	// another cancel of it is refused with 51410.
	CancelAt time.Time
	// TpTriggerPx and SlTriggerPx are the take-profit and stop-loss
	// attached to the order (attachAlgoOrds; zero: none), TpOrdPx and
	// SlOrdPx their order prices (-1: market).
	TpTriggerPx, TpOrdPx, SlTriggerPx, SlOrdPx decimal.Decimal
	// AttachAlgoClOrdID is the attached TP/SL's attachAlgoClOrdId: "It
	// will be posted to algoClOrdId when placing the attached algo order
	// once the general order is filled completely" (Post_Place_Order.md).
	AttachAlgoClOrdID string
}

// Pending reports whether the order still holds its clOrdId.
func (o Order) Pending() bool { return o.State == "live" || o.State == "partially_filled" }

// FaultKind is one way a real OKX fails an order placement.
type FaultKind int

// The faults the fake injects into POST /api/v5/trade/order.
const (
	// FaultServerErrorAfterAccept books the order, then answers HTTP 502
	// with an HTML body, as a proxy in front of OKX does.
	FaultServerErrorAfterAccept FaultKind = iota + 1
	// FaultHangAfterAccept books the order and answers nothing until the
	// client gives up.
	FaultHangAfterAccept
	// FaultDropAfterAccept books the order and closes the connection.
	FaultDropAfterAccept
	// FaultRefuse refuses the order with Fault.Code and Fault.Msg as its
	// sCode (envelope code 1) before booking anything.
	FaultRefuse
	// FaultLateInEngine answers 50004 ("API endpoint request timeout ...
	// does not mean that the request was successful or failed") at once
	// and hands the order to the engine Fault.Delay later on the fake's
	// clock, where expTime is checked: past it, the order is refused
	// (50037) and never booked.
	FaultLateInEngine
)

// Fault is a fault for the next placement.
type Fault struct {
	Kind  FaultKind
	Code  int
	Msg   string
	Delay time.Duration
}

type lateOrder struct {
	body    []byte
	expTime time.Time
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the adapter.
	URL string

	closeFn func()
	done    chan struct{}
	clock   *venuefake.Clock

	mu                            sync.Mutex
	apiKey, apiSecret, passphrase string
	instruments                   map[string]Instrument // by instId
	prices                        map[string]decimal.Decimal
	balances                      map[string]decimal.Decimal
	positions                     map[string]decimal.Decimal // contracts, signed, by instId
	leverage                      map[string]int
	leverageSets                  map[string]int
	refuseLeverage                bool
	longShort                     bool // posMode long_short_mode (hedge)
	orders                        []*Order
	nextID                        int64
	faults                        []Fault
	nextLag                       *time.Duration
	late                          venuefake.Late[lateOrder]
	requests                      map[string]int
	spotFeeRate                   *decimal.Decimal
	algos                         []*AlgoOrder
	callbackRange                 *CallbackRange
	loseAlgo                      int
	timeoutAlgo                   int
	// maxReduceOnly caps live reduce-only algo orders per instrument
	// (reduceonlycap.go); 0 caps nothing.
	maxReduceOnly  int
	algoPlacements int
	// orderRate is the place-order rate limit per instrument
	// (ratelimit.go); orderTimes the placements counted against it.
	orderRate  int
	orderTimes map[string][]time.Time
	placements int
	// cancelDelay is how long an accepted cancel takes (DelayCancels).
	cancelDelay time.Duration
}

// New starts a fake on a loopback port that closes at the end of the test
// (tb may be nil).
func New(tb testing.TB, opts Options) *Server {
	s := newServer(opts)
	ts := httptest.NewServer(s.handler())
	s.URL, s.closeFn = ts.URL, ts.Close
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Start serves a fake on addr (e.g. "127.0.0.1:0") for a CLI such as `hoox
// dev`; Close stops it.
func Start(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("okxfake: listen on %s: %w", addr, err)
	}
	s := newServer(opts)
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	s.URL = "http://" + ln.Addr().String()
	s.closeFn = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = hs.Close()
	}
	return s, nil
}

func newServer(opts Options) *Server {
	s := &Server{
		done: make(chan struct{}), clock: venuefake.NewClock(opts.Now),
		apiKey: opts.APIKey, apiSecret: opts.APISecret, passphrase: opts.Passphrase,
		instruments: map[string]Instrument{}, prices: map[string]decimal.Decimal{}, balances: map[string]decimal.Decimal{},
		positions: map[string]decimal.Decimal{}, leverage: map[string]int{}, leverageSets: map[string]int{}, requests: map[string]int{},
	}
	if s.apiKey == "" {
		s.apiKey = DefaultAPIKey
	}
	if s.apiSecret == "" {
		s.apiSecret = DefaultAPISecret
	}
	if s.passphrase == "" {
		s.passphrase = DefaultPassphrase
	}
	ins := opts.Instruments
	if len(ins) == 0 {
		ins = DefaultInstruments()
	}
	for _, in := range ins {
		if in.State == "" {
			in.State = "live"
		}
		s.instruments[in.InstID] = in
	}
	s.prices["BTCUSDT"] = decimal.NewFromInt(60000)
	s.prices["ETHUSDT"] = decimal.NewFromInt(3000)
	s.balances["USDT"] = decimal.NewFromInt(1_000_000)
	s.balances["BTC"] = decimal.NewFromInt(10)
	s.balances["ETH"] = decimal.NewFromInt(100)
	return s
}

// Close stops the fake; it may be called twice.
func (s *Server) Close() {
	s.mu.Lock()
	fn := s.closeFn
	s.closeFn = nil
	s.mu.Unlock()
	if fn != nil {
		close(s.done)
		fn()
	}
}

// Now is the fake's clock.
func (s *Server) Now() time.Time { return s.clock.Now() }

func (s *Server) now() time.Time { return s.clock.Now() }

// Advance moves the fake's clock forward.
func (s *Server) Advance(d time.Duration) { s.clock.Advance(d) }

// APIKey is the key the fake accepts.
func (s *Server) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiKey
}

// APISecret is the secret the fake accepts.
func (s *Server) APISecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiSecret
}

// Passphrase is the key's passphrase the fake accepts.
func (s *Server) Passphrase() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passphrase
}

// SetCredentials replaces the only key the fake accepts, as when a key is
// deleted or rotated at OKX.
func (s *Server) SetCredentials(key, secret, passphrase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey, s.apiSecret, s.passphrase = key, secret, passphrase
}

// SetSymbol adds or replaces an instrument; its rules change at once.
func (s *Server) SetSymbol(in Instrument) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.State == "" {
		in.State = "live"
	}
	s.instruments[in.InstID] = in
}

// SetPrice sets the last price of a pair (BTCUSDT: BTC-USDT and
// BTC-USDT-SWAP alike); market orders fill there.
func (s *Server) SetPrice(symbol string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prices[symbol] = price
}

// SetBalance sets the available balance of ccy in the trading account.
func (s *Server) SetBalance(ccy string, amount decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances[ccy] = amount
}

// SetSpotFeeRate charges rate (0.001 for 0.1 %; zero for none) on every
// spot fill from now on, out of the currency the order received (the base
// currency of a buy, the quote of a sell), reported as the order's fee
// (negative: "for spot, accumulated fee charged by the platform, always
// negative") and feeCcy, as GET /api/v5/trade/order does. Until it is
// called the fake reports SpotFeeRate on the order but moves the balances
// by the gross amounts.
func (s *Server) SetSpotFeeRate(rate decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotFeeRate = &rate
}

// Balance is the available balance of ccy.
func (s *Server) Balance(ccy string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balances[ccy]
}

// SetPosition sets the net position of a swap in contracts (short < 0).
func (s *Server) SetPosition(instID string, contracts decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.positions[instID] = contracts
}

// Position is the net position of a swap in contracts.
func (s *Server) Position(instID string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.positions[instID]
}

// Leverage is the cross leverage last set on a swap (0 if never).
func (s *Server) Leverage(instID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leverage[instID]
}

// SetLeverage changes a swap's leverage without a request, as a manual
// change in OKX's app or another hoox replica would.
func (s *Server) SetLeverage(instID string, lever int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leverage[instID] = lever
}

// LeverageSets counts set-leverage requests for instID.
func (s *Server) LeverageSets(instID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leverageSets[instID]
}

// RefuseLeverage makes every set-leverage fail with 59107, or succeed
// again with false.
func (s *Server) RefuseLeverage(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseLeverage = refuse
}

// SetLongShortMode sets the account's posMode: long_short_mode (hedge: a
// swap order without posSide long/short is refused with 51000) or
// net_mode.
func (s *Server) SetLongShortMode(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.longShort = on
}

// Inject queues f for the next placement that has none.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// LagNextLookup hides the next order booked from order queries until the
// fake's clock has moved d past its placement.
func (s *Server) LagNextLookup(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextLag = &d
}

// Orders are the orders booked, oldest first.
func (s *Server) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	out := make([]Order, len(s.orders))
	for i, o := range s.orders {
		out[i] = *o
	}
	return out
}

// PendingInEngine is how many late orders have not reached the engine.
func (s *Server) PendingInEngine() int { return s.afterEngine(s.late.Pending) }

// LateRefused is how many late orders the engine refused for expTime.
func (s *Server) LateRefused() int { return s.afterEngine(s.late.Refused) }

// Requests is how many requests path received.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// ErrNoOrder is returned for a clOrdId the fake does not hold.
var ErrNoOrder = errors.New("okxfake: no such order")

// FillOrder fills a live order at its price.
func (s *Server) FillOrder(clOrdID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clOrdID)
	if o == nil || !o.Pending() {
		return ErrNoOrder
	}
	s.fill(o, o.Px)
	return nil
}

// CancelOrder cancels a pending order.
func (s *Server) CancelOrder(clOrdID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clOrdID)
	if o == nil || !o.Pending() {
		return ErrNoOrder
	}
	o.State = "canceled"
	return nil
}

// latest is the newest order under clOrdID; callers hold mu.
func (s *Server) latest(clOrdID string) *Order {
	for i := len(s.orders) - 1; i >= 0; i-- {
		if s.orders[i].ClOrdID == clOrdID {
			return s.orders[i]
		}
	}
	return nil
}

// afterEngine is count once every late placement due by now has reached
// the engine.
func (s *Server) afterEngine(count func() int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	return count()
}

// Package bybitfake is an in-process fake of the Bybit v5 REST API, serving
// category linear (USDT perpetuals) and category spot over httptest. It is
// what the bybit adapter is tested against, and what other packages' tests
// (and `hoox dev`) can point a bybit venue at.
//
// It is a fake, not a mock: it verifies each private request's HMAC
// signature and timestamp window against its own clock (a skewed client gets
// retCode 10002), serves server time, instruments-info filters, tickers,
// positions and wallet balances, keeps an order book, refuses a reused
// orderLinkId the way Bybit documents it (see below), enforces the lot-size,
// tick and notional filters with Bybit's own retCodes and messages, fills
// market orders at the ticker's last price and moves positions and balances
// accordingly. A linear position holds a trailing stop set through
// /v5/position/trading-stop (PathTradingStop), listed with the position
// and dropped when it closes.
//
// Uniqueness: Bybit's create-order page says a Perps/Futures/Spot
// orderLinkId is "always unique" — not "unique among open orders". The fake
// therefore refuses an orderLinkId that any order it ever accepted in the
// same category carried, whatever that order's status (linear: 110072
// "OrderLinkedID is duplicate"; spot: 170141 "Duplicate clientOrderId"). A
// request Bybit refused with a retCode created no order, so it does not take
// the ID.
//
// Faults: a test can make the next N calls of a path fail before the request
// is accepted (429, 403, a retCode) or after the order is booked (HTTP 5xx, a
// bare 4xx such as a gateway's 408, a server-error retCode, a dropped
// connection, a hang until the client gives up), book an order long after
// its recv_window unless its orderLinkId was taken by then (LateInEngine),
// use up an endpoint's rate limit on a successful answer (ExhaustLimit),
// make the next N placements invisible to lookups for a while, change the
// credentials it accepts, skew its clock, and make an endpoint slow
// (SetLatency, on Options.Sleep). RequestLog records each request's
// X-BAPI-TIMESTAMP, so a test can see when the adapter stamped an order.
package bybitfake

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/shopspring/decimal"
)

// Credentials the fake accepts unless Options say otherwise; `hoox dev` can
// configure a bybit venue with them.
const (
	DefaultAPIKey    = "bybitfake-key"
	DefaultAPISecret = "bybitfake-secret"
)

// Categories the fake serves.
const (
	CategoryLinear = "linear"
	CategorySpot   = "spot"
)

// Paths of the endpoints the fake serves, for Inject and Requests.
const (
	PathTime        = "/v5/market/time"
	PathInstruments = "/v5/market/instruments-info"
	PathTickers     = "/v5/market/tickers"
	PathCreate      = "/v5/order/create"
	PathRealtime    = "/v5/order/realtime"
	PathHistory     = "/v5/order/history"
	PathPositions   = "/v5/position/list"
	PathLeverage    = "/v5/position/set-leverage"
	PathWallet      = "/v5/account/wallet-balance"
)

// Options configure a Server.
type Options struct {
	// APIKey and APISecret are the credentials the fake accepts; the
	// Default constants when empty.
	APIKey    string
	APISecret string
	// Now is the fake's clock (before any SetClockSkew); time.Now when nil.
	// Tests share one controllable clock between the fake and the adapter.
	Now func() time.Time
	// Empty starts the fake without the default instruments, tickers and
	// balances (see SeedDefaults).
	Empty bool
	// Sleep is how the fake lets time pass for SetLatency and
	// SetMatchingDelay; time.Sleep when nil. Tests that share a clock with
	// the adapter pass that clock's Advance, so a slow endpoint costs no
	// real time.
	Sleep func(time.Duration)
}

// Request is one request as the fake received it.
type Request struct {
	Method string
	Path   string
	// At is the fake's clock when the request arrived.
	At time.Time
	// Timestamp is X-BAPI-TIMESTAMP, zero for a request without one (a
	// public endpoint).
	Timestamp time.Time
	// RecvWindow is X-BAPI-RECV-WINDOW; zero when absent.
	RecvWindow time.Duration
}

// Instrument is one symbol's trading rules, as instruments-info reports them.
type Instrument struct {
	Symbol    string
	BaseCoin  string
	QuoteCoin string
	// TickSize is priceFilter.tickSize.
	TickSize decimal.Decimal
	// QtyStep is lotSizeFilter.qtyStep (linear) or basePrecision (spot).
	QtyStep decimal.Decimal
	// MinOrderQty is lotSizeFilter.minOrderQty. Bybit no longer checks it
	// for spot (minOrderAmt instead); the fake checks it for linear only.
	MinOrderQty decimal.Decimal
	// MinNotional is lotSizeFilter.minNotionalValue (linear) or minOrderAmt
	// (spot), in the quote coin.
	MinNotional decimal.Decimal
	// MaxLeverage is leverageFilter.maxLeverage (linear); 100 when zero.
	MaxLeverage int
	// MaxMktOrderQty is lotSizeFilter.maxMktOrderQty (linear) or
	// maxMarketOrderQty (spot): the most a Market order may carry, in the
	// base coin; 100000 when zero.
	MaxMktOrderQty decimal.Decimal
	// Status is the instrument's status ("" reads as Trading): linear
	// PreLaunch, Trading, Delivering or Closed. instruments-info "By
	// default returns only Trading symbols", and "Spot has Trading only"
	// (market/instrument.mdx, request parameter status): a spot pair that
	// is not Trading is never listed. Orders are refused on a symbol that
	// is not Trading.
	Status string
}

// status is in.Status, Trading when unset.
func (in Instrument) status() string {
	if in.Status == "" {
		return "Trading"
	}
	return in.Status
}

// Position is a linear position in one-way mode.
type Position struct {
	// Side is "Buy" (long), "Sell" (short) or "" when flat.
	Side string
	// Size is always positive, zero when flat.
	Size decimal.Decimal
	// TrailingStop is the position's trailing stop distance (zero: none),
	// set by POST /v5/position/trading-stop and dropped when the position
	// closes.
	TrailingStop decimal.Decimal
}

// Balance is one coin in the unified account.
type Balance struct {
	// WalletBalance is what the account holds, including what open orders
	// lock.
	WalletBalance decimal.Decimal
	// Locked is held by open spot orders.
	Locked decimal.Decimal
}

// Order is one order in the fake's book.
type Order struct {
	Category    string
	Symbol      string
	OrderID     string
	OrderLinkID string
	Side        string // Buy or Sell
	OrderType   string // Market or Limit
	Qty         decimal.Decimal
	// Price is the limit price; zero for a market order.
	Price       decimal.Decimal
	TimeInForce string
	ReduceOnly  bool
	MarketUnit  string
	// Status is Bybit's orderStatus: New, PartiallyFilled, Filled,
	// Cancelled, Rejected, PartiallyFilledCanceled, …
	Status     string
	CumExecQty decimal.Decimal
	AvgPrice   decimal.Decimal
	// CumExecFee is the spot fee charged so far (SetSpotFeeRate): in the
	// base coin for a buy, the quote coin for a sell; cumFeeDetail then
	// reports it.
	CumExecFee   decimal.Decimal
	RejectReason string
	CreatedAt    time.Time
	// VisibleAt is when lookups start to see the order (placement time
	// unless LagLookups delayed it).
	VisibleAt time.Time
	// HiddenFor is how many more realtime or history answers that would
	// list the order leave it out (HideFromQueries).
	HiddenFor int
	// TakeProfit and StopLoss are the trigger prices set on the order
	// (zero: none), with their tpslMode and trigger price types.
	TakeProfit, StopLoss               decimal.Decimal
	TpslMode, TpTriggerBy, SlTriggerBy string
}

// Fault is a failure the fake answers a request with instead of its normal
// answer. With AfterAccept (placements only) the order is booked first, so
// it exists although the client never learns it; otherwise nothing happens.
type Fault struct {
	// AfterAccept books the order before failing.
	AfterAccept bool
	// Drop closes the connection without writing an answer.
	Drop bool
	// Hang holds the request until the client gives up.
	Hang bool
	// HTTPStatus is the answer's status; 200 when zero and RetCode is set.
	HTTPStatus int
	// RetCode and RetMsg make the answer a Bybit JSON error envelope; a
	// plain-text body when RetCode is zero.
	RetCode int
	RetMsg  string
	// RetryAfter sets the Retry-After header (whole seconds, at least 1)
	// and X-Bapi-Limit-Reset-Timestamp to now+RetryAfter, with
	// X-Bapi-Limit-Status 0.
	RetryAfter time.Duration
	// Late (placements only) takes the request through authentication,
	// answers with the fault's status and retCode at once, and books the
	// order Late later on the fake's clock, whatever its recv_window, as
	// an asynchronous backend that processes it late would: only the
	// orderLinkId rule of that moment can refuse it then (see
	// LateInEngine).
	Late time.Duration
}

// ServerErrorAfterAccept books the order and answers HTTP 500: the client
// cannot know the order exists.
func ServerErrorAfterAccept() Fault {
	return Fault{AfterAccept: true, HTTPStatus: http.StatusInternalServerError}
}

// RetCodeAfterAccept books the order and answers with a server-error retCode
// (10016 "Server error.").
func RetCodeAfterAccept() Fault {
	return Fault{AfterAccept: true, RetCode: 10016, RetMsg: "Server error."}
}

// DropAfterAccept books the order and closes the connection unanswered.
func DropAfterAccept() Fault {
	return Fault{AfterAccept: true, Drop: true}
}

// HangAfterAccept books the order and answers nothing until the client
// gives up (its timeout or cancellation).
func HangAfterAccept() Fault {
	return Fault{AfterAccept: true, Hang: true}
}

// StatusAfterAccept books the order and answers the HTTP status with a
// plain-text body and no Bybit envelope, as a gateway or proxy in front of
// Bybit does when it gives up on the answer (e.g. 408) or fails in its
// own way (400, 409): the order exists, the client cannot know.
func StatusAfterAccept(status int) Fault {
	return Fault{AfterAccept: true, HTTPStatus: status}
}

// LateInEngine answers retCode 10016 "Server error." once the request has
// passed authentication, and books the order delay later on the fake's
// clock, after its recv_window has ended. Bybit's docs do not say its
// backend refuses a request it reaches after timestamp + recv_window
// (only that the gateway checks the window on receipt, guide.mdx), so the
// fake assumes the worst: the order is booked then unless its orderLinkId
// has been taken in the meantime (create-order.mdx: "always unique"), in
// which case it is refused as a duplicate and nothing is booked.
func LateInEngine(delay time.Duration) Fault {
	return Fault{RetCode: 10016, RetMsg: "Server error.", Late: delay}
}

// TooManyRequests answers HTTP 429 before accepting anything.
func TooManyRequests(retryAfter time.Duration) Fault {
	return Fault{HTTPStatus: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// TooManyVisits answers retCode 10006 "Too many visits!" before accepting
// anything, with the limit's reset time in X-Bapi-Limit-Reset-Timestamp.
func TooManyVisits(resetAfter time.Duration) Fault {
	return Fault{RetCode: 10006, RetMsg: "Too many visits!", RetryAfter: resetAfter}
}

// Refuse answers the given retCode before accepting anything (e.g. 110007
// "Available balance is insufficient").
func Refuse(code int, msg string) Fault {
	return Fault{RetCode: code, RetMsg: msg}
}

type injected struct {
	left  int
	fault Fault
}

type orderKey struct{ category, linkID string }

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to configure the adapter with.
	URL string

	closeFn func()
	done    chan struct{}

	mu          sync.Mutex
	now         func() time.Time
	skew        time.Duration
	keys        *venuefake.Keys
	readOnly    bool
	ipBlocked   bool
	instruments map[string]map[string]Instrument
	tickers     map[string]map[string]decimal.Decimal
	positions   map[string]Position
	balances    map[string]Balance
	leverage    map[string]decimal.Decimal
	leverageSet map[string]int
	// trailingSet counts trading-stop requests that changed a symbol's
	// trailing stop.
	trailingSet map[string]int
	// refuseLeverage makes every set-leverage fail with 110013.
	refuseLeverage bool
	// maxPartialTPSL caps Partial take-profits/stop-losses per linear
	// symbol (tpslcap.go); 0 caps nothing.
	maxPartialTPSL int
	// hedge is the linear account's position mode (both sides).
	hedge       bool
	orders      map[orderKey]*Order
	book        []*Order
	nextID      int
	faults      map[string][]*injected
	lag         time.Duration
	lagLeft     int
	hideLeft    int
	hideFor     int
	requests    map[string]int
	log         []Request
	sleep       func(time.Duration)
	latency     map[string]time.Duration
	engineDelay time.Duration
	attempts    map[string]int
	forgetReal  bool
	liquidity   map[orderKey]decimal.Decimal // category, symbol
	// spotFeeRate, once SetSpotFeeRate set it, is the spot fee rate, taken
	// out of the balances and reported as charged; nil reports SpotFeeRate
	// in cumFeeDetail without moving the balances.
	spotFeeRate *decimal.Decimal
	// exhaustNext and limitReset are ExhaustLimit's state: the next
	// successful answer's reset delay, and until when a path refuses.
	exhaustNext map[string]time.Duration
	limitReset  map[string]usedUp
	// late holds LateInEngine create bodies until their time.
	late venuefake.Late[[]byte]
}

// runLate books every late placement whose time has come; s.mu is held.
func (s *Server) runLate() {
	s.late.Run(s.clock(), func(body []byte, _ time.Time) bool {
		return s.serveCreate(nil, body).retCode == 0
	})
}

// LateRefused counts LateInEngine placements refused when the backend
// reached them (their orderLinkId was taken by then, or a filter or the
// balance refused them): nothing was booked for them.
func (s *Server) LateRefused() int { return s.afterEngine(s.late.Refused) }

// PendingLate counts LateInEngine placements not yet processed on the
// fake's clock.
func (s *Server) PendingLate() int { return s.afterEngine(s.late.Pending) }

// usedUp is an endpoint whose rate limit ExhaustLimit used up.
type usedUp struct {
	until time.Time
	limit int
}

// New starts a fake on a loopback port. When tb is not nil the fake closes
// itself at the end of the test.
func New(tb testing.TB, opts Options) *Server {
	s := newServer(opts)
	ts := httptest.NewServer(s.handler())
	s.URL = ts.URL
	s.closeFn = ts.Close
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Start serves a fake on addr (e.g. "127.0.0.1:0") for a CLI such as
// `hoox dev`; Close stops it.
func Start(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bybitfake: listen on %s: %w", addr, err)
	}
	s := newServer(opts)
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	s.URL = "http://" + ln.Addr().String()
	s.closeFn = func() { _ = hs.Close() }
	return s, nil
}

// Close stops the fake and drops its connections. It may be called twice.
func (s *Server) Close() {
	s.mu.Lock()
	fn := s.closeFn
	s.closeFn = nil
	s.mu.Unlock()
	if fn != nil {
		close(s.done) // releases hanging requests, which Close waits for
		fn()
	}
}

func newServer(opts Options) *Server {
	s := &Server{
		now:         opts.Now,
		done:        make(chan struct{}),
		keys:        venuefake.NewKeys(opts.APIKey, opts.APISecret, DefaultAPIKey, DefaultAPISecret),
		instruments: map[string]map[string]Instrument{CategoryLinear: {}, CategorySpot: {}},
		tickers:     map[string]map[string]decimal.Decimal{CategoryLinear: {}, CategorySpot: {}},
		positions:   map[string]Position{},
		trailingSet: map[string]int{},
		balances:    map[string]Balance{},
		leverage:    map[string]decimal.Decimal{},
		leverageSet: map[string]int{},
		orders:      map[orderKey]*Order{},
		faults:      map[string][]*injected{},
		requests:    map[string]int{},
		sleep:       opts.Sleep,
		latency:     map[string]time.Duration{},
		attempts:    map[string]int{},
		exhaustNext: map[string]time.Duration{},
		limitReset:  map[string]usedUp{},
		liquidity:   map[orderKey]decimal.Decimal{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = time.Sleep
	}
	if !opts.Empty {
		s.SeedDefaults()
	}
	return s
}

// SeedDefaults loads BTCUSDT and ETHUSDT with Bybit's published filters in
// both categories, tickers at 60000 and 3000, and a unified account holding
// 100000 USDT. New calls it unless Options.Empty.
func (s *Server) SeedDefaults() {
	d := decimal.RequireFromString
	s.SetInstrument(CategoryLinear, Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
		TickSize: d("0.10"), QtyStep: d("0.001"), MinOrderQty: d("0.001"), MinNotional: d("5"), MaxLeverage: 100})
	s.SetInstrument(CategoryLinear, Instrument{Symbol: "ETHUSDT", BaseCoin: "ETH", QuoteCoin: "USDT",
		TickSize: d("0.01"), QtyStep: d("0.01"), MinOrderQty: d("0.01"), MinNotional: d("5"), MaxLeverage: 100})
	s.SetInstrument(CategorySpot, Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
		TickSize: d("0.1"), QtyStep: d("0.000001"), MinOrderQty: d("0.000011"), MinNotional: d("5")})
	s.SetInstrument(CategorySpot, Instrument{Symbol: "ETHUSDT", BaseCoin: "ETH", QuoteCoin: "USDT",
		TickSize: d("0.01"), QtyStep: d("0.00001"), MinOrderQty: d("0.00062"), MinNotional: d("5")})
	for _, c := range []string{CategoryLinear, CategorySpot} {
		s.SetTicker(c, "BTCUSDT", d("60000"))
		s.SetTicker(c, "ETHUSDT", d("3000"))
	}
	s.SetBalance("USDT", d("100000"))
}

// Now is the fake's clock, skew included.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock()
}

func (s *Server) clock() time.Time { return s.now().Add(s.skew) }

// SetClockSkew moves the fake's clock by d relative to Options.Now: a client
// whose offset was measured before now sends timestamps off by d.
func (s *Server) SetClockSkew(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew = d
}

// APIKey is the key the fake accepts (DefaultAPIKey unless replaced).
func (s *Server) APIKey() string {
	key, _ := s.keys.Get()
	return key
}

// APISecret is the secret the fake accepts.
func (s *Server) APISecret() string {
	_, secret := s.keys.Get()
	return secret
}

// SetCredentials replaces the key and secret the fake accepts.
func (s *Server) SetCredentials(key, secret string) { s.keys.Set(key, secret) }

// SetReadOnly makes the key read-only: trading endpoints answer 10005
// "Permission denied".
func (s *Server) SetReadOnly(readOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly = readOnly
}

// SetIPBlocked makes every private request come from an IP the key is not
// bound to: 10010 "Unmatched IP".
func (s *Server) SetIPBlocked(blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ipBlocked = blocked
}

// SetInstrument adds or replaces a symbol's rules in a category.
func (s *Server) SetInstrument(category string, in Instrument) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.MaxLeverage == 0 {
		in.MaxLeverage = 100
	}
	s.instruments[category][in.Symbol] = in
}

// RemoveInstrument delists a symbol from a category.
func (s *Server) RemoveInstrument(category, symbol string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instruments[category], symbol)
}

// SetPrice sets a symbol's last (and mark) price in category: market
// orders fill there. It is SetTicker under the name every fake uses.
func (s *Server) SetPrice(category, symbol string, price decimal.Decimal) {
	s.SetTicker(category, symbol, price)
}

// SetSymbol adds or replaces an instrument in category; it is
// SetInstrument under the name every fake uses.
func (s *Server) SetSymbol(category string, in Instrument) { s.SetInstrument(category, in) }

// SetTicker sets a symbol's last (and mark) price: market orders fill there.
func (s *Server) SetTicker(category, symbol string, last decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tickers[category][symbol] = last
}

// SetPosition sets the linear position of symbol (side "Buy", "Sell", or ""
// with a zero size for flat).
func (s *Server) SetPosition(symbol, side string, size decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if size.IsZero() {
		side = ""
	}
	s.positions[symbol] = keepTrailing(s.positions[symbol], Position{Side: side, Size: size})
}

// keepTrailing carries the trailing stop of was into now while the
// position stays open on the same side: Bybit "adjust[s] the qty according
// to the size of the open position" and cancels it "if the position is
// closed" (trading-stop.mdx).
func keepTrailing(was, now Position) Position {
	if now.Size.IsPositive() && now.Side == was.Side {
		now.TrailingStop = was.TrailingStop
	}
	return now
}

// Position returns the linear position of symbol.
func (s *Server) Position(symbol string) Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.positions[symbol]
}

// SetBalance sets a coin's wallet balance (nothing locked).
func (s *Server) SetBalance(coin string, wallet decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances[coin] = Balance{WalletBalance: wallet}
}

// Balance returns a coin's balance.
func (s *Server) Balance(coin string) Balance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balances[coin]
}

// Leverage returns the leverage last set for a linear symbol (0 if never)
// and how many set-leverage requests changed or confirmed it.
func (s *Server) Leverage(symbol string) (leverage decimal.Decimal, sets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leverage[symbol], s.leverageSet[symbol]
}

// SetLeverage changes a linear symbol's leverage without a request, as a
// manual change in Bybit's app or another hoox replica would.
func (s *Server) SetLeverage(symbol string, leverage int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leverage[symbol] = decimal.NewFromInt(int64(leverage))
}

// SetFractionalLeverage changes a linear symbol's leverage to one Bybit's
// app allows and hoox never asks for (leverageStep 0.01: 10.5), without a
// request.
func (s *Server) SetFractionalLeverage(symbol string, leverage decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leverage[symbol] = leverage
}

// RefuseLeverage makes every set-leverage fail with 110013, or succeed
// again with false.
func (s *Server) RefuseLeverage(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseLeverage = refuse
}

// SetHedgeMode sets the linear account's position mode: hedge (positions
// listed with positionIdx 1 and 2; an order with positionIdx 0 refused) or
// one-way.
func (s *Server) SetHedgeMode(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hedge = on
}

// Inject makes the next n requests to path answer with f.
func (s *Server) Inject(path string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = append(s.faults[path], &injected{left: n, fault: f})
}

// ExhaustLimit makes the next successful answer on path (a private
// endpoint) report its rate limit used up, as Bybit does on the last request
// a window allows: HTTP 200 with X-Bapi-Limit-Status 0 and
// X-Bapi-Limit-Reset-Timestamp now+resetAfter on the fake's clock. Until
// then the fake refuses every request to path with retCode 10006 "Too many
// visits!" and executes nothing, so a client that ignored the header is
// seen sending (Requests counts it) and refused.
func (s *Server) ExhaustLimit(path string, resetAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exhaustNext[path] = resetAfter
}

// InjectPlacements makes the next n order placements answer with f.
func (s *Server) InjectPlacements(n int, f Fault) { s.Inject(PathCreate, n, f) }

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]*injected{}
}

// LagLookups makes the next n accepted orders invisible to realtime and
// LagNextLookup hides the next order booked from lookups for d: LagLookups
// for one order, under the name every fake uses.
func (s *Server) LagNextLookup(d time.Duration) { s.LagLookups(1, d) }

// history lookups until d has passed on the fake's clock.
func (s *Server) LagLookups(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lagLeft, s.lag = n, d
}

// HideFromQueries makes the next n accepted orders missing from the first
// `queries` realtime or history answers that would otherwise list them, as
// Bybit's asynchronous order processing does right after a create was
// acknowledged ("This request is asynchronous"); later answers show them.
// It counts answers, not time, so a test needs no clock for it.
func (s *Server) HideFromQueries(n, queries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hideLeft, s.hideFor = n, queries
}

// ForgetClosedInRealtime drops closed orders (filled, cancelled, rejected)
// from /v5/order/realtime, as a Bybit service restart does: they are then
// found only in history. Open orders stay in realtime.
func (s *Server) ForgetClosedInRealtime() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetReal = true
}

// SetSpotFeeRate charges rate (0.001 for 0.1 %; zero for none) on every
// spot fill from now on, as Bybit does with a positive fee rate: a buy
// pays in the base coin, a sell in the quote coin (docs/v5 enum "Spot Fee
// Currency Instruction"), taken out of what the fill credited and
// reported in the order's cumExecFee and cumFeeDetail (order-list.mdx).
// Until it is called the fake reports SpotFeeRate in cumFeeDetail but
// moves the balances by the gross amounts.
func (s *Server) SetSpotFeeRate(rate decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotFeeRate = &rate
}

// SetMarketLiquidity caps how much of a market order on symbol (in
// category) fills; Bybit cancels the rest of the IOC: PartiallyFilledCanceled
// after a partial fill, Cancelled with nothing filled. A negative qty
// removes the cap.
func (s *Server) SetMarketLiquidity(category, symbol string, qty decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if qty.IsNegative() {
		delete(s.liquidity, orderKey{category, symbol})
		return
	}
	s.liquidity[orderKey{category, symbol}] = qty
}

// PartialFill fills qty more of the open limit order under linkID at its
// price, moving the position or balances; it stays open (PartiallyFilled)
// until all of it has filled (Filled). It reports whether such an order
// exists.
func (s *Server) PartialFill(category, linkID string, qty decimal.Decimal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	o, ok := s.orders[orderKey{category, linkID}]
	if !ok || !isOpen(o.Status) {
		return false
	}
	qty = decimal.Min(qty, o.Qty.Sub(o.CumExecQty))
	in := s.instruments[category][o.Symbol]
	if category == CategorySpot {
		s.unlock(in, o.Side, qty, o.Price)
	}
	s.settle(category, in, o, qty, o.Price)
	o.AvgPrice = o.Price
	o.CumExecQty = o.CumExecQty.Add(qty)
	o.Status = "PartiallyFilled"
	if o.CumExecQty.Equal(o.Qty) {
		o.Status = "Filled"
	}
	return true
}

// UpdateOrder lets a test move an order (fill it, cancel it, …). It reports
// whether the order exists.
func (s *Server) UpdateOrder(category, linkID string, fn func(*Order)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	o, ok := s.orders[orderKey{category, linkID}]
	if ok {
		fn(o)
	}
	return ok
}

// Orders returns a copy of every order the fake accepted, oldest first.
func (s *Server) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	out := make([]Order, 0, len(s.book))
	for _, o := range s.book {
		out = append(out, *o)
	}
	return out
}

// Order returns the order held under an orderLinkId in a category.
func (s *Server) Order(category, linkID string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	o, ok := s.orders[orderKey{category, linkID}]
	if !ok {
		return Order{}, false
	}
	return *o, true
}

// Attempts counts the authenticated create requests that carried linkID,
// accepted or not.
func (s *Server) Attempts(linkID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	return s.attempts[linkID]
}

// SetLatency makes every request to path take d before it is answered, on
// Options.Sleep; zero removes it.
func (s *Server) SetLatency(path string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.latency, path)
		return
	}
	s.latency[path] = d
}

// SetMatchingDelay makes every authenticated create request take d
// before the order is booked (on Options.Sleep), after which the fake checks
// the request's time again: one whose recv_window ran out on the way is
// refused unexecuted with retCode -1 "request expired" (Bybit's error page:
// "-1 | request expired: o@0, now[] diff[]"). Zero removes the delay.
func (s *Server) SetMatchingDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engineDelay = max(d, 0)
}

// RequestLog returns the requests to path, oldest first, whatever their
// answer.
func (s *Server) RequestLog(path string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.log {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// Requests counts every request to path, whatever its answer.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// takeFault pops the next fault injected for path; s.mu must be held.
func (s *Server) takeFault(path string) (Fault, bool) {
	q := s.faults[path]
	for len(q) > 0 && q[0].left <= 0 {
		q = q[1:]
	}
	s.faults[path] = q
	if len(q) == 0 {
		return Fault{}, false
	}
	q[0].left--
	f := q[0].fault
	if q[0].left == 0 {
		s.faults[path] = slices.Delete(q, 0, 1)
	}
	return f, true
}

// afterEngine is count once every late placement due by now has reached
// the engine.
func (s *Server) afterEngine(count func() int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	return count()
}

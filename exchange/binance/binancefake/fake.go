// Package binancefake is an in-process fake of the Binance spot (/api/v3)
// and USDⓈ-M futures (/fapi) REST APIs, for tests of hoox's Binance adapter
// and of the whole gateway. It is a fake, not a mock: it verifies HMAC
// signatures and the recvWindow against its own clock, keeps a book per
// market, fills market orders at its ticker price, moves balances and
// positions, enforces filters with Binance's own error codes and JSON error
// shape, and enforces Binance's real client-order-ID rule: an ID is refused
// only while an earlier order under it is still open; once that order is
// filled, cancelled or expired the ID is accepted again and creates a second
// order.
//
// Faults that a real venue produces can be injected for the next N order
// placements (see Fault): a 5xx or a dropped connection after the order was
// accepted, a bare 4xx (a gateway's 408) or an error code a client may not
// know after the order was accepted, a matching engine that takes the
// order late (spot books it after its recvWindow, futures refuses it with
// -5028), a 429 with Retry-After before accepting, credential errors.
// HoldMarketOrders makes market orders answer NEW and fill only later. A
// lookup lag makes new orders invisible to the order query until the fake's
// clock has moved past it; the clock is the caller's (Options.Now) plus
// whatever Advance added, so tests never sleep. A latency per endpoint
// (SetLatency) and a matching-engine delay (SetMatchingDelay) make requests
// take time on Options.Sleep, which tests point at their own clock; with the
// matching-engine delay the fake checks a placement's timestamp a second
// time, as Binance does, and refuses one that expired on the way (spot
// -1021, futures -5028). RequestLog records every request's signed
// timestamp, so a test can see when the adapter stamped an order.
package binancefake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/shopspring/decimal"
)

// Default credentials the fake accepts when Options leaves them empty.
const (
	DefaultAPIKey    = "fake-binance-key"
	DefaultAPISecret = "fake-binance-secret"
)

// Market names the two books the fake keeps apart, as Binance keeps spot
// and USDⓈ-M futures accounts apart.
const (
	MarketSpot    = "spot"
	MarketFutures = "futures"
)

// Symbol is one tradable symbol with the filters exchangeInfo reports for
// it. A zero filter value disables that rule, as on Binance.
type Symbol struct {
	Symbol string
	Base   string
	Quote  string
	// LOT_SIZE.
	StepSize, MinQty, MaxQty decimal.Decimal
	// MARKET_LOT_SIZE; zero values fall back to LOT_SIZE in the fake's own
	// checks, and are served as zero (as spot often does).
	MarketStepSize, MarketMinQty, MarketMaxQty decimal.Decimal
	// PRICE_FILTER.
	TickSize, MinPrice, MaxPrice decimal.Decimal
	// MinNotional is spot NOTIONAL.minNotional (applied to market orders
	// when ApplyMinToMarket) and futures MIN_NOTIONAL.notional.
	MinNotional      decimal.Decimal
	ApplyMinToMarket bool
	// Price is the ticker's last price (spot) or mark price (futures);
	// market orders fill at it, and spot triggers are checked against it.
	Price decimal.Decimal
	// Ask is spot's best ask (ticker/bookTicker askPrice); Price when
	// zero. A spot MARKET buy fills at it ("at the best available
	// prices", faqs/market_orders_faq.md) and is refused whole when the
	// quote balance cannot pay for all of it there.
	Ask decimal.Decimal
	// MaxNumAlgoOrders is MAX_NUM_ALGO_ORDERS: the open algo (stop and
	// take-profit) orders the account may hold on the symbol, on either
	// market (algocap.go). Zero: no cap, and the filter is not published.
	MaxNumAlgoOrders int
	// MaxNumOrders is spot MAX_NUM_ORDERS: every open spot order on the
	// symbol (algocap.go). Zero: no cap, not published.
	MaxNumOrders int
	// OrderTypes is spot exchangeInfo's orderTypes: an order of another
	// type is refused -2010 with Binance's message for it.
	// DefaultSpotOrderTypes when nil.
	OrderTypes []string
	// AllowTrailingStop is spot exchangeInfo's allowTrailingStop: without
	// it an order with trailingDelta is refused -2010.
	AllowTrailingStop bool
	// MinTrailingDelta and MaxTrailingDelta are the TRAILING_DELTA
	// filter's bounds in BIPS (above and below alike);
	// DefaultMinTrailingDelta and DefaultMaxTrailingDelta when zero.
	MinTrailingDelta, MaxTrailingDelta int
}

// DefaultSymbols are served when Options.Symbols is empty: BTCUSDT at
// 50000 and ETHUSDT at 3000, with step, tick and notional filters shaped
// like Binance's.
func DefaultSymbols() []Symbol {
	d := decimal.RequireFromString
	return []Symbol{
		{
			Symbol: "BTCUSDT", Base: "BTC", Quote: "USDT",
			StepSize: d("0.001"), MinQty: d("0.001"), MaxQty: d("1000"),
			TickSize: d("0.1"), MinPrice: d("0.1"), MaxPrice: d("1000000"),
			MinNotional: d("5"), ApplyMinToMarket: true, Price: d("50000"), AllowTrailingStop: true,
		},
		{
			Symbol: "ETHUSDT", Base: "ETH", Quote: "USDT",
			StepSize: d("0.01"), MinQty: d("0.01"), MaxQty: d("10000"),
			TickSize: d("0.01"), MinPrice: d("0.01"), MaxPrice: d("100000"),
			MinNotional: d("5"), ApplyMinToMarket: true, Price: d("3000"), AllowTrailingStop: true,
		},
	}
}

// Options configures a Server.
type Options struct {
	// APIKey and APISecret are the only credentials the fake accepts;
	// DefaultAPIKey and DefaultAPISecret when empty.
	APIKey    string
	APISecret string
	// Now is the fake's clock; time.Now when nil. Advance adds to it.
	Now func() time.Time
	// Symbols are served by exchangeInfo and tickers, on both markets;
	// DefaultSymbols when empty.
	Symbols []Symbol
	// Balances are spot free balances by asset; 1,000,000 USDT when nil.
	Balances map[string]decimal.Decimal
	// FuturesWallet is the futures margin balance in USDT; 1,000,000 when
	// zero.
	FuturesWallet decimal.Decimal
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
	// Timestamp is the request's signed timestamp parameter, zero when it
	// sent none (an unsigned request).
	Timestamp time.Time
	// RecvWindow is its recvWindow parameter; zero when it sent none.
	RecvWindow time.Duration
}

// Order is one order in the fake's book.
type Order struct {
	Market        string
	Symbol        string
	OrderID       int64
	ClientOrderID string
	Side          string // BUY or SELL
	Type          string // MARKET, LIMIT; spot also LIMIT_MAKER, STOP_LOSS, TAKE_PROFIT
	TimeInForce   string
	Quantity      decimal.Decimal
	Price         decimal.Decimal
	// StopPrice and TrailingDelta (BIPS) are a spot STOP_LOSS or
	// TAKE_PROFIT order's trigger; the fake never triggers one by
	// itself (FillOrder executes it at the symbol's price).
	StopPrice     decimal.Decimal
	TrailingDelta int64
	ExecutedQty   decimal.Decimal
	CumQuote      decimal.Decimal
	Status        string // NEW, PARTIALLY_FILLED, FILLED, CANCELED, EXPIRED, REJECTED
	ReduceOnly    bool
	Time          time.Time
	// VisibleAt is when the order query starts to find the order (the
	// lookup lag); the matching engine sees it at once.
	VisibleAt time.Time
	// Archived is set by ArchiveOrder: a spot order query answers -2026
	// ORDER_ARCHIVED for it.
	Archived bool
	// fillOnQuery counts down the order queries a held market order
	// (HoldMarketOrders) waits for before it fills.
	fillOnQuery int
}

// Open reports whether the order still blocks its client order ID.
func (o Order) Open() bool {
	return o.Status == "NEW" || o.Status == "PARTIALLY_FILLED"
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the adapter (no trailing slash).
	URL string

	keys      *venuefake.Keys
	clock     *venuefake.Clock
	srv       *httptest.Server
	closeOnce sync.Once

	mu            sync.Mutex
	symbols       map[string]Symbol
	balances      map[string]decimal.Decimal
	futuresWallet decimal.Decimal
	positions     map[string]decimal.Decimal
	leverage      map[string]int
	leverageCalls map[string]int
	// refuseLeverage makes every leverage change fail with -2027, as
	// Binance refuses one that the open position's notional does not fit.
	refuseLeverage bool
	// hedge is the account's position mode: dualSidePosition.
	hedge      bool
	liquidity  map[string]decimal.Decimal
	orders     []*Order
	trades     []Trade
	nextID     int64
	lookupLag  time.Duration
	nextLag    *time.Duration
	faults     []Fault
	algoFaults []Fault
	// accountAlgoCap is USDⓈ-M's limit on open algo orders across every
	// symbol (SetAccountAlgoCap).
	accountAlgoCap int
	requests       map[string]int
	log            []Request
	weightMinute   int64
	usedWeight     int
	sleep          func(time.Duration)
	latency        map[string]time.Duration
	overlaps       map[string]*overlap
	engineDelay    time.Duration
	tradingOff     string
	late           venuefake.Late[lateOrder]
	holdLeft       int
	holdQueries    int
	// cancels counts DELETE order cancellations (Cancels).
	cancels int
	// algos are the conditional orders of the Algo Order API.
	algos []*AlgoOrder
	// lists are the spot OCO order lists (oco.go).
	lists []*OrderList
	// fillAlgoCap names the symbol whose algo cap the next USDⓈ-M order
	// placement fills first (FillAlgoCapOnNextOrder); "" for none.
	fillAlgoCap string
	// loseList drops the next OCO placement (LoseNextOrderList).
	loseList bool
	// holdAfterCancel, when set, holds the first placement after a
	// cancel (HoldPlacementAfterCancel).
	holdAfterCancel *heldPlacement
	// spotCommission, once SetSpotCommission set it, is the spot
	// commission rate, and the fake then takes it out of the balance of
	// the asset an order receives; nil charges SpotCommissionRate in the
	// trades only.
	spotCommission *decimal.Decimal
}

// New starts a fake on a loopback port. With a non-nil tb the fake closes
// when the test ends.
func New(tb testing.TB, opts Options) *Server {
	s := newServer(opts)
	s.srv = httptest.NewServer(s.handler())
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Start serves a fake on addr (for example "127.0.0.1:0") without a test,
// for a CLI that wants to show the real adapter working locally.
func Start(addr string, opts Options) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("binancefake: listen %s: %w", addr, err)
	}
	s := newServer(opts)
	s.srv = httptest.NewUnstartedServer(s.handler())
	// httptest listens on a random loopback port; replace it with addr.
	_ = s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

func newServer(opts Options) *Server {
	s := &Server{
		keys:           venuefake.NewKeys(opts.APIKey, opts.APISecret, DefaultAPIKey, DefaultAPISecret),
		accountAlgoCap: AccountAlgoOrderLimit,
		clock:          venuefake.NewClock(opts.Now),
		symbols:        map[string]Symbol{},
		balances:       map[string]decimal.Decimal{},
		futuresWallet:  opts.FuturesWallet,
		positions:      map[string]decimal.Decimal{},
		leverage:       map[string]int{},
		leverageCalls:  map[string]int{},
		liquidity:      map[string]decimal.Decimal{},
		requests:       map[string]int{},
		latency:        map[string]time.Duration{},
		overlaps:       map[string]*overlap{},
		sleep:          opts.Sleep,
		nextID:         1000,
	}
	if s.sleep == nil {
		s.sleep = time.Sleep
	}
	syms := opts.Symbols
	if len(syms) == 0 {
		syms = DefaultSymbols()
	}
	for _, sym := range syms {
		s.symbols[sym.Symbol] = sym
	}
	if opts.Balances == nil {
		s.balances["USDT"] = decimal.NewFromInt(1_000_000)
	}
	for a, b := range opts.Balances {
		s.balances[a] = b
	}
	if s.futuresWallet.IsZero() {
		s.futuresWallet = decimal.NewFromInt(1_000_000)
	}
	return s
}

// Close stops the server and closes client connections.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Shutdown stops a fake started with Start, waiting for requests in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("binancefake: shutdown: %w", ctx.Err())
	}
}

// APIKey is the key the fake accepts.
func (s *Server) APIKey() string {
	key, _ := s.keys.Get()
	return key
}

// APISecret is the secret the fake verifies signatures with.
func (s *Server) APISecret() string {
	_, secret := s.keys.Get()
	return secret
}

// SetCredentials replaces the only key pair the fake accepts, as when a key
// is deleted or rotated at Binance: requests signed with another key are
// refused with -2015.
func (s *Server) SetCredentials(key, secret string) { s.keys.Set(key, secret) }

// Now is the fake's current time: Options.Now plus everything Advance
// added.
func (s *Server) Now() time.Time { return s.clock.Now() }

func (s *Server) now() time.Time { return s.clock.Now() }

// Advance moves the fake's clock forward by d (negative d moves it back),
// for lookup lags and clock-skew tests.
func (s *Server) Advance(d time.Duration) { s.clock.Advance(d) }

// SetSymbol adds or replaces a symbol; its filters change at once, as when
// Binance changes a step size.
func (s *Server) SetSymbol(sym Symbol) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.symbols[sym.Symbol] = sym
}

// SetPrice sets a symbol's ticker price (and the price market orders fill
// at).
func (s *Server) SetPrice(symbol string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym := s.symbols[symbol]
	sym.Price = price
	s.symbols[symbol] = sym
}

// SetAsk sets a symbol's best ask (spot bookTicker), the price a spot
// market buy fills at; zero makes it the ticker price again.
func (s *Server) SetAsk(symbol string, ask decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym := s.symbols[symbol]
	sym.Ask = ask
	s.symbols[symbol] = sym
}

// ask is the price a spot market buy of sym fills at: its best ask, or
// its ticker price when no ask is set.
func (sym Symbol) ask() decimal.Decimal {
	if sym.Ask.IsPositive() {
		return sym.Ask
	}
	return sym.Price
}

// SetBalance sets a spot free balance.
func (s *Server) SetBalance(asset string, free decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances[asset] = free
}

// Balance is a spot free balance.
func (s *Server) Balance(asset string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balances[asset]
}

// SetPosition sets a futures position (signed: negative is short; one-way
// mode).
func (s *Server) SetPosition(symbol string, amt decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.positions[symbol] = amt
}

// Position is a futures position, signed.
func (s *Server) Position(symbol string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.positions[symbol]
}

// SetFuturesWallet sets the futures margin balance in USDT.
func (s *Server) SetFuturesWallet(usdt decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.futuresWallet = usdt
}

// SetMarketLiquidity caps how much of a market order on symbol fills; the
// rest expires (status EXPIRED, with or without a partial fill). A negative
// value removes the cap.
func (s *Server) SetMarketLiquidity(symbol string, qty decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if qty.IsNegative() {
		delete(s.liquidity, symbol)
		return
	}
	s.liquidity[symbol] = qty
}

// SetSpotCommission charges rate (0.001 for 0.1 %; zero for none) on
// every spot fill from now on, as Binance does when BNB does not pay it:
// taken out of the received amount — the base asset of a buy, the quote
// asset of a sell — and reported in the trades, the FULL response's
// fills[].commission and commissionAsset and the account trade list
// (binance-spot-api-docs faqs/commission_faq.md). Until it is called the
// fake reports SpotCommissionRate in the trades but moves the balances by
// the gross amounts.
func (s *Server) SetSpotCommission(rate decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotCommission = &rate
}

// SetLookupLag makes orders placed from now on invisible to the order query
// until the fake's clock has moved d past their placement.
func (s *Server) SetLookupLag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookupLag = d
}

// LagNextLookup makes only the next order placed invisible to the order
// query until the fake's clock has moved d past its placement.
func (s *Server) LagNextLookup(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextLag = &d
}

// takeLookupLag is the lag of an order being placed; callers hold mu.
func (s *Server) takeLookupLag() time.Duration {
	if s.nextLag != nil {
		d := *s.nextLag
		s.nextLag = nil
		return d
	}
	return s.lookupLag
}

// SetUsedWeight sets the request weight used in the current minute, as
// reported in X-MBX-USED-WEIGHT-1M.
func (s *Server) SetUsedWeight(w int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.weightMinute = s.now().Unix() / 60
	s.usedWeight = w
}

// Leverage is the leverage last set for a futures symbol (0 if never set).
func (s *Server) Leverage(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leverage[symbol]
}

// SetLeverage changes a futures symbol's leverage without a request, as a
// manual change in Binance's app or another hoox replica would.
func (s *Server) SetLeverage(symbol string, leverage int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leverage[symbol] = leverage
}

// RefuseLeverage makes every POST /fapi/v1/leverage fail with -2027
// ("Exceeded the maximum allowable position at current leverage."), or
// succeed again with false.
func (s *Server) RefuseLeverage(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseLeverage = refuse
}

// SetHedgeMode sets the futures account's position mode: hedge
// (dualSidePosition true: positionRisk shows LONG and SHORT, and an order
// without positionSide LONG/SHORT is refused with -4061) or one-way.
func (s *Server) SetHedgeMode(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hedge = on
}

// LeverageCalls counts POST /fapi/v1/leverage requests for symbol.
func (s *Server) LeverageCalls(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leverageCalls[symbol]
}

// Orders returns a copy of the book, oldest first, both markets.
func (s *Server) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	out := make([]Order, 0, len(s.orders))
	for _, o := range s.orders {
		out = append(out, *o)
	}
	return out
}

// Placements counts orders the fake accepted under clientOrderID (any
// market, any symbol).
func (s *Server) Placements(clientOrderID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	n := 0
	for _, o := range s.orders {
		if o.ClientOrderID == clientOrderID {
			n++
		}
	}
	return n
}

// SetLatency makes every request to path (e.g. "/api/v3/exchangeInfo")
// take d before it is answered, on Options.Sleep; zero removes it.
func (s *Server) SetLatency(path string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.latency, path)
		return
	}
	s.latency[path] = d
}

// overlap holds the requests to one path until a request to another has
// arrived (HoldUntilAsked).
type overlap struct {
	other   string
	arrived chan struct{} // closed when the other path is asked
	held    int           // requests to the path held
	met     int           // held requests the other path's request released
}

// overlapBound is how long a held request waits for the other path
// before it is answered anyway: a bound on a test whose code asks the
// two one after the other, not a timing it measures.
const overlapBound = 5 * time.Second

// HoldUntilAsked holds every request to path, before it is answered,
// until a request to other has arrived, for at most a few seconds, and
// returns how many requests to path it held and how many of them the
// other's arrival released: a client that asks the two at the same time
// has every request to path released; one that asks other only after
// path's answer waits out the bound, and that request is not.
func (s *Server) HoldUntilAsked(path, other string) (counts func() (held, released int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &overlap{other: other, arrived: make(chan struct{})}
	s.overlaps[path] = o
	return func() (int, int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return o.held, o.met
	}
}

// holdOverlap holds a request to path while HoldUntilAsked says so, and
// releases those waiting for a request to path; s.mu must be held, and
// the returned wait is run after it is released.
func (s *Server) holdOverlap(path string) (wait func()) {
	for _, o := range s.overlaps {
		if o.other == path {
			select {
			case <-o.arrived:
			default:
				close(o.arrived)
			}
		}
	}
	o, ok := s.overlaps[path]
	if !ok {
		return func() {}
	}
	o.held++
	return func() {
		select {
		case <-o.arrived:
			s.mu.Lock()
			o.met++
			s.mu.Unlock()
		case <-time.After(overlapBound):
		}
	}
}

// SetMatchingDelay makes every placement take d between the API's check of
// its timestamp and the matching engine's (on Options.Sleep). Binance's
// timing logic (rest-api.md, "Timing security") checks serverTime -
// timestamp <= recvWindow again before the matching engine takes the
// order, so a placement whose recvWindow ran out on the way is refused
// unexecuted: -1021 on spot, -5028 "outside of the ME recvWindow" on
// futures. Zero removes the delay.
func (s *Server) SetMatchingDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engineDelay = max(d, 0)
}

// Messages Binance sends with -2010 NEW_ORDER_REJECTED when the account or
// the API server may not trade (errors.md, "Messages for -1010, -2010 and
// -2011"), for DisableTrading.
const (
	MsgAccountCannotTrade  = "This account may not place or cancel orders."
	MsgRestTradingDisabled = "Rest API trading is not enabled."
	MsgActionDisabled      = "This action is disabled on this account."
)

// DisableTrading makes every placement that passes authentication answer
// -2010 with msg (one of the Msg constants), placing nothing, as Binance
// does for an account whose trading was disabled; an empty msg enables
// trading again.
func (s *Server) DisableTrading(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tradingOff = msg
}

// RequestLog returns the requests the fake received for path, oldest
// first, whatever their outcome.
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

// Requests counts requests the fake received for path (e.g.
// "/api/v3/order"), whatever their outcome.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// ErrNoOrder is returned by the order-changing helpers when the fake holds
// no order under the client order ID.
var ErrNoOrder = errors.New("binancefake: no such order")

// FillOrder fills the latest open order under clientOrderID at its limit
// price (a held market order, or a triggered spot STOP_LOSS or
// TAKE_PROFIT, at the symbol's price), moving balances or the position, as if the market had traded
// through it.
func (s *Server) FillOrder(clientOrderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil || !o.Open() {
		return fmt.Errorf("fill %s: %w", clientOrderID, ErrNoOrder)
	}
	rest := o.Quantity.Sub(o.ExecutedQty)
	s.execute(o, rest, s.fillPrice(o))
	o.Status = "FILLED"
	return nil
}

// PartialFill fills qty more of the latest open order under clientOrderID
// at its limit price, moving balances or the position; the order stays
// open (PARTIALLY_FILLED) until all of it has filled.
func (s *Server) PartialFill(clientOrderID string, qty decimal.Decimal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil || !o.Open() {
		return fmt.Errorf("fill %s: %w", clientOrderID, ErrNoOrder)
	}
	qty = decimal.Min(qty, o.Quantity.Sub(o.ExecutedQty))
	s.execute(o, qty, s.fillPrice(o))
	o.Status = "PARTIALLY_FILLED"
	if o.ExecutedQty.Equal(o.Quantity) {
		o.Status = "FILLED"
	}
	return nil
}

// CancelOrder cancels the latest open order under clientOrderID.
func (s *Server) CancelOrder(clientOrderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil || !o.Open() {
		return fmt.Errorf("cancel %s: %w", clientOrderID, ErrNoOrder)
	}
	o.Status = "CANCELED"
	return nil
}

// ArchiveOrder archives the latest order under clientOrderID as Binance
// spot does with an order "canceled or expired with no executed qty over
// 90 days ago" (errors.md, -2026 ORDER_ARCHIVED): the spot order query then
// answers -2026 for it. Only such an order can be archived.
func (s *Server) ArchiveOrder(clientOrderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil || o.Market != MarketSpot || (o.Status != "CANCELED" && o.Status != "EXPIRED") || o.ExecutedQty.IsPositive() {
		return fmt.Errorf("archive %s: %w", clientOrderID, ErrNoOrder)
	}
	o.Archived = true
	return nil
}

// SetOrderState overwrites the latest order under clientOrderID's status and
// execution, without touching balances: for status-mapping tests.
func (s *Server) SetOrderState(clientOrderID, status string, executedQty, cumQuote decimal.Decimal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil {
		return fmt.Errorf("set state of %s: %w", clientOrderID, ErrNoOrder)
	}
	o.Status, o.ExecutedQty, o.CumQuote = status, executedQty, cumQuote
	return nil
}

// fillPrice is where o trades: its limit price, or for a market order
// (held by HoldMarketOrders) the symbol's price; callers hold mu.
func (s *Server) fillPrice(o *Order) decimal.Decimal {
	if o.Type == "MARKET" || spotContingent[o.Type] {
		return s.symbols[o.Symbol].Price
	}
	return o.Price
}

// latest is the newest order under id; callers hold mu.
func (s *Server) latest(id string) *Order {
	s.runEngine()
	for _, o := range slices.Backward(s.orders) {
		if o.ClientOrderID == id {
			return o
		}
	}
	return nil
}

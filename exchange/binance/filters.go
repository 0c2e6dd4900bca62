package binance

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Filters are one symbol's trading rules from exchangeInfo, as this venue
// applies them before sending an order. A zero value disables its rule, as
// on Binance.
type Filters struct {
	Symbol    string
	BaseAsset string
	// QuoteAsset is what the symbol is priced in (USDT).
	QuoteAsset string
	// LOT_SIZE.
	StepSize, MinQty, MaxQty decimal.Decimal
	// MARKET_LOT_SIZE (market orders, in addition to LOT_SIZE).
	MarketStepSize, MarketMinQty, MarketMaxQty decimal.Decimal
	// PRICE_FILTER.
	TickSize, MinPrice, MaxPrice decimal.Decimal
	// MinNotional is spot NOTIONAL/MIN_NOTIONAL minNotional or futures
	// MIN_NOTIONAL notional; MinNotionalMarket says whether it applies to
	// market orders (always on futures, applyMinToMarket/applyToMarket on
	// spot).
	MinNotional       decimal.Decimal
	MinNotionalMarket bool
	// MaxNotional is spot NOTIONAL maxNotional; MaxNotionalMarket is its
	// applyMaxToMarket.
	MaxNotional       decimal.Decimal
	MaxNotionalMarket bool
	// MaxNumAlgoOrders is MAX_NUM_ALGO_ORDERS: the open algo (stop,
	// take-profit, trailing) orders the account may hold on the symbol;
	// zero when not published (exitcap.go).
	MaxNumAlgoOrders int
	// MaxNumOrders is spot MAX_NUM_ORDERS: every open order of the
	// account on the symbol; zero when not published.
	MaxNumOrders int
	// OrderTypes is spot's orderTypes: the order types the symbol takes
	// (nil when exchangeInfo listed none: not checked).
	OrderTypes []string
	// AllowTrailingStop is spot's allowTrailingStop: orders with
	// trailingDelta are taken.
	AllowTrailingStop bool
	// OCORefused is set when spot's ocoAllowed is false (absent: not
	// refused).
	OCORefused bool
	// TRAILING_DELTA, in BIPS: the range for a trailingDelta whose
	// trigger lies below the market (a STOP_LOSS SELL) and above it (a
	// STOP_LOSS BUY), filters.md. Zero: no bound.
	MinTrailingBelow, MaxTrailingBelow, MinTrailingAbove, MaxTrailingAbove int64
}

type rawFilter struct {
	FilterType       string `json:"filterType"`
	MinPrice         string `json:"minPrice"`
	MaxPrice         string `json:"maxPrice"`
	TickSize         string `json:"tickSize"`
	MinQty           string `json:"minQty"`
	MaxQty           string `json:"maxQty"`
	StepSize         string `json:"stepSize"`
	MinNotional      string `json:"minNotional"`
	Notional         string `json:"notional"`
	MaxNotional      string `json:"maxNotional"`
	ApplyToMarket    *bool  `json:"applyToMarket"`
	ApplyMinToMarket *bool  `json:"applyMinToMarket"`
	ApplyMaxToMarket *bool  `json:"applyMaxToMarket"`
	// MAX_NUM_ALGO_ORDERS: spot names the number maxNumAlgoOrders
	// (filters.md), USDⓈ-M limit (common-definition.md).
	MaxNumAlgoOrders int `json:"maxNumAlgoOrders"`
	MaxNumOrders     int `json:"maxNumOrders"`
	Limit            int `json:"limit"`
	// TRAILING_DELTA (spot), JSON numbers.
	MinTrailingAboveDelta int64 `json:"minTrailingAboveDelta"`
	MaxTrailingAboveDelta int64 `json:"maxTrailingAboveDelta"`
	MinTrailingBelowDelta int64 `json:"minTrailingBelowDelta"`
	MaxTrailingBelowDelta int64 `json:"maxTrailingBelowDelta"`
}

type rawSymbol struct {
	Symbol     string      `json:"symbol"`
	Status     string      `json:"status"`
	BaseAsset  string      `json:"baseAsset"`
	QuoteAsset string      `json:"quoteAsset"`
	Filters    []rawFilter `json:"filters"`
	// OrderTypes and AllowTrailingStop are spot's (rest-api.md,
	// "Exchange information").
	OrderTypes        []string `json:"orderTypes"`
	AllowTrailingStop bool     `json:"allowTrailingStop"`
	OCOAllowed        *bool    `json:"ocoAllowed"`
}

var dec = venuekit.Dec

func parseFilters(s rawSymbol, futures bool) Filters {
	f := Filters{Symbol: s.Symbol, BaseAsset: s.BaseAsset, QuoteAsset: s.QuoteAsset}
	if !futures {
		f.OrderTypes, f.AllowTrailingStop = s.OrderTypes, s.AllowTrailingStop
		f.OCORefused = s.OCOAllowed != nil && !*s.OCOAllowed
	}
	for _, r := range s.Filters {
		switch r.FilterType {
		case "LOT_SIZE":
			f.StepSize, f.MinQty, f.MaxQty = dec(r.StepSize), dec(r.MinQty), dec(r.MaxQty)
		case "MARKET_LOT_SIZE":
			f.MarketStepSize, f.MarketMinQty, f.MarketMaxQty = dec(r.StepSize), dec(r.MinQty), dec(r.MaxQty)
		case "PRICE_FILTER":
			f.TickSize, f.MinPrice, f.MaxPrice = dec(r.TickSize), dec(r.MinPrice), dec(r.MaxPrice)
		case "MIN_NOTIONAL":
			if futures {
				f.MinNotional, f.MinNotionalMarket = dec(r.Notional), true
				continue
			}
			f.MinNotional = dec(r.MinNotional)
			f.MinNotionalMarket = r.ApplyToMarket != nil && *r.ApplyToMarket
		case "MAX_NUM_ALGO_ORDERS":
			f.MaxNumAlgoOrders = r.MaxNumAlgoOrders
			if futures {
				f.MaxNumAlgoOrders = r.Limit
			}
		case "MAX_NUM_ORDERS":
			if !futures {
				f.MaxNumOrders = r.MaxNumOrders
			}
		case "TRAILING_DELTA":
			f.MinTrailingBelow, f.MaxTrailingBelow = r.MinTrailingBelowDelta, r.MaxTrailingBelowDelta
			f.MinTrailingAbove, f.MaxTrailingAbove = r.MinTrailingAboveDelta, r.MaxTrailingAboveDelta
		case "NOTIONAL":
			f.MinNotional = dec(r.MinNotional)
			f.MinNotionalMarket = r.ApplyMinToMarket != nil && *r.ApplyMinToMarket
			f.MaxNotional = dec(r.MaxNotional)
			f.MaxNotionalMarket = r.ApplyMaxToMarket != nil && *r.ApplyMaxToMarket
		}
	}
	return f
}

// filtersFor returns symbol's filters, from the cache while younger than
// FilterTTL, else from exchangeInfo. fresh reports whether they were just
// read. An unknown symbol is an *APIError of ClassRejected (-1121).
//
// Reads that miss the cache together share one request (filterReads): a
// USDⓈ-M entry with exits asks for its position and its exit caps at once,
// both need the filters, and a burst of signals after the TTL all miss.
// USDⓈ-M answers for every symbol, so all its reads share one flight;
// spot answers for one symbol, so its reads share one per symbol. The
// request runs under the first caller's deadline but not its
// cancellation, so a caller that gives up does not fail the others.
func (v *Venue) filtersFor(ctx context.Context, symbol string) (f Filters, fresh bool, err error) {
	if cached, _, ok := v.filters.Get(symbol, v.cfg.Now(), v.cfg.FilterTTL); ok {
		return cached, false, nil
	}
	key := symbol
	if v.futures() {
		key = "" // one answer holds every symbol
	}
	read := v.filterReads.DoChan(key, func() (any, error) {
		rctx := context.WithoutCancel(ctx)
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			rctx, cancel = context.WithDeadline(rctx, d)
			defer cancel()
		}
		return v.readFilters(rctx, symbol)
	})
	var res singleflight.Result
	select {
	case res = <-read:
	case <-ctx.Done():
		return Filters{}, false, fmt.Errorf("binance: exchange info for %s: %w", symbol, ctx.Err())
	}
	if res.Err != nil {
		return Filters{}, false, fmt.Errorf("binance: exchange info for %s: %w", symbol, res.Err)
	}
	f, found := res.Val.(map[string]Filters)[symbol]
	if !found {
		return Filters{}, false, fmt.Errorf("binance: exchange info for %s: %w", symbol,
			&APIError{Venue: "binance", Path: v.prefix + "/exchangeInfo", HTTPStatus: http.StatusBadRequest, Code: -1121, Msg: "Invalid symbol.", Class: ClassRejected})
	}
	return f, true, nil
}

// readFilters reads exchangeInfo (spot: symbol's alone; USDⓈ-M: every
// symbol's), caches what it lists and returns it by symbol.
func (v *Venue) readFilters(ctx context.Context, symbol string) (map[string]Filters, error) {
	var info struct {
		Symbols []rawSymbol `json:"symbols"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/exchangeInfo", weight: 1}
	if !v.futures() {
		// Spot answers for one symbol; futures has no such parameter and
		// answers for all, which are cached together.
		req.params = params{}.add("symbol", symbol)
		req.weight = 20
	}
	if err := v.do(ctx, req, &info); err != nil {
		return nil, err
	}
	now := v.cfg.Now()
	out := make(map[string]Filters, len(info.Symbols))
	for _, s := range info.Symbols {
		pf := parseFilters(s, v.futures())
		v.filters.Put(s.Symbol, pf, true, now)
		out[s.Symbol] = pf
	}
	return out, nil
}

// dropFilters forgets symbol's filters after Binance refused an order on a
// filter: they changed, and the next order must read them again.
func (v *Venue) dropFilters(symbol string) { v.filters.Drop(symbol) }

// tickerPrice is the symbol's last price (spot) or last futures price.
func (v *Venue) tickerPrice(ctx context.Context, symbol string) (decimal.Decimal, error) {
	var t struct {
		Price decimal.Decimal `json:"price"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/ticker/price", params: params{}.add("symbol", symbol), weight: 2}
	if err := v.do(ctx, req, &t); err != nil {
		return decimal.Zero, fmt.Errorf("binance: ticker price for %s: %w", symbol, err)
	}
	return t.Price, nil
}

// RoundQuantity rounds q down to the order type's step: LOT_SIZE, and for
// a market order also MARKET_LOT_SIZE. Rounding down never trades more than
// the signal asked.
func (f Filters) RoundQuantity(q decimal.Decimal, market bool) decimal.Decimal {
	q = venuekit.FloorTo(q, f.StepSize)
	if market {
		q = venuekit.FloorTo(q, f.MarketStepSize)
	}
	return q
}

// RoundPrice rounds a limit price to the tick toward the passive side: a
// buy down, a sell up, so rounding never makes the order more aggressive.
func (f Filters) RoundPrice(p decimal.Decimal, side string) decimal.Decimal {
	return venuekit.RoundPrice(p, f.TickSize, side)
}

// checkQuantity returns why q breaks LOT_SIZE / MARKET_LOT_SIZE, or "".
func (f Filters) checkQuantity(q decimal.Decimal, market bool) string {
	minQty, maxQty, name := f.MinQty, f.MaxQty, "LOT_SIZE"
	if market && f.MarketMinQty.GreaterThan(minQty) {
		minQty, name = f.MarketMinQty, "MARKET_LOT_SIZE"
	}
	switch {
	case !q.IsPositive() || q.LessThan(minQty):
		return fmt.Sprintf("quantity %s is below the minimum %s for %s (%s, after rounding down to the step)", q, minQty, f.Symbol, name)
	case maxQty.IsPositive() && q.GreaterThan(maxQty):
		return fmt.Sprintf("quantity %s is above the maximum %s for %s (LOT_SIZE)", q, maxQty, f.Symbol)
	case market && f.MarketMaxQty.IsPositive() && q.GreaterThan(f.MarketMaxQty):
		return fmt.Sprintf("quantity %s is above the market maximum %s for %s (MARKET_LOT_SIZE)", q, f.MarketMaxQty, f.Symbol)
	}
	return ""
}

// marketMax is the largest quantity a market order may carry: the smaller
// of LOT_SIZE and MARKET_LOT_SIZE maxQty that are set; zero when neither is.
func (f Filters) marketMax() decimal.Decimal {
	m := f.MaxQty
	if f.MarketMaxQty.IsPositive() && (!m.IsPositive() || f.MarketMaxQty.LessThan(m)) {
		m = f.MarketMaxQty
	}
	return m
}

// checkPrice returns why a limit price breaks PRICE_FILTER, or "".
func (f Filters) checkPrice(p decimal.Decimal) string {
	switch {
	case !p.IsPositive():
		return fmt.Sprintf("price %s is not positive", p)
	case f.MinPrice.IsPositive() && p.LessThan(f.MinPrice):
		return fmt.Sprintf("price %s is below the minimum %s for %s (PRICE_FILTER)", p, f.MinPrice, f.Symbol)
	case f.MaxPrice.IsPositive() && p.GreaterThan(f.MaxPrice):
		return fmt.Sprintf("price %s is above the maximum %s for %s (PRICE_FILTER)", p, f.MaxPrice, f.Symbol)
	}
	return ""
}

// checkNotional returns why q at price p breaks the notional filter, or "".
func (f Filters) checkNotional(q, p decimal.Decimal, market bool) string {
	n := q.Mul(p)
	if f.MinNotional.IsPositive() && (!market || f.MinNotionalMarket) && n.LessThan(f.MinNotional) {
		return fmt.Sprintf("notional %s (quantity %s at %s) is below the minimum %s for %s", n, q, p, f.MinNotional, f.Symbol)
	}
	if f.MaxNotional.IsPositive() && (!market || f.MaxNotionalMarket) && n.GreaterThan(f.MaxNotional) {
		return fmt.Sprintf("notional %s (quantity %s at %s) is above the maximum %s for %s", n, q, p, f.MaxNotional, f.Symbol)
	}
	return ""
}

// notionalApplies reports whether a market order needs a reference price.
func (f Filters) notionalApplies(market bool) bool {
	if !market {
		return f.MinNotional.IsPositive() || f.MaxNotional.IsPositive()
	}
	return (f.MinNotional.IsPositive() && f.MinNotionalMarket) || (f.MaxNotional.IsPositive() && f.MaxNotionalMarket)
}

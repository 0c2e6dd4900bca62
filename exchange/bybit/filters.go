package bybit

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// filters are one symbol's trading rules from /v5/market/instruments-info.
type filters struct {
	symbol    string
	baseCoin  string
	quoteCoin string
	status    string
	// tick is priceFilter.tickSize.
	tick decimal.Decimal
	// step is lotSizeFilter.qtyStep (linear) or basePrecision (spot).
	step decimal.Decimal
	// minQty is lotSizeFilter.minOrderQty for linear; zero for spot, whose
	// minOrderQty Bybit documents as deprecated and no longer checked.
	minQty decimal.Decimal
	// minNotional is minNotionalValue (linear) or minOrderAmt (spot), in
	// the quote coin.
	minNotional decimal.Decimal
	// maxMktQty is lotSizeFilter.maxMktOrderQty (linear: "Maximum
	// quantity for Market order") or maxMarketOrderQty (spot: "Maximum
	// Market order quantity", in the base coin; maxOrderAmt is
	// "deprecated, no longer check maxOrderAmt, check maxLimitOrderQty and
	// maxMarketOrderQty instead"), docs/v5/market/instrument.mdx. Bybit
	// adjusts it twice a month, so it is read with the other filters.
	maxMktQty decimal.Decimal
}

type instrumentInfo struct {
	Symbol      string `json:"symbol"`
	Status      string `json:"status"`
	BaseCoin    string `json:"baseCoin"`
	QuoteCoin   string `json:"quoteCoin"`
	PriceFilter struct {
		TickSize string `json:"tickSize"`
	} `json:"priceFilter"`
	LotSizeFilter struct {
		QtyStep          string `json:"qtyStep"`
		MinOrderQty      string `json:"minOrderQty"`
		MinNotionalValue string `json:"minNotionalValue"`
		BasePrecision    string `json:"basePrecision"`
		MinOrderAmt      string `json:"minOrderAmt"`
		MaxMktOrderQty   string `json:"maxMktOrderQty"`
		// MaxMarketOrderQty is spot's cap on a Market order.
		MaxMarketOrderQty string `json:"maxMarketOrderQty"`
	} `json:"lotSizeFilter"`
}

// filtersFor returns symbol's filters from the cache, or fetches them when
// absent, older than FilterTTL, or invalidated by a filter failure. found is
// false when Bybit does not list the symbol in this category.
func (v *Venue) filtersFor(ctx context.Context, symbol string) (f filters, found bool, err error) {
	now := v.cfg.Now()
	if f, found, ok := v.filters.Get(symbol, now, v.cfg.FilterTTL); ok {
		return f, found, nil
	}
	var res struct {
		List []instrumentInfo `json:"list"`
	}
	q := url.Values{"category": {string(v.cfg.Market)}, "symbol": {symbol}}
	err = v.do(ctx, request{method: http.MethodGet, path: "/v5/market/instruments-info", query: q}, &res)
	if err != nil {
		if isRefusal(err) {
			// Bybit refuses the query itself for a symbol it does not know.
			return filters{}, false, nil
		}
		return filters{}, false, fmt.Errorf("instruments-info %s: %w", symbol, err)
	}
	for _, in := range res.List {
		if in.Symbol != symbol {
			continue
		}
		f = filters{symbol: symbol, baseCoin: in.BaseCoin, quoteCoin: in.QuoteCoin, status: in.Status, tick: dec(in.PriceFilter.TickSize)}
		if v.cfg.Market == MarketSpot {
			f.step = dec(in.LotSizeFilter.BasePrecision)
			f.minNotional = dec(in.LotSizeFilter.MinOrderAmt)
			f.maxMktQty = dec(in.LotSizeFilter.MaxMarketOrderQty)
		} else {
			f.step = dec(in.LotSizeFilter.QtyStep)
			f.minQty = dec(in.LotSizeFilter.MinOrderQty)
			f.minNotional = dec(in.LotSizeFilter.MinNotionalValue)
			f.maxMktQty = dec(in.LotSizeFilter.MaxMktOrderQty)
		}
		found = true
	}
	v.filters.Put(symbol, f, found, now)
	return f, found, nil
}

// invalidateFilters makes the next order for symbol refetch its filters:
// Bybit refused an order the cached filters allowed, so they are stale.
func (v *Venue) dropFilters(symbol string) { v.filters.Drop(symbol) }

// lastPrice is the ticker's last traded price (mark price when there is
// none), for a market order's notional.
func (v *Venue) tickerPrice(ctx context.Context, symbol string) (decimal.Decimal, error) {
	var res struct {
		List []struct {
			Symbol    string `json:"symbol"`
			LastPrice string `json:"lastPrice"`
			MarkPrice string `json:"markPrice"`
		} `json:"list"`
	}
	q := url.Values{"category": {string(v.cfg.Market)}, "symbol": {symbol}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/market/tickers", query: q}, &res); err != nil {
		return decimal.Decimal{}, fmt.Errorf("ticker %s: %w", symbol, err)
	}
	for _, t := range res.List {
		if p := dec(t.LastPrice); p.IsPositive() {
			return p, nil
		}
		if p := dec(t.MarkPrice); p.IsPositive() {
			return p, nil
		}
	}
	return decimal.Decimal{}, fmt.Errorf("ticker %s: %w", symbol,
		newAPIError(ClassUnreachable, "/v5/market/tickers", 0, 0, "no price in answer"))
}

// dec parses a Bybit decimal string; "" or garbage is zero.
var dec = venuekit.Dec

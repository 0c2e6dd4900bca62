package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.Sizer = (*Venue)(nil)

// ReadsBalance is true: spot reads the account's free balances, futures
// the USDⓈ-M wallet's available balance.
func (v *Venue) ReadsBalance() bool { return true }

// SizingFacts reads what sizing o needs: the ticker price (for a spot
// market buy the best ask: bestAsk), the free quote balance (spot
// /api/v3/account free, for a spot market buy what it may spend:
// marketBuySpendable; futures /fapi/v2/balance availableBalance), the
// position (futures positionRisk; spot the free base
// asset, the most a close can sell) and the lot rules for o's type. A
// futures account found in hedge mode is refused (ReasonHedgeMode), as
// Place refuses it.
func (v *Venue) SizingFacts(ctx context.Context, o exchange.Order, need exchange.SizingNeed) (exchange.SizingFacts, error) {
	symbol := exchange.VenueSymbol(o.Symbol)
	f, _, err := v.filtersFor(ctx, symbol)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Refused() {
		return exchange.SizingFacts{Refused: apiErr.Msg}, nil
	}
	if err != nil {
		return exchange.SizingFacts{}, asNothingSent(err)
	}
	// A close is always sent as a market order (resolveClose), priced or
	// not: it is sized and split with the market's step, minimum and cap.
	market := o.OrderType == "market" || exchange.IsClose(o.Action)
	out := exchange.SizingFacts{QuoteAsset: f.QuoteAsset, Step: f.StepSize, MinQty: f.MinQty, Tick: f.TickSize}
	if !v.futures() {
		// The coin a spot buy receives: a fee charged in it is not held
		// (an OCO exit sells what the entry received net of it).
		out.BaseAsset = f.BaseAsset
	}
	if market && f.MarketStepSize.GreaterThan(out.Step) {
		out.Step = f.MarketStepSize
	}
	if market && f.MarketMinQty.GreaterThan(out.MinQty) {
		out.MinQty = f.MarketMinQty
	}
	if market {
		out.MaxMarketQty = f.marketMax()
	}
	marketBuy := !v.futures() && o.OrderType == "market" && o.Side == "buy" && !exchange.IsClose(o.Action)
	if need.Price {
		if marketBuy {
			out.Price, err = v.bestAsk(ctx, symbol)
		} else {
			out.Price, err = v.tickerPrice(ctx, symbol)
		}
		if err != nil {
			return out, asNothingSent(err)
		}
	}
	if need.Balance {
		if out.FreeQuote, err = v.freeQuote(ctx, f.QuoteAsset); err != nil {
			return out, asNothingSent(err)
		}
		if marketBuy {
			out.FreeQuote = marketBuySpendable(out.FreeQuote, o.Quantity)
		}
	}
	if need.Position {
		if v.futures() {
			// Binance's time before the read: a close of all of it
			// cancels only the exits created before (closedExits).
			if out.PositionReadAt, err = v.serverTimeAt(ctx, time.Time{}); err != nil {
				return out, asNothingSent(err)
			}
			pos, err := v.position(ctx, symbol)
			if err != nil {
				return out, asNothingSent(err)
			}
			if pos.hedge {
				// The LONG and SHORT entries' sum is no one-way position:
				// a long and a short of one size would read as nothing to
				// close. Place refuses hedge mode; so does sizing.
				out.Refused = ReasonHedgeMode
				return out, nil
			}
			out.Position = pos.amount
		} else if out.Position, err = v.freeBalance(ctx, f.BaseAsset); err != nil {
			return out, asNothingSent(err)
		}
	}
	return out, nil
}

// MarketBuyHeadroomBIPS is what a spot market buy sized from a share of
// the balance leaves unspent, in BIPS (0.01 %) of its cost at the best
// ask: 50, 0.5 % (marketBuySpendable).
const MarketBuyHeadroomBIPS = 50

// bestAsk is the price a spot market buy of symbol is sized by: the best
// ask (GET /api/v3/ticker/bookTicker askPrice, weight 2), where a market
// buy starts filling ("at the best available prices",
// faqs/market_orders_faq.md), not the last trade. Zero when the book has
// no ask: nothing to size a buy by.
func (v *Venue) bestAsk(ctx context.Context, symbol string) (decimal.Decimal, error) {
	var t struct {
		AskPrice decimal.Decimal `json:"askPrice"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/ticker/bookTicker", params: params{}.add("symbol", symbol), weight: 2}
	if err := v.do(ctx, req, &t); err != nil {
		return decimal.Zero, fmt.Errorf("binance: best ask for %s: %w", symbol, err)
	}
	return t.AskPrice, nil
}

// marketBuySpendable is the quote a spot market buy of percent % of the
// free balance free is sized from: free itself, unless percent % of it
// would leave less than MarketBuyHeadroomBIPS of the cost unspent — then
// the share that leaves exactly that (100 %: free ÷ 1.005). Binance
// refuses a market buy whole when the balance cannot pay for all of it
// ("If you do not have sufficient balance for the order to be completely
// filled, the order will be rejected.", faqs/market_orders_faq.md), so a
// buy of the whole balance sized at the ask would be refused whenever the
// ask moved a tick, or the buy took more than the best level, before it
// filled; the headroom absorbs that. A smaller share (50 %) is never near
// the balance and is sized as asked. quoteOrderQty, which spends an
// amount of quote whatever the price, is not used: it leaves the base
// quantity unknown until the fill, and hoox's intent, its lookups
// (origQty against the quantity sent) and the exits placed after the fill
// all work from a base quantity fixed before anything is sent.
func marketBuySpendable(free, percent decimal.Decimal) decimal.Decimal {
	if !percent.IsPositive() {
		return free
	}
	withHeadroom := percent.Mul(decimal.New(10000+MarketBuyHeadroomBIPS, -4))
	return decimal.Min(free, free.Mul(decimal.NewFromInt(100)).Div(withHeadroom))
}

var _ exchange.CloseSplitter = (*Venue)(nil)

// SplitsCloses is true on both markets: Binance refuses a market order
// above MARKET_LOT_SIZE maxQty (and LOT_SIZE maxQty) and does not split
// it, so a close of a larger position must be sent as several orders
// (USDⓈ-M common-definition.md, "MARKET_LOT_SIZE": quantity <= maxQty).
func (v *Venue) SplitsCloses() bool { return true }

// freeQuote is the free balance of asset: spot's free balance, or on
// futures the wallet's availableBalance (Futures Account Balance V2).
func (v *Venue) freeQuote(ctx context.Context, asset string) (decimal.Decimal, error) {
	if !v.futures() {
		return v.freeBalance(ctx, asset)
	}
	var balances []struct {
		Asset            string          `json:"asset"`
		AvailableBalance decimal.Decimal `json:"availableBalance"`
	}
	req := request{method: http.MethodGet, path: "/fapi/v2/balance", params: params{}, signed: true, weight: 5}
	if err := v.do(ctx, req, &balances); err != nil {
		return decimal.Zero, fmt.Errorf("binance: futures balance of %s: %w", asset, err)
	}
	for _, b := range balances {
		if b.Asset == asset {
			return b.AvailableBalance, nil
		}
	}
	return decimal.Zero, nil
}

// asNothingSent marks a failed read as "nothing sent": sizing runs before
// any order is sent, so whatever the read's fate, no order exists.
func asNothingSent(err error) error {
	return fmt.Errorf("%w: %w", exchange.ErrUnreachable, err)
}

var _ exchange.SpotTrader = (*Venue)(nil)

// SpotSymbol names symbol's base asset on spot (exchangeInfo baseAsset),
// for the strategy's spot ledger; futures is not spot.
func (v *Venue) SpotSymbol(ctx context.Context, symbol string) (string, string, bool, error) {
	if v.futures() {
		return "", "", false, nil
	}
	venueSymbol := exchange.VenueSymbol(symbol)
	f, _, err := v.filtersFor(ctx, venueSymbol)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Refused() {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, asNothingSent(err)
	}
	return venueSymbol, f.BaseAsset, f.BaseAsset != "", nil
}

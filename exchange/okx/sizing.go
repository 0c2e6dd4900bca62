package okx

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

var _ exchange.Sizer = (*Venue)(nil)

// ReadsBalance is true: the trading account's availBal is read.
func (v *Venue) ReadsBalance() bool { return true }

// SizingFacts reads what sizing o needs: the ticker's last price, the
// available balance of the quote (spot) or settle (swap) currency, the
// position (swap: the net position converted from contracts; spot: the
// available base currency, which a close sells) and the lot rules, in the
// base currency. A swap account found in hedge mode (long_short_mode) is
// refused (ReasonHedgeMode), as Place refuses it.
//
// For a spot market buy, FreeQuote is what the order may spend: the
// available quote over 1.05, since OKX "reserves/freezes your quote
// currency by an additional 5% for risk check" for a market order
// (Post_Place_Order.md, ordType). hoox sends spot market orders with
// banAmend, so a buy sized from the whole balance would be refused
// (51008), never filled for less.
func (v *Venue) SizingFacts(ctx context.Context, o exchange.Order, need exchange.SizingNeed) (exchange.SizingFacts, error) {
	f, found, err := v.filtersFor(ctx, exchange.VenueSymbol(o.Symbol))
	switch {
	case err != nil:
		return exchange.SizingFacts{}, asUnreachable(err)
	case !found:
		return exchange.SizingFacts{Refused: ReasonUnknownSymbol + ": " + o.Symbol}, nil
	case f.State != "" && f.State != "live":
		return exchange.SizingFacts{Refused: ReasonNotTrading + ": " + f.State}, nil
	}
	out := exchange.SizingFacts{QuoteAsset: f.QuoteCcy, Step: f.Step, MinQty: f.MinQty, Tick: f.TickSize, MaxMarketQty: f.MaxMarketQty}
	if need.Price {
		if out.Price, err = v.lastPrice(ctx, f.InstID); err != nil {
			return out, err
		}
	}
	if need.Balance {
		if out.FreeQuote, err = v.freeBalance(ctx, f.QuoteCcy); err != nil {
			return out, err
		}
		if !v.swap() && o.OrderType == "market" && o.Side == "buy" {
			out.FreeQuote = out.FreeQuote.Div(marketBuyFreeze)
		}
	}
	if need.Position {
		if !v.swap() {
			out.Position, err = v.freeBalance(ctx, f.BaseCcy)
			return out, err
		}
		// In long_short_mode the positions are listed posSide long and
		// short, never net: the net read would say there is nothing to
		// close. Place refuses hedge mode; so does sizing.
		hedge, err := v.hedgeMode(ctx)
		if err != nil {
			return out, err
		}
		if hedge {
			out.Refused = ReasonHedgeMode
			return out, nil
		}
		// OKX's time before the read: a close of all of it cancels only
		// the exits created before (closedExits).
		if out.PositionReadAt, err = v.serverTime(ctx, v.cfg.Now()); err != nil {
			return out, err
		}
		pos, err := v.netPosition(ctx, f.InstID)
		if err != nil {
			return out, err
		}
		out.Position = f.fromWire(pos)
	}
	return out, nil
}

// lastPrice is the instrument's last traded price (GET
// /api/v5/market/ticker).
func (v *Venue) lastPrice(ctx context.Context, instID string) (decimal.Decimal, error) {
	var res []struct {
		InstID string `json:"instId"`
		Last   string `json:"last"`
	}
	q := url.Values{"instId": {instID}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/market/ticker", query: q}, &res); err != nil {
		return decimal.Zero, fmt.Errorf("okx: ticker %s: %w", instID, asUnreachable(err))
	}
	for _, t := range res {
		if t.InstID == instID {
			return venuekit.Dec(t.Last), nil
		}
	}
	return decimal.Zero, fmt.Errorf("okx: ticker %s: not listed: %w", instID, exchange.ErrUnreachable)
}

// marketBuyFreeze is what OKX freezes of a spot market buy's quote cost:
// 5 % more than its size at the last price (Post_Place_Order.md).
var marketBuyFreeze = decimal.RequireFromString("1.05")

var _ exchange.SpotTrader = (*Venue)(nil)

// SpotSymbol names symbol's instrument and base currency on spot
// (instruments baseCcy), for the strategy's spot ledger; swaps are not
// spot.
func (v *Venue) SpotSymbol(ctx context.Context, symbol string) (string, string, bool, error) {
	if v.swap() {
		return "", "", false, nil
	}
	f, found, err := v.filtersFor(ctx, exchange.VenueSymbol(symbol))
	if err != nil {
		return "", "", false, asUnreachable(err)
	}
	return f.InstID, f.BaseCcy, found && f.BaseCcy != "", nil
}

var _ exchange.CloseSplitter = (*Venue)(nil)

// SplitsCloses is true on swaps: OKX takes a market order of at most the
// instrument's maxMktSz ("Max order quantity of a single market order",
// Public_Data / Trading_Account Get_Instruments.md) and refuses a larger
// one (51202 "Market order amount exceeds the maximum amount.",
// Error_Code/Rest_API/Public.md), so hoox splits a close of a larger
// position into reduce-only parts. Spot sells are not split: a spot
// market order is also bounded by maxMktAmt (a USD amount), which one
// quantity cap does not express.
func (v *Venue) SplitsCloses() bool { return v.swap() }

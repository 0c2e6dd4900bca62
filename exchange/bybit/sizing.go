package bybit

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.Sizer = (*Venue)(nil)

// ReadsBalance is true: the unified account's wallet balance is read.
func (v *Venue) ReadsBalance() bool { return true }

// SizingFacts reads what sizing o needs: the ticker's last price, the
// unified wallet's free balance of the quote coin, the position (linear:
// the position list; spot: the free base coin, the most a close can sell)
// and the lot rules. A linear account found in hedge mode is refused
// (ReasonHedgeMode), as Place refuses it.
func (v *Venue) SizingFacts(ctx context.Context, o exchange.Order, need exchange.SizingNeed) (exchange.SizingFacts, error) {
	symbol := exchange.VenueSymbol(o.Symbol)
	f, found, err := v.filtersFor(ctx, symbol)
	switch {
	case err != nil:
		return exchange.SizingFacts{}, asUnreachable(err)
	case !found:
		return exchange.SizingFacts{Refused: ReasonUnknownSymbol + ": " + symbol}, nil
	case f.status != "" && f.status != "Trading":
		return exchange.SizingFacts{Refused: ReasonNotTrading + ": " + f.status}, nil
	}
	out := exchange.SizingFacts{QuoteAsset: f.quoteCoin, Step: f.step, MinQty: f.minQty, Tick: f.tick}
	if o.OrderType == "market" || exchange.IsClose(o.Action) {
		// A close is always sent as a market order (resolveClose), priced
		// or not: it is split at the market cap like one.
		out.MaxMarketQty = f.maxMktQty
	}
	if need.Price {
		if out.Price, err = v.tickerPrice(ctx, symbol); err != nil {
			return out, asUnreachable(err)
		}
	}
	if need.Balance {
		if out.FreeQuote, err = v.freeBalance(ctx, f.quoteCoin); err != nil {
			return out, err
		}
	}
	if need.Position {
		if v.cfg.Market == MarketSpot {
			if out.Position, err = v.freeBalance(ctx, f.baseCoin); err != nil {
				return out, err
			}
			return out, nil
		}
		pos, err := v.readPosition(ctx, symbol)
		if err != nil {
			return out, err
		}
		if pos.hedge {
			// readPosition keeps only the one-way (positionIdx 0) entry:
			// a hedge-mode position would read as nothing to close.
			// Place refuses hedge mode; so does sizing.
			out.Refused = ReasonHedgeMode
			return out, nil
		}
		out.Position = pos.signed()
	}
	return out, nil
}

// partialQty is a percent_of_position exit's size: the share sized before
// the intent, never more than what is held now.
func partialQty(o exchange.Order, held decimal.Decimal) decimal.Decimal {
	if o.Partial {
		return decimal.Min(o.Quantity, held)
	}
	return held
}

var _ exchange.CloseSplitter = (*Venue)(nil)

// SplitsCloses is true: Bybit takes a market order of at most
// lotSizeFilter.maxMktOrderQty on linear ("Maximum quantity for Market
// order") and maxMarketOrderQty on spot ("Maximum Market order quantity",
// docs/v5/market/instrument.mdx), and does not split a larger one — even
// its qty="0" close-on-trigger order closes "up to maxMktOrderQty or
// maxOrderQty" (docs/v5/order/create-order.mdx) — so hoox splits a close
// of a larger position, or a spot close of more coins than one Market
// sell may carry, into parts of at most the cap.
func (v *Venue) SplitsCloses() bool { return true }

var _ exchange.SpotTrader = (*Venue)(nil)

// SpotSymbol names symbol's base coin on spot (instruments-info
// baseCoin), for the strategy's spot ledger; linear is not spot.
func (v *Venue) SpotSymbol(ctx context.Context, symbol string) (string, string, bool, error) {
	if v.cfg.Market != MarketSpot {
		return "", "", false, nil
	}
	venueSymbol := exchange.VenueSymbol(symbol)
	f, found, err := v.filtersFor(ctx, venueSymbol)
	if err != nil {
		return "", "", false, asUnreachable(err)
	}
	return venueSymbol, f.baseCoin, found && f.baseCoin != "", nil
}

package bybit

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.Sizer = (*Venue)(nil)

// ReadsBalance is true: the unified account's wallet balance is read.
func (v *Venue) ReadsBalance() bool { return true }

// SizingFacts reads what sizing o needs: the ticker's last price, the
// unified account's available balance of the quote coin (availableQuote),
// the position (linear: the position list; spot: the free base coin, the
// most a close can sell) and the lot rules. A linear account found in hedge mode is refused
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
		if out.FreeQuote, err = v.availableQuote(ctx, f.quoteCoin); err != nil {
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

// walletCoin is one coin of GET /v5/account/wallet-balance
// (account/wallet-balance.mdx); "" reads as zero.
type walletCoin struct {
	Coin          string `json:"coin"`
	Equity        string `json:"equity"`
	USDValue      string `json:"usdValue"`
	WalletBalance string `json:"walletBalance"`
	// Locked is "Locked balance due to the Spot open order", nothing
	// else.
	Locked     string `json:"locked"`
	SpotBorrow string `json:"spotBorrow"`
	// TotalOrderIM and TotalPositionIM are the initial margin open
	// orders and positions hold in this coin ("" in portfolio margin).
	TotalOrderIM    string `json:"totalOrderIM"`
	TotalPositionIM string `json:"totalPositionIM"`
	Bonus           string `json:"bonus"`
}

// walletAccount is one account of GET /v5/account/wallet-balance.
type walletAccount struct {
	// TotalAvailableBalance is the account's available balance in USD
	// (cross margin: totalMarginBalance − Haircut − totalInitialMargin;
	// portfolio margin: totalEquity − Haircut − totalInitialMargin), ""
	// when Bybit gives none.
	TotalAvailableBalance string       `json:"totalAvailableBalance"`
	Coin                  []walletCoin `json:"coin"`
}

// readWallet reads the unified account's wallet for coin.
func (v *Venue) readWallet(ctx context.Context, coin string) ([]walletAccount, error) {
	var res struct {
		List []walletAccount `json:"list"`
	}
	q := url.Values{"accountType": {"UNIFIED"}, "coin": {coin}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/account/wallet-balance", query: q, private: true}, &res); err != nil {
		return nil, fmt.Errorf("read balance %s: %w", coin, asUnreachable(err))
	}
	return res.List, nil
}

// availableQuote is what an entry may spend of coin, the quote coin: the
// smaller of the two available balances Bybit documents
// (account/wallet-balance.mdx, availableToWithdraw, which is deprecated
// and points to them):
//   - the coin's own, "isolated margin: walletBalance − totalPositionIM −
//     totalOrderIM − locked − bonus", less spotBorrow ("Old walletBalance
//     = New walletBalance − spotBorrow");
//   - the account's totalAvailableBalance (cross and portfolio margin), in
//     USD, converted to the coin at its own rate (usdValue / equity), when
//     Bybit gives both.
//
// locked is only what spot orders hold, so the wallet balance less locked
// (what hoox read before) counted the margin of open positions as free: a
// 100 % entry beside a position holding 900 of 1,000 USDT was sized on
// 1,000. The smaller of the two never asks for more than either margin
// mode has free, whichever the account is in (the wallet answer does not
// say).
//
// Spot buys take the same cap: on a unified account the quote coin's
// wallet is shared with the derivatives, and what their margin holds is
// not spare — a buy above the free part is refused (170131) or, with spot
// margin on, borrowed, a loan nobody asked for.
func (v *Venue) availableQuote(ctx context.Context, coin string) (decimal.Decimal, error) {
	accts, err := v.readWallet(ctx, coin)
	if err != nil {
		return decimal.Zero, err
	}
	var free decimal.Decimal
	found := false
	for _, acct := range accts {
		for _, c := range acct.Coin {
			if c.Coin != coin {
				continue
			}
			avail := dec(c.WalletBalance).Sub(dec(c.SpotBorrow)).Sub(dec(c.Locked)).
				Sub(dec(c.TotalPositionIM)).Sub(dec(c.TotalOrderIM)).Sub(dec(c.Bonus))
			equity, usd := dec(c.Equity), dec(c.USDValue)
			if acct.TotalAvailableBalance != "" && equity.IsPositive() && usd.IsPositive() {
				total := dec(acct.TotalAvailableBalance).Mul(equity).Div(usd)
				avail = decimal.Min(avail, total)
			}
			if !found || avail.LessThan(free) {
				free, found = avail, true
			}
		}
	}
	// Margin in use beyond the wallet (a loss) leaves nothing to spend.
	return decimal.Max(free, decimal.Zero), nil
}

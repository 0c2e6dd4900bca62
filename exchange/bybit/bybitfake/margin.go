package bybitfake

import (
	"github.com/shopspring/decimal"
)

// Margin, as Bybit's unified account reports it (account/wallet-balance.mdx):
// each coin's totalPositionIM ("Sum of initial margin of all positions")
// and totalOrderIM ("Pre-occupied margin for order") are held apart from
// walletBalance, locked is "Locked balance due to the Spot open order"
// only, and what the account can still commit is, per coin,
// "walletBalance − totalPositionIM − totalOrderIM − locked − bonus", or
// account-wide totalAvailableBalance (USD). The fake keeps no entry
// prices: a position's initial margin is its size at the last price over
// the symbol's leverage, an open order's its unfilled quantity at its
// price over the leverage. It keeps no bonus, no haircut and no
// unrealised P&L.

// leverageOf is the linear symbol's leverage (the default until set).
func (s *Server) leverageOf(symbol string) decimal.Decimal {
	if lev := s.leverage[symbol]; lev.IsPositive() {
		return lev
	}
	return decimal.NewFromInt(defaultLeverage)
}

// positionIM is the initial margin the linear positions settled in coin
// hold. s.mu is held.
func (s *Server) positionIM(coin string) decimal.Decimal {
	im := decimal.Zero
	for sym, p := range s.positions {
		in, known := s.instruments[CategoryLinear][sym]
		if !known || in.QuoteCoin != coin || !p.Size.IsPositive() {
			continue
		}
		im = im.Add(p.Size.Mul(s.tickers[CategoryLinear][sym]).Div(s.leverageOf(sym)))
	}
	return im
}

// orderIM is the initial margin open linear orders settled in coin hold: a
// reduce-only order holds none. s.mu is held.
func (s *Server) orderIM(coin string) decimal.Decimal {
	im := decimal.Zero
	for _, o := range s.book {
		if o.Category != CategoryLinear || o.ReduceOnly || !isOpen(o.Status) {
			continue
		}
		if in, known := s.instruments[CategoryLinear][o.Symbol]; !known || in.QuoteCoin != coin {
			continue
		}
		im = im.Add(o.Qty.Sub(o.CumExecQty).Mul(o.Price).Div(s.leverageOf(o.Symbol)))
	}
	return im
}

// available is what the account can still commit of coin, to a linear
// order's margin or a spot buy: the wallet less what spot orders lock and
// what positions and orders hold as margin. s.mu is held.
func (s *Server) available(coin string) decimal.Decimal {
	b := s.balances[coin]
	return b.WalletBalance.Sub(b.Locked).Sub(s.positionIM(coin)).Sub(s.orderIM(coin))
}

// usdValue is amount of coin in USD: stablecoins at 1, other coins at the
// spot ticker against USDT, zero when there is none (Bybit: "If this coin
// cannot be collateral, then it is 0"). s.mu is held.
func (s *Server) usdValue(coin string, amount decimal.Decimal) decimal.Decimal {
	switch coin {
	case "USDT", "USDC":
		return amount
	}
	return amount.Mul(s.tickers[CategorySpot][coin+"USDT"])
}

// openingMargin is the initial margin a linear order of qty at price
// needs: only the part that opens or adds to the position (in one-way
// mode, an order against the position first reduces it).
func (s *Server) openingMargin(symbol, side string, qty, price decimal.Decimal) decimal.Decimal {
	opening := qty
	if p := s.positions[symbol]; p.Size.IsPositive() && p.Side != side {
		opening = decimal.Max(qty.Sub(p.Size), decimal.Zero)
	}
	return opening.Mul(price).Div(s.leverageOf(symbol))
}

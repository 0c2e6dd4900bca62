package exchange

import "strings"

// VenueSymbol turns a symbol as TradingView alerts send it into the form
// Binance and Bybit both use: an exchange prefix ("BINANCE:", "BYBIT:"), a
// perpetual ".P" suffix and the separators "/", "-" and "_" are dropped and
// the rest upper-cased, so BINANCE:BTCUSDT.P and btc/usdt both become
// BTCUSDT.
func VenueSymbol(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSuffix(s, ".P")
	return strings.NewReplacer("/", "", "-", "", "_", "").Replace(s)
}

// SameSymbol reports whether two spellings name one instrument: a signal's
// symbol (BINANCE:BTCUSDT.P, BTC/USDT) and a venue's (BTCUSDT, OKX's
// BTC-USDT-SWAP). The cancel action compares recorded orders with it.
func SameSymbol(a, b string) bool {
	return SymbolKey(a) == SymbolKey(b)
}

// SymbolKey is the one spelling of s's instrument that SameSymbol
// compares: equal keys name one instrument.
func SymbolKey(s string) string {
	return strings.TrimSuffix(VenueSymbol(s), "SWAP")
}

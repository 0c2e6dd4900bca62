// Package venues is the one list of the real venues hoox trades on: for
// each, the exchange name a signal uses, the infix of its HOOX_<ENV>_*
// variables, its testnet, how to build its adapter, and its in-repo fake.
// internal/app builds the configured venues from it, cmd/hoox derives its
// variables, `--help`, `hoox dev --fake-venue` and `hoox bench --venue`
// from it, and the tests run every scenario on every entry.
//
// Adding a venue is one package and one line here; see exchange/README.md.
package venues

import (
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/exchange/venuefake"
)

// Settings are what an operator configures for one venue account.
type Settings struct {
	APIKey, APISecret string
	// Passphrase is the key's passphrase, for a venue whose keys have one
	// (Kind.Passphrase).
	Passphrase string
	// BaseURL is where requests go; "" for the venue's production URL, or
	// its testnet URL with Testnet.
	BaseURL string
	Testnet bool
	// Now is the clock the adapter signs with; time.Now when nil (a drill
	// offsets it: HOOX_DRILL_CLOCK_SKEW).
	Now    func() time.Time
	Logger *slog.Logger
}

// Kind is one real venue (one market of one exchange).
type Kind struct {
	// Name is what a signal's exchange field says.
	Name string
	// Env is the infix of the venue's variables: HOOX_<Env>_API_KEY, …
	Env string
	// Passphrase is set when the venue's API keys come with a passphrase:
	// HOOX_<Env>_API_PASSPHRASE is then required with the key.
	Passphrase bool
	// TestnetURL is the venue's testnet (or demo trading) URL, where test
	// signals go with a testnet key pair.
	TestnetURL string
	// New builds the adapter.
	New func(Settings) (exchange.Venue, error)
	// Positions is set for a derivatives market (futures, linear, swap):
	// it holds positions with a leverage and a position mode, closes are
	// reduce-only, and hoox refuses an account in hedge mode.
	Positions bool
	// Fake is the venue's in-repo fake.
	Fake Fake
}

// Fake says how to run a Kind's fake.
type Fake struct {
	// Server names the fake server the kind is a market of: kinds with the
	// same Server share one running fake, as the real markets share one
	// host (Binance spot and futures are two books of one binancefake).
	Server string
	// Market is the kind's market (or category) at that server.
	Market string
	// Start serves a fake on addr (e.g. "127.0.0.1:0") until Close.
	Start func(addr string) (FakeServer, error)
	// Symbol and Quantity are a symbol the fake lists and a quantity its
	// filters accept as they are (no rounding), for scenarios that compare
	// the order booked with the signal.
	Symbol, Quantity string
}

// FakeServer is a running fake that serves one or more markets.
type FakeServer interface {
	// Venue is one market of the server.
	Venue(market string) venuefake.Fake
	Close()
}

// All is every real venue, in the order --help lists them.
func All() []Kind {
	return []Kind{
		{Name: "binance", Env: "BINANCE", TestnetURL: binance.SpotTestnetBaseURL, New: newBinance(binance.MarketSpot),
			Fake: Fake{Server: "binance", Market: binancefake.MarketSpot, Start: startBinance, Symbol: "BTCUSDT", Quantity: "0.002"}},
		{Name: "binance-futures", Env: "BINANCE_FUTURES", TestnetURL: binance.FuturesTestnetBaseURL, New: newBinance(binance.MarketFutures), Positions: true,
			Fake: Fake{Server: "binance", Market: binancefake.MarketFutures, Start: startBinance, Symbol: "ETHUSDT", Quantity: "0.05"}},
		{Name: "bybit", Env: "BYBIT", TestnetURL: bybit.TestnetBaseURL, New: newBybit(bybit.MarketLinear), Positions: true,
			Fake: Fake{Server: "bybit", Market: bybitfake.CategoryLinear, Start: startBybit, Symbol: "BTCUSDT", Quantity: "0.003"}},
		{Name: "bybit-spot", Env: "BYBIT_SPOT", TestnetURL: bybit.TestnetBaseURL, New: newBybit(bybit.MarketSpot),
			Fake: Fake{Server: "bybit", Market: bybitfake.CategorySpot, Start: startBybit, Symbol: "ETHUSDT", Quantity: "0.0123"}},
		{Name: "okx", Env: "OKX", Passphrase: true, TestnetURL: okx.TestnetBaseURL, New: newOKX(okx.MarketSpot),
			Fake: Fake{Server: "okx", Market: okxfake.InstSpot, Start: startOKX, Symbol: "BTCUSDT", Quantity: "0.002"}},
		{Name: "okx-swap", Env: "OKX_SWAP", Passphrase: true, TestnetURL: okx.TestnetBaseURL, New: newOKX(okx.MarketSwap), Positions: true,
			Fake: Fake{Server: "okx", Market: okxfake.InstSwap, Start: startOKX, Symbol: "ETHUSDT", Quantity: "0.5"}},
	}
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names lists every real venue's name, in All's order.
func Names() []string {
	var out []string
	for _, k := range All() {
		out = append(out, k.Name)
	}
	return out
}

// StartFake starts k's fake on a loopback port for one test; it closes at
// the test's end.
func (k Kind) StartFake(tb testing.TB) venuefake.Fake {
	tb.Helper()
	s, err := k.Fake.Start(net.JoinHostPort("127.0.0.1", "0"))
	if err != nil {
		tb.Fatalf("start the %s fake: %v", k.Name, err)
	}
	tb.Cleanup(s.Close)
	return s.Venue(k.Fake.Market)
}

func newBinance(m binance.Market) func(Settings) (exchange.Venue, error) {
	return func(s Settings) (exchange.Venue, error) {
		return binance.New(binance.Config{Market: m, APIKey: s.APIKey, APISecret: s.APISecret, BaseURL: s.BaseURL, Testnet: s.Testnet, Now: s.Now, Logger: s.Logger})
	}
}

func newBybit(m bybit.Market) func(Settings) (exchange.Venue, error) {
	return func(s Settings) (exchange.Venue, error) {
		return bybit.New(bybit.Config{Market: m, APIKey: s.APIKey, APISecret: s.APISecret, BaseURL: s.BaseURL, Testnet: s.Testnet, Now: s.Now, Logger: s.Logger})
	}
}

func newOKX(m okx.Market) func(Settings) (exchange.Venue, error) {
	return func(s Settings) (exchange.Venue, error) {
		return okx.New(okx.Config{Market: m, APIKey: s.APIKey, APISecret: s.APISecret, Passphrase: s.Passphrase,
			BaseURL: s.BaseURL, Testnet: s.Testnet, Now: s.Now, Logger: s.Logger})
	}
}

func startOKX(addr string) (FakeServer, error) {
	s, err := okxfake.Start(addr, okxfake.Options{})
	if err != nil {
		return nil, fmt.Errorf("okxfake: %w", err)
	}
	return s, nil
}

func startBinance(addr string) (FakeServer, error) {
	s, err := binancefake.Start(addr, binancefake.Options{})
	if err != nil {
		return nil, fmt.Errorf("binancefake: %w", err)
	}
	return s, nil
}

func startBybit(addr string) (FakeServer, error) {
	s, err := bybitfake.Start(addr, bybitfake.Options{})
	if err != nil {
		return nil, fmt.Errorf("bybitfake: %w", err)
	}
	return s, nil
}

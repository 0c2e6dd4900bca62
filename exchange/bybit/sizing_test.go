package bybit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// A percent_of_position exit on a linear account in hedge mode is refused
// as Place refuses hedge mode (ReasonHedgeMode). The position list then
// holds positionIdx 1 (Buy) and 2 (Sell) entries, which the one-way read
// skips: the long once read as no position, and the trader holding it was
// told "no position to close".
func TestLinearHedgeModeSizingSaysHedgeMode(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketLinear)
	ctx := context.Background()
	r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	b.fake.SetHedgeMode(true) // the long is now the hedge-mode Buy side

	o := resolveClose("BTCUSDT", "close")
	o.Quantity = d("50")
	facts, err := b.venue.SizingFacts(ctx, o, exchange.Need(exchange.QuantityPercentOfPosition, o))
	require.NoError(t, err)
	_, _, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, o, facts)
	require.Equal(t, bybit.ReasonHedgeMode, reason)
}

// exchange.SizingFacts.FreeQuote is, on derivatives, "the available margin
// balance" (exchange/sizing.go), and percent_of_balance promises that 100 %
// "never asks for more than the balance" (README, Sizing). Bybit documents
// a unified account's coin walletBalance as the wallet balance, locked as
// "Locked balance due to the Spot open order" only, and the derivatives
// available balance as walletBalance − totalPositionIM − totalOrderIM −
// locked − bonus (isolated) or totalAvailableBalance = totalMarginBalance −
// Haircut − totalInitialMargin (cross) (account/wallet-balance.mdx,
// availableToWithdraw and totalAvailableBalance). The linear adapter reads
// walletBalance − locked − spotBorrow, so the margin an open position holds
// counts as free: a 100 % entry beside a position using 900 of 1,000 USDT
// was sized on 1,000 USDT instead of 100 — ten times what was asked, which
// the signal's leverage then let Bybit accept.
//
// A proxy in front of the fake serves the answer Bybit documents for that
// account, account-wide fields included: 1,000 USDT in the wallet, 900 of
// it the initial margin of an open BTCUSDT position, 100 USD available.
func TestLinearFreeQuoteIsTheAvailableMarginBybitReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	b.fake.SetBalance("USDT", d("1000"))
	b.fake.SetPosition("BTCUSDT", "Buy", d("0.015")) // 900 USDT at 60,000, leverage 1

	var available atomic.Value // the account's totalAvailableBalance, USD
	available.Store("100")
	target, err := url.Parse(b.fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	ptr := &http.Transport{}
	t.Cleanup(ptr.CloseIdleConnections)
	proxy.Transport = ptr
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != bybitfake.PathWallet {
			return nil
		}
		var env map[string]any
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if err := json.Unmarshal(raw, &env); err != nil {
			return err
		}
		res := env["result"].(map[string]any)
		for _, a := range res["list"].([]any) {
			acct := a.(map[string]any)
			acct["accountType"] = "UNIFIED"
			acct["totalWalletBalance"], acct["totalMarginBalance"] = "1000", "1000"
			acct["totalInitialMargin"], acct["totalAvailableBalance"] = "900", available.Load()
			for _, c := range acct["coin"].([]any) {
				coin := c.(map[string]any)
				if coin["coin"] == "USDT" {
					coin["totalPositionIM"], coin["totalOrderIM"], coin["bonus"] = "900", "0", "0"
					coin["equity"], coin["usdValue"] = "1000", "1000"
				}
			}
		}
		out, err := json.Marshal(env)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	cfg := b.cfg
	cfg.BaseURL = srv.URL
	v, err := bybit.New(cfg)
	require.NoError(t, err)

	o := marketOrder("ETHUSDT", "buy", "1")
	facts, err := v.SizingFacts(ctx, o, exchange.SizingNeed{Price: true, Balance: true})
	require.NoError(t, err)
	require.True(t, facts.FreeQuote.LessThanOrEqual(d("100")),
		"free quote for a linear entry is the available margin (100 USDT), not the wallet balance: got %s", facts.FreeQuote)
	require.Equal(t, "100", facts.FreeQuote.String())

	// In cross margin the account-wide figure binds when it is the smaller
	// (another coin's loss, a haircut): 40 USD is 40 USDT at USDT's own
	// rate (usdValue / equity).
	available.Store("40")
	facts, err = v.SizingFacts(ctx, o, exchange.SizingNeed{Price: true, Balance: true})
	require.NoError(t, err)
	require.Equal(t, "40", facts.FreeQuote.String())
}

// The fake holds margin as Bybit documents it (bybitfake margin.go): a
// position's and an open order's initial margin are not free, for a linear
// entry nor for a spot buy on the same unified account. A 100 % entry is
// sized on what is left and accepted; one sized on the wallet balance is
// refused (110007 / 170131) — or, on spot with margin trading on, would be
// a loan nobody asked for.
func TestFreeQuoteExcludesTheMarginOfPositionsAndOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		b.fake.SetBalance("USDT", d("2000"))
		b.fake.SetLeverage("BTCUSDT", 1)
		b.fake.SetPosition("BTCUSDT", "Buy", d("0.015")) // 900 USDT of margin at 60,000
		want := "1100"
		if c == bybit.MarketLinear {
			// A resting linear order holds margin too: 0.002 BTC at
			// 50,000 and leverage 1 is 100 USDT.
			r, err := b.venue.Place(ctx, limitOrder("BTCUSDT", "buy", "0.002", "50000"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
			want = "1000"
		}

		o := marketOrder("ETHUSDT", "buy", "100")
		o.Leverage = 1
		need := exchange.Need(exchange.QuantityPercentOfBalance, o)
		facts, err := b.venue.SizingFacts(ctx, o, need)
		require.NoError(t, err)
		require.Equal(t, want, facts.FreeQuote.String())
		sized, _, reason := exchange.Resolve(exchange.QuantityPercentOfBalance, o, facts)
		require.Empty(t, reason)
		r, err := b.venue.Place(ctx, sized)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, "a 100 %% entry sized on the free margin fits: %s", r.Reason)

		// Sized on the wallet balance, as before, it does not.
		over := marketOrder("ETHUSDT", "buy", "0.66") // 2,000 USDT at 3,000
		over.Leverage = 1
		r, err = b.venue.Place(ctx, over)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "nsufficient")
	})
}

package binance_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// TestLostAnswerAfterAcceptIsUnknownAndLookupFindsIt: a 5xx (with or
// without Binance's -1007 body) or a dropped connection after Binance took
// the order is ErrUnknownOutcome, never ErrUnreachable, and the order is
// found by a later lookup.
func TestLostAnswerAfterAcceptIsUnknownAndLookupFindsIt(t *testing.T) {
	t.Parallel()
	kinds := map[string]binancefake.FaultKind{
		"502":     binancefake.FaultServerErrorAfterAccept,
		"-1007":   binancefake.FaultUnknownAfterAccept,
		"dropped": binancefake.FaultDropAfterAccept,
		"timeout": binancefake.FaultHangAfterAccept,
	}
	for _, m := range markets {
		for name, kind := range kinds {
			t.Run(string(m)+"/"+name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, m)
				ctx := context.Background()
				b.fake.Inject(binancefake.Fault{Kind: kind})
				o := marketOrder("buy", "0.01")
				placeCtx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if kind == binancefake.FaultHangAfterAccept {
					// The caller gives up once the fake holds the order.
					go func() {
						for b.fake.Placements(o.ClientOrderID) == 0 && placeCtx.Err() == nil {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				_, err := b.venue.Place(placeCtx, o)
				b.requireUnknownOnce(t, err, o)

				r, err := b.venue.Lookup(ctx, o)
				require.NoError(t, err)
				require.Equal(t, exchange.StatusFilled, r.Status)

				// The gateway's retry adopts it rather than placing again.
				b.requireAdopted(t, ctx, o, true)
				require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
			})
		}
	}
}

func TestConnectionRefusedIsUnreachable(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot)
	ctx := context.Background()
	_, err := b.venue.Place(ctx, marketOrder("buy", "0.01")) // time and filters cached
	require.NoError(t, err)
	b.fake.Close()

	_, err = b.venue.Place(ctx, marketOrder("buy", "0.01"))
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
	_, err = b.venue.Lookup(ctx, marketOrder("buy", "0.01"))
	require.ErrorIs(t, err, exchange.ErrUnreachable)
}

// TestRateLimitedIsUnreachableAndPauses: 429 and 418 refuse the order
// before accepting it (ErrUnreachable, nothing in the book), and the venue
// sends nothing more until Retry-After has passed.
func TestRateLimitedIsUnreachableAndPauses(t *testing.T) {
	t.Parallel()
	for name, kind := range map[string]binancefake.FaultKind{"429": binancefake.FaultRateLimit, "418": binancefake.FaultBan} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			ctx := context.Background()
			b.fake.Inject(binancefake.Fault{Kind: kind, RetryAfter: 30 * time.Second})
			o := marketOrder("buy", "0.01")
			_, err := b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
			sent := b.fake.Requests(b.path)

			_, err = b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			_, err = b.venue.Lookup(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.Equal(t, sent, b.fake.Requests(b.path), "nothing sent while Binance asked for silence")

			b.clock.Advance(31 * time.Second)
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
		})
	}
}

// TestWeightBudget: once X-MBX-USED-WEIGHT-1M says the budget is spent, the
// venue holds requests until the next minute; when the caller's deadline
// comes first it fails fast with ErrUnreachable, sending nothing.
func TestWeightBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot, func(c *binance.Config) { c.WeightBudget = 1000 })
	ctx := context.Background()
	_, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
	require.NoError(t, err)
	b.fake.SetUsedWeight(1000)
	_, err = b.venue.Lookup(ctx, marketOrder("buy", "0.01")) // reads the header
	require.ErrorIs(t, err, exchange.ErrNotFound)

	sent := b.fake.Requests(b.path)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = b.venue.Place(short, marketOrder("buy", "0.01"))
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, sent, b.fake.Requests(b.path))

	b.clock.Advance(time.Minute)
	_, err = b.venue.Place(short, marketOrder("buy", "0.01"))
	require.NoError(t, err)
}

// TestLookupLag: an order the query does not show yet is ErrNotFound, then
// found once the lag has passed; AcceptWindow covers such a lag.
func TestLookupLag(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		b.fake.SetLookupLag(5 * time.Second)
		b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultDropAfterAccept})
		o := marketOrder("buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

		_, err = b.venue.Lookup(ctx, o)
		require.ErrorIs(t, err, exchange.ErrNotFound)
		require.Greater(t, b.venue.AcceptWindow(), 5*time.Second)

		b.clock.Advance(6 * time.Second)
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// TestClockSkew: when Binance's clock moves away from the offset the venue
// measured, the order is refused with -1021 (ErrUnreachable: nothing
// placed), the offset is resynced, and the next order goes through.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		// Skewed from the start: the first order syncs before signing.
		b.fake.Advance(-time.Hour)
		_, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)

		b.fake.Advance(time.Hour + 30*time.Second)
		o := marketOrder("buy", "0.01")
		_, err = b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.NotErrorIs(t, err, exchange.ErrCredentials)
		require.ErrorContains(t, err, "-1021")
		require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))

		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Contains(t, b.logs.String(), "clock skew")
	})
}

// TestCredentials: a wrong secret (-1022), a wrong key (-2015) and a key
// without permission (-2015 on the order) are ErrUnreachable and
// ErrCredentials, place nothing, and are logged for the operator without
// the secret.
func TestCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, m := range markets {
		t.Run(string(m)+"/wrong secret", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m, func(c *binance.Config) { c.APISecret = "not-the-secret-at-all" })
			o := marketOrder("buy", "0.01")
			_, err := b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.ErrorIs(t, err, exchange.ErrCredentials)
			require.ErrorContains(t, err, "-1022")
			require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
			logs := b.logs.String()
			require.Contains(t, logs, "whitelist")
			require.NotContains(t, logs, "not-the-secret-at-all")
			require.NotContains(t, err.Error(), "not-the-secret-at-all")
			require.NotContains(t, err.Error(), "signature=")
		})
		t.Run(string(m)+"/wrong key", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m, func(c *binance.Config) { c.APIKey = "someone-elses-key" })
			_, err := b.venue.Lookup(ctx, marketOrder("buy", "0.01"))
			require.ErrorIs(t, err, exchange.ErrCredentials)
			require.ErrorContains(t, err, "-2015")
			require.NotContains(t, b.logs.String(), "someone-elses-key")
		})
		t.Run(string(m)+"/no permission", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultCredentials})
			o := marketOrder("buy", "0.01")
			_, err := b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.ErrorIs(t, err, exchange.ErrCredentials)
			require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
			require.False(t, strings.Contains(b.logs.String(), b.fake.APISecret()))

			// Fixed: the same signal now executes.
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
		})
	}
}

// TestConcurrentPlacements: the venue is shared by every signal in flight.
func TestConcurrentPlacements(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		const n = 16
		errs := make(chan error, n)
		for i := range n {
			go func() {
				o := marketOrder("buy", "0.01")
				o.Leverage = 1 + i%3
				r, err := b.venue.Place(ctx, o)
				if err == nil && r.Status != exchange.StatusFilled {
					err = errors.New("not filled: " + r.Reason)
				}
				errs <- err
			}()
		}
		for range n {
			require.NoError(t, <-errs)
		}
		require.Len(t, b.fake.Orders(), n)
	})
}

// TestTradingDisabledIsACredentialsError: -2010 with "This account may not
// place or cancel orders.", "Rest API trading is not enabled." or "This
// action is disabled on this account." (errors.md) refuses the order
// unexecuted for a reason the operator fixes, not the signal: 503 with
// ErrCredentials (the operator is told), never a rejection that uses the
// signal up; once trading is enabled the same signal executes.
func TestTradingDisabledIsACredentialsError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, m := range markets {
		for _, msg := range []string{binancefake.MsgAccountCannotTrade, binancefake.MsgRestTradingDisabled, binancefake.MsgActionDisabled} {
			t.Run(string(m)+"/"+msg, func(t *testing.T) {
				t.Parallel()
				b := setup(t, m)
				b.fake.DisableTrading(msg)
				o := marketOrder("buy", "0.01")
				r, err := b.venue.Place(ctx, o)
				require.ErrorIs(t, err, exchange.ErrUnreachable, "report %+v", r)
				require.ErrorIs(t, err, exchange.ErrCredentials)
				require.ErrorContains(t, err, msg)
				require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
				require.Contains(t, b.logs.String(), "binance refused the api credentials")

				b.fake.DisableTrading("")
				r, err = b.venue.Place(ctx, o)
				require.NoError(t, err)
				require.Equal(t, exchange.StatusFilled, r.Status)
			})
		}
	}
}

// TestAnswerWithoutBinanceBodyAfterAcceptIsUnknown: a 4xx that is not
// Binance's error body — a bare 408 from a gateway that gave up waiting
// for the matching engine (USDⓈ-M general-info, "HTTP Return Codes"), or
// any other status a proxy answers with — comes after the request was
// written and may follow an order Binance holds. It is ErrUnknownOutcome,
// never "nothing sent": a resend after a rollback would place the same
// client order ID a second time (Binance accepts it again once the first
// market order has filled).
func TestAnswerWithoutBinanceBodyAfterAcceptIsUnknown(t *testing.T) {
	t.Parallel()
	for _, m := range markets {
		for _, status := range []int{http.StatusRequestTimeout, http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict} {
			t.Run(string(m)+"/"+strconv.Itoa(status), func(t *testing.T) {
				t.Parallel()
				b := setup(t, m)
				ctx := context.Background()
				b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultBareStatusAfterAccept, HTTPStatus: status})
				o := marketOrder("buy", "0.01")
				r, err := b.venue.Place(ctx, o)
				b.requireUnknownOnce(t, err, o, "report %+v", r)

				// The reconcile finds and adopts it: one order, not two.
				r = b.requireAdopted(t, ctx, o, true)
				require.Equal(t, exchange.StatusFilled, r.Status)
				require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
			})
		}
	}
}

// TestUnlistedCodeAfterAcceptIsUnknown: an error code hoox does not table,
// in a 4xx answer to a placement, proves nothing about the order: Binance
// adds codes, and one may come after the order exists. It is reconciled
// (ErrUnknownOutcome), never recorded as refused for good (a 422 that
// would leave an order hoox does not know of).
func TestUnlistedCodeAfterAcceptIsUnknown(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultCodeAfterAccept, Code: -1099, Msg: "Not found, unauthenticated, or unauthorized."})
		o := marketOrder("buy", "0.01")
		r, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome, "report %+v", r)
		require.NotErrorIs(t, err, exchange.ErrUnreachable)
		require.ErrorContains(t, err, "-1099")
		require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))

		r = b.requireAdopted(t, ctx, o, true)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// TestWAFRefusalIsUnreachable: a bare 403 is Binance's WAF refusing the
// request before it reaches the API (rest-api.md, "HTTP Return Codes"):
// nothing was placed.
func TestWAFRefusalIsUnreachable(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot)
	ctx := context.Background()
	target, err := url.Parse(b.fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	waf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == b.path {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(waf.Close)
	cfg := b.cfg
	cfg.BaseURL = waf.URL
	v, err := binance.New(cfg)
	require.NoError(t, err)
	o := marketOrder("buy", "0.01")
	_, err = v.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
	require.ErrorContains(t, err, "403")
	require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
}

// TestServerErrorCarryingReduceOnlyRefusalIsUnknown: a 5xx leaves the
// execution status unknown whatever code it carries ("could have been a
// success", rest-api.md and USDⓈ-M general-info, "HTTP Return Codes"). A
// close answered 503 with -2022 ("ReduceOnly Order is rejected.") may have
// filled, so it is reconciled, never taken for the refusal that makes the
// adapter cancel resting reduce-only orders and send the close again: once
// the first close filled, Binance takes its ID again, and the second close,
// finding no position, would be refused and recorded as the close's outcome
// (422 for a close that filled).
func TestServerErrorCarryingReduceOnlyRefusalIsUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.5"))
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultCodeAfterAccept, HTTPStatus: http.StatusServiceUnavailable,
		Code: -2022, Msg: "ReduceOnly Order is rejected."})
	o := closeOrder("close_long")
	r, err := b.venue.Place(ctx, o)
	require.True(t, b.fake.Position("BTCUSDT").IsZero(), "the first close filled")
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome, "a 5xx answer is unknown; got report %+v", r)
	require.Equal(t, 1, b.fake.Placements(o.ClientOrderID), "never sent again on a 5xx")
}

// TestServerErrorCarryingBadSymbolIsNotNotFound: Lookup reads -1121
// ("Invalid symbol.") as "no such order", since no order can exist on a
// symbol Binance does not list — but only when Binance refused the query.
// The same code in a 5xx proves nothing, and a "not found" there would let
// the sweeper settle an order that exists as never placed.
func TestServerErrorCarryingBadSymbolIsNotNotFound(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := marketOrder("buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)

		target, err := url.Parse(b.fake.URL)
		require.NoError(t, err)
		proxy := httputil.NewSingleHostReverseProxy(target)
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == b.path {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"code":-1121,"msg":"Invalid symbol."}`))
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(failing.Close)
		cfg := b.cfg
		cfg.BaseURL = failing.URL
		v, err := binance.New(cfg)
		require.NoError(t, err)

		_, err = v.Lookup(ctx, o)
		require.Error(t, err)
		require.NotErrorIs(t, err, exchange.ErrNotFound, "the order exists; a 5xx cannot prove otherwise")
		require.ErrorContains(t, err, "-1121")
	})
}

// TestBanWithoutRetryAfterPausesUntilTheBanEnds: USDⓈ-M documents a ban
// by its message, -1003 "Way too many requests; IP banned until %s."
// (error-code.md), not by a Retry-After header (general-info.md "LIMITS"
// promises none), and bans "scale in duration for repeat offenders, from
// 2 minutes to 3 days" for "failing to back off". The venue sends
// nothing until the time the message names, not for one second only.
func TestBanWithoutRetryAfterPausesUntilTheBanEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	ctx := context.Background()
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultBan, BanMessage: true, RetryAfter: 2 * time.Minute})
	o := marketOrder("buy", "0.01")
	_, err := b.venue.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	sent := b.fake.Requests(b.path)

	b.clock.Advance(time.Minute)
	_, err = b.venue.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, sent, b.fake.Requests(b.path), "nothing sent to Binance while the IP is banned")

	b.clock.Advance(61 * time.Second)
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
}

package binance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// Path: client.go rateLimited → bannedUntil. A 418 whose -1003 message
// names a ban end far past anything Binance documents ("from 2 minutes to
// 3 days", general-info.md "LIMITS") — a malformed time, a unit change —
// pauses every request of the venue until then: this process sends no
// order (every signal 503, every exit and follow look unreachable) for
// 30 days, until a restart. The pause should be bounded by the longest
// documented ban.
func TestBanPauseIsBoundedByTheLongestDocumentedBan(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	ctx := context.Background()
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultBan, BanMessage: true, RetryAfter: 30 * 24 * time.Hour})
	o := marketOrder("buy", "0.01")
	_, err := b.venue.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)

	b.clock.Advance(3*24*time.Hour + time.Minute)
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err, "three days and a minute after a ban the venue still sends nothing: the ban's end was taken as is (30 days)")
	require.Equal(t, exchange.StatusFilled, r.Status)
}

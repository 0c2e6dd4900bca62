package gateway_test

import (
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// futuresVia is a gateway on pool (dbURL's database) whose binance-futures
// account is fake's USDⓈ-M market, reached through rt (a test's hold or
// hook on the wire), closed when the test ends; and that venue.
func futuresVia(t *testing.T, dbURL string, pool *pgxpool.Pool, fake *binancefake.Server, rt http.RoundTripper) (*gateway.Service, *binance.Venue) {
	t.Helper()
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL,
		HTTPClient: &http.Client{Transport: rt}})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue})
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, dbURL), Venues: reg})
	t.Cleanup(svc.Close)
	return svc, venue
}

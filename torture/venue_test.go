package torture

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// venueSim is a sim with only the run's Binance fake (HXUSDT at 1, as
// setup makes it) and a history clock: what the checker's reading of the
// book and the price moves need.
func venueSim(t *testing.T) *sim {
	t.Helper()
	d := decimal.RequireFromString
	hx := binancefake.Symbol{Symbol: symbol, Base: "HX", Quote: "USDT", StepSize: d("1"), MinQty: d("1"), MaxQty: d("100000000"),
		TickSize: d("0.0001"), MinPrice: d("0.0001"), MaxPrice: d("1000"), MinNotional: d("5"), ApplyMinToMarket: true, Price: d("1")}
	f := binancefake.New(t, binancefake.Options{Symbols: []binancefake.Symbol{hx},
		Balances: map[string]decimal.Decimal{"USDT": d("1000000"), "HX": d("1000000")}, FuturesWallet: d("1000000")})
	return &sim{cfg: Config{TimeScale: 1}, h: &history{start: time.Now()}, binance: f, triggered: map[string]time.Duration{}}
}

// call sends one signed request to the fake and fails the test unless it
// answers 200.
func call(t *testing.T, f *binancefake.Server, method, path, params string) {
	t.Helper()
	q := params + "&recvWindow=5000&timestamp=" + strconv.FormatInt(f.Now().UnixMilli(), 10)
	q += "&signature=" + binance.Sign(f.APISecret(), q)
	req, err := http.NewRequestWithContext(context.Background(), method, f.URL+path+"?"+q, nil)
	require.NoError(t, err)
	req.Header.Set("X-MBX-APIKEY", f.APIKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %v", method, path, out)
}

// The checker reads a resting limit entry's fill where the venue made it
// (after a market order booked later), and the market order a triggered
// take-profit became as that exit's, not as an order of its own; the
// price move records when each resting order executed.
func TestCheckerReadsLimitFillsAndTriggeredExitsFromTheBook(t *testing.T) {
	t.Parallel()
	s := venueSim(t)
	f := s.binance
	call(t, f, http.MethodPost, "/fapi/v1/order", "symbol=HXUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=20&price=0.9900&newClientOrderId=limitbuy")
	call(t, f, http.MethodPost, "/fapi/v1/order", "symbol=HXUSDT&side=SELL&type=MARKET&quantity=30&newClientOrderId=marketsell")
	s.movePrice("0.9800") // the limit buy fills: a short of 10 is left
	call(t, f, http.MethodPost, "/fapi/v1/algoOrder",
		"algoType=CONDITIONAL&symbol=HXUSDT&side=BUY&type=TAKE_PROFIT_MARKET&quantity=10&triggerPrice=0.9700&reduceOnly=true&clientAlgoId=shorttp")
	s.movePrice("0.9650")

	orders := s.binanceOrders()
	by := map[string]venueOrder{}
	var triggered []venueOrder
	for _, o := range orders {
		if o.Triggered != "" {
			triggered = append(triggered, o)
			continue
		}
		by[o.ClientOrderID] = o
	}
	require.True(t, by["limitbuy"].Limit)
	require.Greater(t, by["limitbuy"].FillSeq, by["marketsell"].FillSeq, "the limit filled after the market order booked after it")
	require.Len(t, triggered, 1)
	require.Equal(t, "shorttp", triggered[0].Triggered)
	require.Equal(t, "take_profit", by["shorttp"].Exit)
	require.True(t, executed(by["shorttp"]).Equal(decimal.NewFromInt(10)), "the exit executed what its market order did")

	var replay []string
	for _, o := range positionFills(orders)[symbol] {
		replay = append(replay, o.ClientOrderID)
	}
	require.Equal(t, []string{"marketsell", "limitbuy", triggered[0].ClientOrderID}, replay, "fills in the order the venue made them")
	require.Contains(t, s.triggered, "limitbuy")
	require.Contains(t, s.triggered, "shorttp")
	require.Less(t, s.triggered["limitbuy"], s.triggered["shorttp"])
	require.True(t, f.Position(symbol).IsZero())

	var moves []string
	for _, e := range s.h.events() {
		if strings.HasPrefix(e.Kind, "resting_executed") {
			moves = append(moves, e.Detail)
		}
	}
	require.Len(t, moves, 2)
}

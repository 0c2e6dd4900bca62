package binancefake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// post sends a signed order with params split between the query string and
// the body, signed over both as Binance documents.
func post(t *testing.T, s *binancefake.Server, query, body, secret string) (int, map[string]any) {
	t.Helper()
	sig := binance.Sign(secret, query+body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+"/api/v3/order?"+query, strings.NewReader(body+"&signature="+sig))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-MBX-APIKEY", s.APIKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

func TestSignatureOverQueryAndBody(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
	query := "symbol=BTCUSDT&side=BUY&type=MARKET"
	body := "quantity=0.01&newClientOrderId=abc&recvWindow=5000&timestamp=" + ts

	status, out := post(t, s, query, body, "wrong")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1022, out["code"])
	require.Equal(t, 0, s.Placements("abc"))

	status, out = post(t, s, query, body, s.APISecret())
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "FILLED", out["status"])
	require.Equal(t, 1, s.Placements("abc"))
}

func TestTimestampWindow(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	for _, skew := range []time.Duration{-6 * time.Second, 2 * time.Second} {
		ts := strconv.FormatInt(s.Now().Add(skew).UnixMilli(), 10)
		status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&recvWindow=5000&timestamp="+ts, s.APISecret())
		require.Equal(t, http.StatusBadRequest, status)
		require.EqualValues(t, -1021, out["code"], skew)
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	s, err := binancefake.Start("127.0.0.1:0", binancefake.Options{})
	require.NoError(t, err)
	resp, err := http.Get(s.URL + "/fapi/v1/time")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// The matching engine checks the timestamp a second time (rest-api.md,
// "Timing security"): an order whose recvWindow ran out while it was being
// processed is refused unexecuted, -1021 on spot, -5028 on futures.
func TestMatchingEngineRechecksTimestamp(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	s := binancefake.New(t, binancefake.Options{Now: clock, Sleep: advance})
	s.SetMatchingDelay(4 * time.Second)
	ts := func() string { return strconv.FormatInt(s.Now().UnixMilli(), 10) }

	status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&newClientOrderId=in-time&recvWindow=5000&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusOK, status, out)

	status, out = post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&newClientOrderId=late&recvWindow=3000&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1021, out["code"])
	require.Equal(t, 0, s.Placements("late"))

	log := s.RequestLog("/api/v3/order")
	require.Len(t, log, 2)
	require.Equal(t, 3*time.Second, log[1].RecvWindow)
	require.False(t, log[1].Timestamp.IsZero())
}

// Binance spot takes its commission out of what an order receives (the
// base asset of a buy, the quote of a sell) unless BNB pays it, and the
// FULL response reports it per fill (faqs/commission_faq.md, rest-api.md
// fills[].commission/commissionAsset).
func TestSpotCommissionIsTakenFromTheReceivedAssetAndReported(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	s.SetSpotCommission(decimal.RequireFromString("0.001"))
	ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
	status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET&newOrderRespType=FULL",
		"quantity=0.010&newClientOrderId=fee1&recvWindow=5000&timestamp="+ts, s.APISecret())
	require.Equal(t, http.StatusOK, status, out)
	fills, _ := out["fills"].([]any)
	require.Len(t, fills, 2)
	total := decimal.Zero
	for _, f := range fills {
		fill := f.(map[string]any)
		require.Equal(t, "BTC", fill["commissionAsset"])
		total = total.Add(decimal.RequireFromString(fill["commission"].(string)))
	}
	require.Equal(t, "0.00001", total.String(), "0.1 %% of the 0.010 BTC received")
	require.Equal(t, "0.00999", s.Balance("BTC").String(), "the account received the quantity less the commission")
}

// MARKET_LOT_SIZE maxQty caps a market order on both markets (futures
// -4005, spot -1013 MARKET_LOT_SIZE); a limit order is held to LOT_SIZE
// only. A close of a larger position must therefore be split.
func TestMarketOrderAboveMarketMaxQtyIsRefused(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	d := decimal.RequireFromString
	s.SetSymbol(binancefake.Symbol{Symbol: "ETHUSDT", Base: "ETH", Quote: "USDT",
		StepSize: d("0.01"), MinQty: d("0.01"), MaxQty: d("10000"), MarketMaxQty: d("100"),
		TickSize: d("0.01"), MinPrice: d("0.01"), MaxPrice: d("100000"), Price: d("3000")})
	s.SetPosition("ETHUSDT", d("250"))
	place := func(path, params string) (int, map[string]any) {
		t.Helper()
		ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
		body := params + "&recvWindow=5000&timestamp=" + ts
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+path,
			strings.NewReader(body+"&signature="+binance.Sign(s.APISecret(), body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-MBX-APIKEY", s.APIKey())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	status, out := place("/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=250&reduceOnly=true&newClientOrderId=big")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -4005, out["code"], out)
	require.True(t, s.Position("ETHUSDT").Equal(d("250")), "nothing executed")
	status, out = place("/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=100&reduceOnly=true&newClientOrderId=part")
	require.Equal(t, http.StatusOK, status, out)
	require.True(t, s.Position("ETHUSDT").Equal(d("150")))
	status, out = place("/api/v3/order", "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=101&newClientOrderId=spotbig")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1013, out["code"], out)
	require.Equal(t, "Filter failure: MARKET_LOT_SIZE", out["msg"])
	status, out = place("/api/v3/order", "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&price=2000&quantity=101&newClientOrderId=spotlimit")
	require.Equal(t, http.StatusOK, status, out)
}

// A reduce-only order that, with the reduce-only orders resting on its
// side, would reduce more than the position is refused -2022; once the
// resting ones are cancelled (DELETE /fapi/v1/order, listed by GET
// /fapi/v1/openOrders) it is accepted.
func TestRestingReduceOnlyOrdersBlockAReduceOnlyClose(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	s.SetPosition("ETHUSDT", decimal.RequireFromString("10"))
	call := func(method, path, params string) (int, any) {
		t.Helper()
		ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
		q := params + "&recvWindow=5000&timestamp=" + ts
		q += "&signature=" + binance.Sign(s.APISecret(), q)
		req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path+"?"+q, nil)
		require.NoError(t, err)
		req.Header.Set("X-MBX-APIKEY", s.APIKey())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	status, out := call(http.MethodPost, "/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&price=4000&quantity=10&reduceOnly=true&newClientOrderId=tp")
	require.Equal(t, http.StatusOK, status, out)
	status, out = call(http.MethodPost, "/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=10&reduceOnly=true&newClientOrderId=close")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -2022, out.(map[string]any)["code"], out)

	status, out = call(http.MethodGet, "/fapi/v1/openOrders", "symbol=ETHUSDT")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, out, 1)
	status, _ = call(http.MethodDelete, "/fapi/v1/order", "symbol=ETHUSDT&origClientOrderId=tp")
	require.Equal(t, http.StatusOK, status)
	status, out = call(http.MethodDelete, "/fapi/v1/order", "symbol=ETHUSDT&origClientOrderId=tp")
	require.Equal(t, http.StatusBadRequest, status, "a cancelled order cannot be cancelled again")
	require.EqualValues(t, -2011, out.(map[string]any)["code"])

	status, out = call(http.MethodPost, "/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=10&reduceOnly=true&newClientOrderId=close")
	require.Equal(t, http.StatusOK, status, out)
	require.True(t, s.Position("ETHUSDT").IsZero())
}

// USDⓈ-M takes conditional orders (take-profit, stop) only through the
// Algo Order API: the plain order endpoint answers -4120; the algo
// endpoint accepts them unless the last price already reached the
// trigger (-2021), and finds them again by clientAlgoId.
func TestConditionalOrdersGoThroughTheAlgoOrderAPI(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01
	call := func(method, path, params string) (int, map[string]any) {
		t.Helper()
		return signedJSON(t, s, method, path, params)
	}
	status, out := call(http.MethodPost, "/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=TAKE_PROFIT_MARKET&stopPrice=3300&quantity=1&reduceOnly=true&newClientOrderId=tp")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -4120, out["code"], out)

	status, out = call(http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=TAKE_PROFIT_MARKET&triggerPrice=2900&quantity=1&reduceOnly=true&clientAlgoId=tp")
	require.Equal(t, http.StatusBadRequest, status, "a sell take-profit below the last price would fire at once")
	require.EqualValues(t, -2021, out["code"], out)
	status, out = call(http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=STOP_MARKET&triggerPrice=3100&quantity=1&reduceOnly=true&clientAlgoId=sl")
	require.Equal(t, http.StatusBadRequest, status, "a sell stop above the last price would fire at once")
	require.EqualValues(t, -2021, out["code"], out)

	status, out = call(http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=TAKE_PROFIT_MARKET&triggerPrice=3300&quantity=1&reduceOnly=true&clientAlgoId=tp")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "NEW", out["algoStatus"])
	status, out = call(http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "3300", out["triggerPrice"])
	status, out = call(http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=nope")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -2013, out["code"])
	require.Len(t, s.AlgoOrders(), 1)
}

// An algo order is cancelled through DELETE /fapi/v1/algoOrder by
// clientAlgoId or algoId (trade/rest-api/Cancel-Algo-Order.md: the answer
// is algoId, clientAlgoId, code "200", msg "success"); the query then shows
// it CANCELED. One no longer active — already cancelled, or never placed —
// is refused -2011 "Unknown order sent." (error-code.md, CANCEL_REJECTED).
func TestAlgoOrderCancelThroughTheAlgoOrderAPI(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01
	call := func(method, path, params string) (int, map[string]any) {
		t.Helper()
		return signedJSON(t, s, method, path, params)
	}
	status, placed := call(http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=TAKE_PROFIT_MARKET&triggerPrice=3300&quantity=1&reduceOnly=true&clientAlgoId=tp")
	require.Equal(t, http.StatusOK, status, placed)
	status, out := call(http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=STOP_MARKET&triggerPrice=2700&quantity=1&reduceOnly=true&clientAlgoId=sl")
	require.Equal(t, http.StatusOK, status, out)
	slID := strconv.FormatInt(int64(out["algoId"].(float64)), 10)

	status, out = call(http.MethodDelete, "/fapi/v1/algoOrder", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1102, out["code"], out)

	status, out = call(http.MethodDelete, "/fapi/v1/algoOrder", "clientAlgoId=tp")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, map[string]any{"algoId": placed["algoId"], "clientAlgoId": "tp", "code": "200", "msg": "success"}, out)
	status, out = call(http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "CANCELED", out["algoStatus"], "the query shows it cancelled")

	status, out = call(http.MethodDelete, "/fapi/v1/algoOrder", "clientAlgoId=tp")
	require.Equal(t, http.StatusBadRequest, status, "a cancelled algo order cannot be cancelled again")
	require.EqualValues(t, -2011, out["code"], out)
	status, out = call(http.MethodDelete, "/fapi/v1/algoOrder", "clientAlgoId=nope")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -2011, out["code"], out)

	status, out = call(http.MethodDelete, "/fapi/v1/algoOrder", "algoId="+slID)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "sl", out["clientAlgoId"])
	for _, a := range s.AlgoOrders() {
		require.Equal(t, "CANCELED", a.Status, a.ClientAlgoID)
	}
}

// A trailing stop is a TRAILING_STOP_MARKET algo order
// (trade/rest-api/New-Algo-Order.md): its callbackRate is a percent
// within [0.1, 10], it has no triggerPrice, and an activatePrice the last
// price has already passed would fire at once (-2021).
func TestTrailingStopGoesThroughTheAlgoOrderAPIWithinItsCallbackRange(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01
	call := func(method, path, params string) (int, map[string]any) {
		t.Helper()
		return signedJSON(t, s, method, path, params)
	}
	const base = "algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&type=TRAILING_STOP_MARKET&quantity=1&reduceOnly=true&clientAlgoId=ts"
	status, out := call(http.MethodPost, "/fapi/v1/order", "symbol=ETHUSDT&side=SELL&type=TRAILING_STOP_MARKET&callbackRate=1&quantity=1&reduceOnly=true&newClientOrderId=ts")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -4120, out["code"], out)
	for _, rate := range []string{"0.05", "10.5", "1.25", "", "x"} {
		status, out = call(http.MethodPost, "/fapi/v1/algoOrder", base+"&callbackRate="+rate)
		require.Equal(t, http.StatusBadRequest, status, "callbackRate %q", rate)
		require.EqualValues(t, -1130, out["code"], out)
	}
	status, out = call(http.MethodPost, "/fapi/v1/algoOrder", base+"&callbackRate=1&activatePrice=2900")
	require.Equal(t, http.StatusBadRequest, status, "a sell trailing stop activated below the last price would fire at once")
	require.EqualValues(t, -2021, out["code"], out)
	require.Empty(t, s.AlgoOrders())

	status, out = call(http.MethodPost, "/fapi/v1/algoOrder", base+"&callbackRate=1.5")
	require.Equal(t, http.StatusOK, status, out)
	status, out = call(http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=ts")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "TRAILING_STOP_MARKET", out["orderType"])
	require.Equal(t, "1.5", out["callbackRate"])
	require.Equal(t, "3000", out["activatePrice"], "activatePrice defaults to the latest price")
	held := s.AlgoOrders()
	require.Len(t, held, 1)
	require.True(t, held[0].ReduceOnly)
}

// A spot market buy takes the asks: it fills at the best ask, and is
// refused whole when the quote balance cannot pay for all of it there
// (faqs/market_orders_faq.md), even though it could at the last price.
// bookTicker serves the ask.
func TestSpotMarketBuyFillsAtTheAskAndIsRefusedWholeBeyondTheBalance(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(3000)}})
	s.SetAsk("ETHUSDT", decimal.RequireFromString("3000.01"))

	resp, err := http.Get(s.URL + "/api/v3/ticker/bookTicker?symbol=ETHUSDT")
	require.NoError(t, err)
	defer resp.Body.Close()
	var book map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&book))
	require.Equal(t, "3000.01000000", book["askPrice"])
	require.Equal(t, "3000.00000000", book["bidPrice"])

	ts := func() string { return strconv.FormatInt(s.Now().UnixMilli(), 10) }
	status, out := post(t, s, "symbol=ETHUSDT&side=BUY&type=MARKET", "quantity=1&newClientOrderId=all&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, "Account has insufficient balance for requested action.", out["msg"])

	status, out = post(t, s, "symbol=ETHUSDT&side=BUY&type=MARKET", "quantity=0.99&newClientOrderId=most&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "2970.00990000", out["cummulativeQuoteQty"])
	require.Equal(t, "29.9901", s.Balance("USDT").String())
}

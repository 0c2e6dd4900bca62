package binancefake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/shopspring/decimal"
)

// clientOrderIDPattern is Binance's documented rule for newClientOrderId.
var clientOrderIDPattern = regexp.MustCompile(`^[.A-Z:/a-z0-9_-]{1,36}$`)

// weights approximate each endpoint's documented request weight, for the
// X-MBX-USED-WEIGHT-1M header.
var weights = map[string]int{
	"/api/v3/exchangeInfo":      20,
	"/api/v3/account":           20,
	"/api/v3/openOrders":        6,
	"/api/v3/ticker/price":      2,
	"/api/v3/ticker/bookTicker": 2,
	"/fapi/v2/positionRisk":     5,
	"/api/v3/myTrades":          5,
	"/fapi/v1/userTrades":       5,
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v3/time", s.handleTime)
	mux.HandleFunc("GET /fapi/v1/time", s.handleTime)
	mux.HandleFunc("GET /api/v3/exchangeInfo", s.handleExchangeInfo(MarketSpot))
	mux.HandleFunc("GET /fapi/v1/exchangeInfo", s.handleExchangeInfo(MarketFutures))
	mux.HandleFunc("GET /api/v3/ticker/price", s.handleTicker)
	mux.HandleFunc("GET /fapi/v1/ticker/price", s.handleTicker)
	mux.HandleFunc("GET /api/v3/ticker/bookTicker", s.handleBookTicker)
	mux.HandleFunc("POST /api/v3/order", s.handlePlace(MarketSpot))
	mux.HandleFunc("POST /fapi/v1/order", s.handlePlace(MarketFutures))
	mux.HandleFunc("GET /api/v3/order", s.handleQuery(MarketSpot))
	mux.HandleFunc("GET /fapi/v1/order", s.handleQuery(MarketFutures))
	mux.HandleFunc("GET /api/v3/account", s.handleAccount)
	mux.HandleFunc("GET /fapi/v2/positionRisk", s.handlePositionRisk)
	mux.HandleFunc("GET /fapi/v2/balance", s.handleFuturesBalance)
	mux.HandleFunc("POST /fapi/v1/leverage", s.handleLeverage)
	mux.HandleFunc("GET /fapi/v1/openOrders", s.handleOpenOrders(MarketFutures))
	mux.HandleFunc("GET /api/v3/openOrders", s.handleOpenOrders(MarketSpot))
	mux.HandleFunc("GET /fapi/v1/openAlgoOrders", s.handleOpenAlgoOrders)
	mux.HandleFunc("POST /fapi/v1/algoOrder", s.handleNewAlgo)
	mux.HandleFunc("GET /fapi/v1/algoOrder", s.handleQueryAlgo)
	mux.HandleFunc("DELETE /fapi/v1/algoOrder", s.handleCancelAlgo)
	mux.HandleFunc("POST /api/v3/orderList/oco", s.handleNewOCO)
	mux.HandleFunc("GET /api/v3/orderList", s.handleQueryOrderList)
	mux.HandleFunc("DELETE /api/v3/orderList", s.handleCancelOrderList)
	mux.HandleFunc("DELETE /api/v3/order", s.handleCancel(MarketSpot))
	mux.HandleFunc("DELETE /fapi/v1/order", s.handleCancel(MarketFutures))
	mux.HandleFunc("GET /api/v3/myTrades", s.handleMyTrades(MarketSpot))
	mux.HandleFunc("GET /fapi/v1/userTrades", s.handleMyTrades(MarketFutures))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeErr(w, http.StatusBadRequest, -1000, "An unknown error occurred while processing the request.")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.runEngine()
		s.requests[r.URL.Path]++
		s.log = append(s.log, logEntry(r, body, s.now()))
		latency := s.latency[r.URL.Path]
		minute := s.now().Unix() / 60
		if minute != s.weightMinute {
			s.weightMinute, s.usedWeight = minute, 0
		}
		weight, ok := weights[r.URL.Path]
		if !ok {
			weight = 1
		}
		s.usedWeight += weight
		w.Header().Set("X-MBX-USED-WEIGHT-1M", strconv.Itoa(s.usedWeight))
		wait := s.holdOverlap(r.URL.Path)
		s.mu.Unlock()
		wait()
		if latency > 0 {
			s.sleep(latency)
		}
		mux.ServeHTTP(w, r)
	})
}

// logEntry describes r for RequestLog: its signed timestamp and recvWindow
// from the query string or the form body, whichever carries them.
func logEntry(r *http.Request, body []byte, now time.Time) Request {
	e := Request{Method: r.Method, Path: r.URL.Path, At: now}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	f, _ := url.ParseQuery(string(body))
	get := func(k string) string {
		if v := q.Get(k); v != "" {
			return v
		}
		return f.Get(k)
	}
	if ms, err := strconv.ParseInt(get("timestamp"), 10, 64); err == nil {
		e.Timestamp = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(get("recvWindow"), 10, 64); err == nil {
		e.RecvWindow = time.Duration(ms) * time.Millisecond
	}
	return e
}

// apiError is Binance's error body.
type apiError struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, apiError{Code: code, Msg: msg})
}

func (s *Server) handleTime(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int64{"serverTime": s.Now().UnixMilli()})
}

// authenticate checks the key, the signature over query string + body, and
// the timestamp against recvWindow, as Binance documents, and returns the
// merged parameters (the query string wins). It writes the error and
// returns ok false when the request is refused.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	key := r.Header.Get("X-MBX-APIKEY")
	if key == "" {
		writeErr(w, http.StatusUnauthorized, -2014, "API-key format invalid.")
		return nil, false
	}
	apiKey, apiSecret := s.keys.Get()
	if key != apiKey {
		writeErr(w, http.StatusUnauthorized, -2015, "Invalid API-key, IP, or permissions for action.")
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, http.StatusBadRequest, -1000, "An unknown error occurred while processing the request.")
		return nil, false
	}
	query, qsig := stripSignature(r.URL.RawQuery)
	form, bsig := stripSignature(string(body))
	sig := qsig
	if sig == "" {
		sig = bsig
	}
	mac := hmac.New(sha256.New, []byte(apiSecret))
	mac.Write([]byte(query + form))
	want := hex.EncodeToString(mac.Sum(nil))
	// HMAC signatures are not case-sensitive on Binance.
	if sig == "" || !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		writeErr(w, http.StatusBadRequest, -1022, "Signature for this request is not valid.")
		return nil, false
	}
	params, err := url.ParseQuery(form)
	if err != nil {
		writeErr(w, http.StatusBadRequest, -1100, "Illegal characters found in a parameter.")
		return nil, false
	}
	qp, err := url.ParseQuery(query)
	if err != nil {
		writeErr(w, http.StatusBadRequest, -1100, "Illegal characters found in a parameter.")
		return nil, false
	}
	for k, v := range qp {
		params[k] = v
	}
	ts, err := strconv.ParseInt(params.Get("timestamp"), 10, 64)
	if err != nil {
		writeErr(w, http.StatusBadRequest, -1102, "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.")
		return nil, false
	}
	recvWindow := int64(5000)
	if rw := params.Get("recvWindow"); rw != "" {
		recvWindow, err = strconv.ParseInt(rw, 10, 64)
		if err != nil || recvWindow <= 0 || recvWindow > 60000 {
			writeErr(w, http.StatusBadRequest, -1131, "recvWindow must be less than 60000")
			return nil, false
		}
	}
	server := s.Now().UnixMilli()
	if ts >= server+1000 {
		writeErr(w, http.StatusBadRequest, -1021, "Timestamp for this request was 1000ms ahead of the server's time.")
		return nil, false
	}
	if server-ts > recvWindow {
		writeErr(w, http.StatusBadRequest, -1021, "Timestamp for this request is outside of the recvWindow.")
		return nil, false
	}
	return params, true
}

// meTimely is the matching engine's second look at a placement's
// timestamp (rest-api.md, "Timing security"): serverTime - timestamp <=
// recvWindow, read again once the request has been processed.
func (s *Server) meTimely(params url.Values) bool {
	ts, _ := strconv.ParseInt(params.Get("timestamp"), 10, 64)
	recvWindow := int64(5000)
	if rw, err := strconv.ParseInt(params.Get("recvWindow"), 10, 64); err == nil {
		recvWindow = rw
	}
	return s.Now().UnixMilli()-ts <= recvWindow
}

// stripSignature removes the signature parameter from a raw query or form
// string and returns the rest and the signature.
func stripSignature(raw string) (rest, sig string) {
	if raw == "" {
		return "", ""
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		if v, ok := strings.CutPrefix(p, "signature="); ok {
			sig = v
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&"), sig
}

func (s *Server) handleExchangeInfo(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		syms := make([]Symbol, 0, len(s.symbols))
		for _, sym := range s.symbols {
			syms = append(syms, sym)
		}
		s.mu.Unlock()
		slices.SortFunc(syms, func(a, b Symbol) int { return strings.Compare(a.Symbol, b.Symbol) })
		if market == MarketSpot {
			if want := r.URL.Query().Get("symbol"); want != "" {
				i := slices.IndexFunc(syms, func(s Symbol) bool { return s.Symbol == want })
				if i < 0 {
					writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
					return
				}
				syms = syms[i : i+1]
			}
		}
		out := make([]map[string]any, 0, len(syms))
		for _, sym := range syms {
			out = append(out, symbolInfo(market, sym))
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"timezone":   "UTC",
			"serverTime": s.Now().UnixMilli(),
			"rateLimits": []any{},
			"symbols":    out,
		})
	}
}

func symbolInfo(market string, sym Symbol) map[string]any {
	filters := []map[string]any{
		{"filterType": "PRICE_FILTER", "minPrice": str(sym.MinPrice), "maxPrice": str(sym.MaxPrice), "tickSize": str(sym.TickSize)},
		{"filterType": "LOT_SIZE", "minQty": str(sym.MinQty), "maxQty": str(sym.MaxQty), "stepSize": str(sym.StepSize)},
		{"filterType": "MARKET_LOT_SIZE", "minQty": str(sym.MarketMinQty), "maxQty": str(sym.MarketMaxQty), "stepSize": str(sym.MarketStepSize)},
	}
	info := map[string]any{
		"symbol": sym.Symbol, "status": "TRADING", "baseAsset": sym.Base, "quoteAsset": sym.Quote,
		"orderTypes": []string{"LIMIT", "MARKET"},
	}
	if sym.MaxNumAlgoOrders > 0 {
		// Each market's exchangeInfo format: spot filters.md
		// ("maxNumAlgoOrders"), USDⓈ-M common-definition.md ("limit").
		key := "maxNumAlgoOrders"
		if market == MarketFutures {
			key = "limit"
		}
		filters = append(filters, map[string]any{"filterType": "MAX_NUM_ALGO_ORDERS", key: sym.MaxNumAlgoOrders})
	}
	if sym.MaxNumOrders > 0 && market == MarketSpot {
		filters = append(filters, map[string]any{"filterType": "MAX_NUM_ORDERS", "maxNumOrders": sym.MaxNumOrders})
	}
	if market == MarketSpot {
		lo, hi := sym.trailingBounds()
		filters = append(filters, map[string]any{
			"filterType": "NOTIONAL", "minNotional": str(sym.MinNotional), "applyMinToMarket": sym.ApplyMinToMarket,
			"maxNotional": "9000000.00000000", "applyMaxToMarket": false, "avgPriceMins": 5,
		}, map[string]any{
			"filterType": "TRAILING_DELTA", "minTrailingAboveDelta": lo, "maxTrailingAboveDelta": hi,
			"minTrailingBelowDelta": lo, "maxTrailingBelowDelta": hi,
		})
		info["isSpotTradingAllowed"] = true
		info["orderTypes"] = sym.spotOrderTypes()
		info["allowTrailingStop"] = sym.AllowTrailingStop
		info["ocoAllowed"] = true
	} else {
		filters = append(filters, map[string]any{"filterType": "MIN_NOTIONAL", "notional": sym.MinNotional.String()},
			map[string]any{"filterType": "PERCENT_PRICE", "multiplierUp": percentPriceUp.StringFixed(4),
				"multiplierDown": percentPriceDown.StringFixed(4), "multiplierDecimal": "4"})
		info["contractType"] = "PERPETUAL"
		info["marginAsset"] = sym.Quote
	}
	info["filters"] = filters
	return info
}

func str(d decimal.Decimal) string { return d.StringFixed(8) }

// USDⓈ-M's PERCENT_PRICE multipliers, as the doc's exchangeInfo example
// has them (market-data/rest-api/Exchange-Information.md).
var (
	percentPriceUp   = decimal.RequireFromString("1.15")
	percentPriceDown = decimal.RequireFromString("0.85")
)

// percentPriceRefusal is USDⓈ-M's PERCENT_PRICE check of a limit price
// against the mark price (the fake's one price), or code 0:
// "BUY: price <= markPrice * multiplierUp; SELL: price >= markPrice *
// multiplierDown" (common-definition.md, "PERCENT_PRICE"), refused -4016
// PRICE_HIGHTER_THAN_MULTIPLIER_UP / -4024 PRICE_LOWER_THAN_MULTIPLIER_DOWN
// (error-code.md).
func percentPriceRefusal(side string, price, mark decimal.Decimal) (int, string) {
	switch {
	case side == "BUY" && price.GreaterThan(mark.Mul(percentPriceUp)):
		return -4016, "Price is higher than mark price multiplier cap."
	case side == "SELL" && price.LessThan(mark.Mul(percentPriceDown)):
		return -4024, "Price is lower than mark price multiplier floor."
	}
	return 0, ""
}

func (s *Server) handleTicker(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("symbol")
	s.mu.Lock()
	sym, ok := s.symbols[want]
	now := s.now()
	s.mu.Unlock()
	if !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"symbol": sym.Symbol, "price": str(sym.Price), "time": now.UnixMilli()})
}

// handleBookTicker answers GET /api/v3/ticker/bookTicker for one symbol
// (rest-api.md "Symbol order book ticker"): the best bid is the ticker
// price, the best ask Ask (or the ticker price).
func (s *Server) handleBookTicker(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("symbol")
	s.mu.Lock()
	sym, ok := s.symbols[want]
	s.mu.Unlock()
	if !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"symbol": sym.Symbol, "bidPrice": str(sym.Price), "bidQty": "1000.00000000",
		"askPrice": str(sym.ask()), "askQty": "1000.00000000"})
}

func (s *Server) handleAccount(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authenticate(w, r); !ok {
		return
	}
	s.mu.Lock()
	assets := make([]string, 0, len(s.balances))
	for a := range s.balances {
		assets = append(assets, a)
	}
	slices.Sort(assets)
	balances := make([]map[string]string, 0, len(assets))
	locked := map[string]decimal.Decimal{}
	for _, sym := range s.symbols {
		// An open SELL order's or order list's coins are locked, not free.
		locked[sym.Base] = locked[sym.Base].Add(s.lockedSpot(sym.Symbol))
	}
	for _, a := range assets {
		balances = append(balances, map[string]string{"asset": a, "free": str(s.balances[a].Sub(locked[a])), "locked": str(locked[a])})
	}
	now := s.now()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"canTrade": true, "accountType": "SPOT", "updateTime": now.UnixMilli(),
		"balances": balances, "permissions": []string{"SPOT"},
	})
}

func (s *Server) handlePositionRisk(w http.ResponseWriter, r *http.Request) {
	params, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	want := params.Get("symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.symbols[want]; want != "" && !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	var out []map[string]any
	for name, sym := range s.symbols {
		if want != "" && name != want {
			continue
		}
		lev := s.leverage[name]
		if lev == 0 {
			lev = 20
		}
		entry := func(side string, amt decimal.Decimal) map[string]any {
			return map[string]any{
				"symbol": name, "positionAmt": amt.StringFixed(3), "entryPrice": str(sym.Price),
				"markPrice": str(sym.Price), "unRealizedProfit": "0.00000000", "liquidationPrice": "0",
				"leverage": strconv.Itoa(lev), "marginType": "cross", "positionSide": side,
				"updateTime": s.now().UnixMilli(),
			}
		}
		if s.hedge {
			// Hedge mode: one entry per side (Position Information V2's
			// "For Hedge position mode" example).
			pos := s.positions[name]
			out = append(out, entry("LONG", decimal.Max(pos, decimal.Zero)), entry("SHORT", decimal.Min(pos, decimal.Zero)))
			continue
		}
		out = append(out, entry("BOTH", s.positions[name]))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleFuturesBalance is Futures Account Balance V2: the USDT margin
// wallet, all of it available (the fake keeps no margin in use).
func (s *Server) handleFuturesBalance(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authenticate(w, r); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, []map[string]any{{"accountAlias": "fake", "asset": "USDT",
		"balance": s.futuresWallet.String(), "availableBalance": s.futuresWallet.String(),
		"crossWalletBalance": s.futuresWallet.String(), "updateTime": s.now().UnixMilli()}})
}

func (s *Server) handleLeverage(w http.ResponseWriter, r *http.Request) {
	params, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	symbol := params.Get("symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.symbols[symbol]; !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	lev, err := strconv.Atoi(params.Get("leverage"))
	if err != nil || lev < 1 || lev > 125 {
		writeErr(w, http.StatusBadRequest, -4028, fmt.Sprintf("Leverage %s is not valid", params.Get("leverage")))
		return
	}
	s.leverageCalls[symbol]++
	if s.refuseLeverage {
		writeErr(w, http.StatusBadRequest, -2027, "Exceeded the maximum allowable position at current leverage.")
		return
	}
	s.leverage[symbol] = lev
	writeJSON(w, http.StatusOK, map[string]any{"leverage": lev, "maxNotionalValue": "1000000", "symbol": symbol})
}

func (s *Server) handleQuery(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		params, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		symbol, id := params.Get("symbol"), params.Get("origClientOrderId")
		if symbol == "" {
			writeErr(w, http.StatusBadRequest, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
			return
		}
		if id == "" && params.Get("orderId") == "" {
			writeErr(w, http.StatusBadRequest, -1102, "Param 'origClientOrderId' or 'orderId' must be sent, but both were empty/null!")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.symbols[symbol]; !ok {
			writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		now := s.now()
		for _, o := range slices.Backward(s.orders) {
			if o.Market != market || o.Symbol != symbol || now.Before(o.VisibleAt) {
				continue
			}
			if (id != "" && o.ClientOrderID == id) || (id == "" && strconv.FormatInt(o.OrderID, 10) == params.Get("orderId")) {
				if o.Archived {
					writeErr(w, http.StatusBadRequest, -2026, "Order was canceled or expired with no executed qty over 90 days ago and has been archived.")
					return
				}
				s.queried(o)
				writeJSON(w, http.StatusOK, orderJSON(o, false))
				return
			}
		}
		if l, o, ok := s.listOrder(symbol, id); ok && market == MarketSpot && id != "" {
			writeJSON(w, http.StatusOK, listOrderJSON(l, o))
			return
		}
		writeErr(w, http.StatusBadRequest, -2013, "Order does not exist.")
	}
}

// orderJSON renders an order as the order query (and RESULT response)
// does on o's market; fills adds the spot FULL response's fills.
func orderJSON(o *Order, fills bool) map[string]any {
	return orderJSONWith(o, fills, nil)
}

// orderJSONWith is orderJSON whose fills carry the commission of trades
// (the FULL response's fills[].commission and commissionAsset).
func orderJSONWith(o *Order, fills bool, trades []Trade) map[string]any {
	if o.Market == MarketFutures {
		avg := decimal.Zero
		if o.ExecutedQty.IsPositive() {
			avg = o.CumQuote.DivRound(o.ExecutedQty, 8)
		}
		return map[string]any{
			"orderId": o.OrderID, "symbol": o.Symbol, "status": o.Status, "clientOrderId": o.ClientOrderID,
			"price": o.Price.String(), "avgPrice": avg.StringFixed(5), "origQty": o.Quantity.String(),
			"executedQty": o.ExecutedQty.String(), "cumQty": o.ExecutedQty.String(), "cumQuote": o.CumQuote.String(),
			"timeInForce": o.TimeInForce, "type": o.Type, "origType": o.Type, "reduceOnly": o.ReduceOnly,
			"closePosition": false, "side": o.Side, "positionSide": "BOTH", "stopPrice": "0",
			"workingType": "CONTRACT_PRICE", "priceProtect": false, "time": o.Time.UnixMilli(),
			"updateTime": o.Time.UnixMilli(),
		}
	}
	m := map[string]any{
		"symbol": o.Symbol, "orderId": o.OrderID, "orderListId": -1, "clientOrderId": o.ClientOrderID,
		"transactTime": o.Time.UnixMilli(), "time": o.Time.UnixMilli(), "updateTime": o.Time.UnixMilli(),
		"price": str(o.Price), "origQty": str(o.Quantity), "executedQty": str(o.ExecutedQty),
		"cummulativeQuoteQty": str(o.CumQuote), "status": o.Status, "timeInForce": o.TimeInForce,
		"type": o.Type, "side": o.Side, "workingTime": o.Time.UnixMilli(), "isWorking": o.Open(),
		"origQuoteOrderQty": "0.00000000", "selfTradePreventionMode": "NONE",
	}
	// Conditional fields (rest-api.md, "Conditional fields in Order
	// Responses"): stopPrice for STOP_LOSS and TAKE_PROFIT, trailingDelta
	// for trailing stops.
	if spotContingent[o.Type] {
		m["stopPrice"] = str(o.StopPrice)
		m["isWorking"] = false
	}
	if o.TrailingDelta > 0 {
		m["trailingDelta"] = o.TrailingDelta
		m["trailingTime"] = -1
	}
	if fills {
		f := []map[string]any{}
		if o.ExecutedQty.IsPositive() {
			// Two fills at prices around the average, so that a client
			// that reads only the first fill gets the wrong price.
			half := o.ExecutedQty.Div(decimal.NewFromInt(2))
			avg := o.CumQuote.Div(o.ExecutedQty)
			one := decimal.NewFromInt(1)
			// The commission, split over the two fills.
			fee, asset := decimal.Zero, "BNB"
			for _, t := range trades {
				fee, asset = fee.Add(t.Commission), t.CommissionAsset
			}
			feeHalf := fee.Div(decimal.NewFromInt(2))
			f = append(f,
				map[string]any{"price": str(avg.Sub(one)), "qty": str(half), "commission": str(feeHalf), "commissionAsset": asset, "tradeId": o.OrderID * 10},
				map[string]any{"price": str(avg.Add(one)), "qty": str(o.ExecutedQty.Sub(half)), "commission": str(fee.Sub(feeHalf)), "commissionAsset": asset, "tradeId": o.OrderID*10 + 1},
			)
		}
		m["fills"] = f
	}
	return m
}

// handlePlace accepts an order on market, applying faults, filters, the
// uniqueness rule and balances in the order Binance does.
func (s *Server) handlePlace(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.waitHeldPlacement(r) {
			return
		}
		s.mu.Lock()
		if market == MarketFutures && s.fillAlgoCap != "" {
			s.fillAlgoCapNow()
		}
		f, faulted := s.takeFault()
		s.mu.Unlock()
		if faulted {
			switch f.Kind {
			case FaultRateLimit, FaultBan:
				status := http.StatusTooManyRequests
				if f.Kind == FaultBan {
					status = http.StatusTeapot
				}
				if f.Kind == FaultBan && f.BanMessage {
					s.mu.Lock()
					until := s.now().Add(f.RetryAfter).UnixMilli()
					s.mu.Unlock()
					writeErr(w, status, -1003, fmt.Sprintf("Way too many requests; IP banned until %d. Please use the websocket for live updates to avoid bans.", until))
					return
				}
				w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
				writeErr(w, status, -1003, "Too much request weight used; current limit is 6000 request weight per 1 MINUTE. Please use WebSocket Streams for live updates to avoid polling the API.")
				return
			case FaultCredentials:
				writeErr(w, http.StatusUnauthorized, -2015, "Invalid API-key, IP, or permissions for action.")
				return
			}
		}
		params, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		s.mu.Lock()
		delay, off := s.engineDelay, s.tradingOff
		s.mu.Unlock()
		if off != "" {
			writeErr(w, http.StatusBadRequest, -2010, off)
			return
		}
		if faulted && f.Kind == FaultRefuse {
			status := f.HTTPStatus
			if status == 0 {
				status = http.StatusBadRequest
			}
			writeErr(w, status, f.Code, f.Msg)
			return
		}
		if faulted && f.Kind == FaultLateInEngine {
			s.mu.Lock()
			now := s.now()
			s.late.Add(lateOrder{market: market, params: params}, now.Add(f.Delay))
			s.mu.Unlock()
			writeErr(w, http.StatusServiceUnavailable, -1007, "Timeout waiting for response from backend server. Send status unknown; execution status unknown.")
			return
		}
		if delay > 0 {
			s.sleep(delay)
			if !s.meTimely(params) {
				if market == MarketFutures {
					writeErr(w, http.StatusBadRequest, -5028, "Timestamp for this request is outside of the ME recvWindow.")
					return
				}
				writeErr(w, http.StatusBadRequest, -1021, "Timestamp for this request is outside of the recvWindow.")
				return
			}
		}
		s.mu.Lock()
		o, status, e := s.place(market, params)
		var body map[string]any
		if e == nil {
			body = orderJSONWith(o, market == MarketSpot && params.Get("newOrderRespType") != "RESULT" && params.Get("newOrderRespType") != "ACK", s.tradesOf(o))
		}
		s.mu.Unlock()
		if e != nil {
			writeErr(w, status, e.Code, e.Msg)
			return
		}
		if faulted {
			switch f.Kind {
			case FaultServerErrorAfterAccept:
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
				return
			case FaultUnknownAfterAccept:
				writeErr(w, http.StatusServiceUnavailable, -1007, "Timeout waiting for response from backend server. Send status unknown; execution status unknown.")
				return
			case FaultBareStatusAfterAccept:
				status := f.HTTPStatus
				if status == 0 {
					status = http.StatusRequestTimeout
				}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, http.StatusText(status))
				return
			case FaultCodeAfterAccept:
				status := f.HTTPStatus
				if status == 0 {
					status = http.StatusBadRequest
				}
				writeErr(w, status, f.Code, f.Msg)
				return
			case FaultHangAfterAccept:
				<-r.Context().Done()
				return
			case FaultDropAfterAccept:
				venuefake.Drop(w)
				return
			}
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// place validates and books one order; callers hold mu.
func (s *Server) place(market string, p url.Values) (*Order, int, *apiError) {
	bad := func(code int, msg string) (*Order, int, *apiError) {
		return nil, http.StatusBadRequest, &apiError{Code: code, Msg: msg}
	}
	futures := market == MarketFutures
	for _, k := range []string{"symbol", "side", "type", "quantity"} {
		if p.Get(k) == "" {
			return bad(-1102, fmt.Sprintf("Mandatory parameter '%s' was not sent, was empty/null, or malformed.", k))
		}
	}
	sym, ok := s.symbols[p.Get("symbol")]
	if !ok {
		return bad(-1121, "Invalid symbol.")
	}
	side, typ := p.Get("side"), p.Get("type")
	if side != "BUY" && side != "SELL" {
		return bad(-1117, "Invalid side.")
	}
	if futures && conditionalTypes[typ] {
		// USDⓈ-M moved conditional orders to the Algo Order API
		// (error-code.md, -4120 STOP_ORDER_SWITCH_ALGO).
		return bad(-4120, "Order type not supported for this endpoint. Please use the Algo Order API endpoints instead.")
	}
	if !futures {
		if e := checkSpotType(sym, typ); e != nil {
			return bad(e.Code, e.Msg)
		}
	} else if typ != "MARKET" && typ != "LIMIT" {
		return bad(-1116, "Invalid orderType.")
	}
	qty, err := decimal.NewFromString(p.Get("quantity"))
	if err != nil {
		return bad(-1100, "Illegal characters found in parameter 'quantity'; legal range is '^([0-9]{1,20})(\\.[0-9]{1,20})?$'.")
	}
	var price decimal.Decimal
	if typ == "LIMIT" {
		if p.Get("timeInForce") == "" {
			return bad(-1102, "Mandatory parameter 'timeInForce' was not sent, was empty/null, or malformed.")
		}
		if price, err = decimal.NewFromString(p.Get("price")); err != nil {
			return bad(-1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
		}
	} else if p.Get("timeInForce") != "" && typ == "MARKET" && !futures {
		return bad(-1106, "Parameter 'timeInForce' sent when not required.")
	}
	var terms spotTerms
	id := p.Get("newClientOrderId")
	if id == "" {
		id = fmt.Sprintf("fake%d", s.nextID+1)
	}
	if !clientOrderIDPattern.MatchString(id) {
		if futures {
			return bad(-4015, "Client order id is not valid.")
		}
		return bad(-1100, "Illegal characters found in parameter 'newClientOrderId'; legal range is '^[\\.A-Z\\:/a-z0-9_-]{1,36}$'.")
	}
	reduceOnly := futures && p.Get("reduceOnly") == "true"
	if futures {
		// New Order: positionSide "Default BOTH for One-way Mode; LONG or
		// SHORT for Hedge Mode. It must be sent in Hedge Mode."
		switch ps := p.Get("positionSide"); {
		case s.hedge && ps != "LONG" && ps != "SHORT", !s.hedge && ps != "" && ps != "BOTH":
			return bad(-4061, "Order's position side does not match user's setting.")
		}
	}

	// Filters.
	step, minQty, maxQty := sym.StepSize, sym.MinQty, sym.MaxQty
	lotFilter := "LOT_SIZE"
	if typ == "MARKET" && sym.MarketStepSize.IsPositive() {
		step, minQty, lotFilter = sym.MarketStepSize, sym.MarketMinQty, "MARKET_LOT_SIZE"
	}
	if typ == "MARKET" && sym.MarketMaxQty.IsPositive() {
		// MARKET_LOT_SIZE: "quantity <= maxQty" for MARKET orders
		// (USDⓈ-M common-definition.md, spot filters.md), whatever its
		// step; Binance does not split a larger order.
		maxQty, lotFilter = sym.MarketMaxQty, "MARKET_LOT_SIZE"
	}
	if futures {
		switch {
		case !qty.IsPositive():
			return bad(-4003, "Quantity less than or equal to zero.")
		case step.IsPositive() && !qty.Mod(step).IsZero():
			return bad(-4023, "Quantity not increased by step size.")
		case qty.LessThan(minQty):
			return bad(-4004, "Quantity less than min quantity.")
		case maxQty.IsPositive() && qty.GreaterThan(maxQty):
			return bad(-4005, "Quantity greater than max quantity.")
		}
	} else if !qty.IsPositive() || (step.IsPositive() && !qty.Mod(step).IsZero()) || qty.LessThan(minQty) || (maxQty.IsPositive() && qty.GreaterThan(maxQty)) {
		return bad(-1013, "Filter failure: "+lotFilter)
	}
	if typ == "LIMIT" {
		failed := !price.IsPositive() || (sym.TickSize.IsPositive() && !price.Mod(sym.TickSize).IsZero()) ||
			(sym.MinPrice.IsPositive() && price.LessThan(sym.MinPrice)) || (sym.MaxPrice.IsPositive() && price.GreaterThan(sym.MaxPrice))
		if failed && futures {
			if sym.TickSize.IsPositive() && !price.Mod(sym.TickSize).IsZero() {
				return bad(-4014, "Price not increased by tick size.")
			}
			return bad(-4013, "Price less than min price.")
		}
		if failed {
			return bad(-1013, "Filter failure: PRICE_FILTER")
		}
		if futures {
			if code, msg := percentPriceRefusal(side, price, sym.Price); code != 0 {
				return bad(code, msg)
			}
		}
	}
	if typ == "LIMIT_MAKER" || spotContingent[typ] {
		var e *apiError
		if terms, e = spotExitTerms(sym, typ, side, p); e != nil {
			return bad(e.Code, e.Msg)
		}
		price = terms.price
	}
	refPrice := price
	if typ == "MARKET" && !futures && side == "BUY" {
		// A market buy takes the asks.
		refPrice = sym.ask()
	} else if typ == "MARKET" || (spotContingent[typ] && !terms.stopPrice.IsPositive()) {
		refPrice = sym.Price
	} else if spotContingent[typ] {
		// A triggered STOP_LOSS or TAKE_PROFIT sells at about its
		// stopPrice (an assumption: the docs do not say which price the
		// notional filter takes for them).
		refPrice = terms.stopPrice
	}
	notional := qty.Mul(refPrice)
	if sym.MinNotional.IsPositive() && notional.LessThan(sym.MinNotional) {
		if futures && !reduceOnly {
			return bad(-4164, fmt.Sprintf("Order's notional must be no smaller than %s (unless you choose reduce only).", sym.MinNotional))
		}
		// STOP_LOSS and TAKE_PROFIT execute as MARKET orders once
		// triggered: applyMinToMarket decides for them too.
		limitPriced := typ == "LIMIT" || typ == "LIMIT_MAKER"
		if !futures && (limitPriced || sym.ApplyMinToMarket) {
			return bad(-1013, "Filter failure: NOTIONAL")
		}
	}

	// Uniqueness: only among open orders.
	for _, o := range s.orders {
		if o.Market == market && o.Symbol == sym.Symbol && o.ClientOrderID == id && o.Open() {
			if futures {
				return bad(-4116, "ClientOrderId is duplicated.")
			}
			return bad(-2010, "Duplicate order sent.")
		}
	}
	if !futures && spotAlgoTypes[typ] && sym.MaxNumAlgoOrders > 0 && s.openAlgoCount(MarketSpot, sym.Symbol) >= sym.MaxNumAlgoOrders {
		// A lone STOP_LOSS / TAKE_PROFIT counts against the symbol's
		// MAX_NUM_ALGO_ORDERS (filters.md; errors.md's filter failure).
		return bad(-1013, "Filter failure: MAX_NUM_ALGO_ORDERS")
	}
	if !futures && s.spotOrdersRefused(sym, 1) {
		return bad(-1013, "Filter failure: MAX_NUM_ORDERS")
	}

	// Balances and positions.
	if futures {
		pos := s.positions[sym.Symbol]
		if reduceOnly {
			reduces := (side == "SELL" && pos.IsPositive()) || (side == "BUY" && pos.IsNegative())
			if !reduces || qty.Add(s.restingReduceOnly(market, sym.Symbol, side)).GreaterThan(pos.Abs()) {
				return bad(-2022, "ReduceOnly Order is rejected.")
			}
		} else {
			lev := s.leverage[sym.Symbol]
			if lev == 0 {
				lev = 20
			}
			if notional.Div(decimal.NewFromInt(int64(lev))).GreaterThan(s.futuresWallet) {
				return bad(-2019, "Margin is insufficient.")
			}
		}
	} else {
		// An open SELL order or order list locks its quantity.
		insufficient := (side == "SELL" && s.balances[sym.Base].LessThan(qty.Add(s.lockedSpot(sym.Symbol)))) ||
			(side == "BUY" && s.balances[sym.Quote].LessThan(notional))
		if insufficient {
			return bad(-2010, "Account has insufficient balance for requested action.")
		}
	}

	s.nextID++
	now := s.now()
	o := &Order{
		Market: market, Symbol: sym.Symbol, OrderID: s.nextID, ClientOrderID: id, Side: side, Type: typ,
		TimeInForce: p.Get("timeInForce"), Quantity: qty, Price: price, Status: "NEW", ReduceOnly: reduceOnly,
		StopPrice: terms.stopPrice, TrailingDelta: terms.trailingDelta,
		Time: now, VisibleAt: now.Add(s.takeLookupLag()),
	}
	if typ == "MARKET" && s.holdLeft > 0 {
		// Held (HoldMarketOrders): NEW with nothing filled, for now.
		s.holdLeft--
		o.fillOnQuery = s.holdQueries
		if o.fillOnQuery == 0 {
			o.fillOnQuery = -1 // never by queries: FillOrder fills it
		}
	} else if typ == "MARKET" {
		fill := qty
		if liq, ok := s.liquidity[sym.Symbol]; ok && liq.LessThan(fill) {
			fill = liq
		}
		if fill.IsPositive() {
			s.execute(o, fill, refPrice)
		}
		o.Status = "FILLED"
		if fill.LessThan(qty) {
			o.Status = "EXPIRED"
		}
	}
	s.orders = append(s.orders, o)
	return o, http.StatusOK, nil
}

// execute fills qty of o at price, moving balances or the position;
// callers hold mu.
func (s *Server) execute(o *Order, qty, price decimal.Decimal) {
	s.trade(o, qty, price)
	o.ExecutedQty = o.ExecutedQty.Add(qty)
	o.CumQuote = o.CumQuote.Add(qty.Mul(price))
	sym := s.symbols[o.Symbol]
	signed := qty
	if o.Side == "SELL" {
		signed = qty.Neg()
	}
	if o.Market == MarketFutures {
		s.positions[o.Symbol] = s.positions[o.Symbol].Add(signed)
		return
	}
	s.balances[sym.Base] = s.balances[sym.Base].Add(signed)
	s.balances[sym.Quote] = s.balances[sym.Quote].Sub(signed.Mul(price))
	if t := s.trades[len(s.trades)-1]; o.Market == MarketSpot && s.spotCommission != nil {
		// Taken out of what the order received (faqs/commission_faq.md).
		s.balances[t.CommissionAsset] = s.balances[t.CommissionAsset].Sub(t.Commission)
	}
}

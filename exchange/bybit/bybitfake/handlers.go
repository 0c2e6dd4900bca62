package bybitfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// reply is one answer before it is written: a JSON envelope with a retCode,
// or (status >= 400 with no envelope) a plain-text body.
type reply struct {
	status  int
	retCode int
	retMsg  string
	result  any
	// accepted is true when a placement booked an order: an AfterAccept
	// fault replaces the answer only then.
	accepted bool
	// limit is the X-Bapi-Limit to report for a private endpoint.
	limit int
	// exhaustedUntil, when set, reports the limit used up (status 0)
	// until then instead of limit-1 left.
	exhaustedUntil time.Time
}

func ok(result any) reply { return reply{status: http.StatusOK, retMsg: "OK", result: result} }

func fail(code int, msg string) reply {
	return reply{status: http.StatusOK, retCode: code, retMsg: msg}
}

func (s *Server) handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.runLate()
	s.requests[r.URL.Path]++
	s.log = append(s.log, logEntry(r, s.clock()))
	if d := s.latency[r.URL.Path]; d > 0 {
		s.mu.Unlock()
		s.sleep(d)
		s.mu.Lock()
	}
	f, faulted := s.takeFault(r.URL.Path)
	if faulted && f.Late > 0 && r.URL.Path == PathCreate {
		now := s.clock()
		if code, msg := s.authenticate(r, string(body), true); code != 0 {
			s.mu.Unlock()
			s.write(w, fail(code, msg), now)
			return
		}
		s.late.Add(body, now.Add(f.Late))
		s.mu.Unlock()
		s.writeFault(w, r, f, now)
		return
	}
	if faulted && !f.AfterAccept {
		now := s.clock()
		s.mu.Unlock()
		s.writeFault(w, r, f, now)
		return
	}
	now := s.clock()
	if u, limited := s.limitReset[r.URL.Path]; limited {
		if now.Before(u.until) {
			s.mu.Unlock()
			s.write(w, reply{status: http.StatusOK, retCode: 10006, retMsg: "Too many visits!", limit: u.limit, exhaustedUntil: u.until}, now)
			return
		}
		delete(s.limitReset, r.URL.Path)
	}
	rep := s.route(r, body)
	if after, exhaust := s.exhaustNext[r.URL.Path]; exhaust && rep.limit > 0 && rep.status == http.StatusOK && rep.retCode == 0 {
		delete(s.exhaustNext, r.URL.Path)
		rep.exhaustedUntil = now.Add(after)
		s.limitReset[r.URL.Path] = usedUp{until: rep.exhaustedUntil, limit: rep.limit}
	}
	s.mu.Unlock()
	if faulted && rep.accepted {
		s.writeFault(w, r, f, now)
		return
	}
	s.write(w, rep, now)
}

// logEntry describes r for RequestLog.
func logEntry(r *http.Request, now time.Time) Request {
	e := Request{Method: r.Method, Path: r.URL.Path, At: now}
	if ms, err := strconv.ParseInt(r.Header.Get("X-BAPI-TIMESTAMP"), 10, 64); err == nil {
		e.Timestamp = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(r.Header.Get("X-BAPI-RECV-WINDOW"), 10, 64); err == nil {
		e.RecvWindow = time.Duration(ms) * time.Millisecond
	}
	return e
}

func (s *Server) write(w http.ResponseWriter, rep reply, now time.Time) {
	h := w.Header()
	switch {
	case !rep.exhaustedUntil.IsZero():
		h.Set("X-Bapi-Limit", strconv.Itoa(rep.limit))
		h.Set("X-Bapi-Limit-Status", "0")
		h.Set("X-Bapi-Limit-Reset-Timestamp", strconv.FormatInt(rep.exhaustedUntil.UnixMilli(), 10))
	case rep.limit > 0:
		h.Set("X-Bapi-Limit", strconv.Itoa(rep.limit))
		h.Set("X-Bapi-Limit-Status", strconv.Itoa(rep.limit-1))
		h.Set("X-Bapi-Limit-Reset-Timestamp", strconv.FormatInt(now.UnixMilli(), 10))
	}
	if rep.status >= 400 && rep.retCode == 0 {
		http.Error(w, http.StatusText(rep.status), rep.status)
		return
	}
	result := rep.result
	if result == nil {
		result = struct{}{}
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"retCode":    rep.retCode,
		"retMsg":     rep.retMsg,
		"result":     result,
		"retExtInfo": struct{}{},
		"time":       now.UnixMilli(),
	})
}

func (s *Server) writeFault(w http.ResponseWriter, r *http.Request, f Fault, now time.Time) {
	switch {
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	case f.Drop:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("bybitfake: response writer cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	if f.RetryAfter > 0 {
		secs := int(math.Ceil(f.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		w.Header().Set("X-Bapi-Limit", "10")
		w.Header().Set("X-Bapi-Limit-Status", "0")
		w.Header().Set("X-Bapi-Limit-Reset-Timestamp", strconv.FormatInt(now.Add(f.RetryAfter).UnixMilli(), 10))
	}
	status := f.HTTPStatus
	if status == 0 {
		status = http.StatusOK
	}
	s.write(w, reply{status: status, retCode: f.RetCode, retMsg: f.RetMsg}, now)
}

// route answers one request; s.mu is held.
func (s *Server) route(r *http.Request, body []byte) reply {
	type endpoint struct {
		method  string
		private bool
		trading bool
		limit   int
		fn      func(r *http.Request, body []byte) reply
	}
	endpoints := map[string]endpoint{
		PathTime:        {http.MethodGet, false, false, 0, s.serveTime},
		PathInstruments: {http.MethodGet, false, false, 0, s.serveInstruments},
		PathTickers:     {http.MethodGet, false, false, 0, s.serveTickers},
		PathCreate:      {http.MethodPost, true, true, 10, s.serveCreate},
		PathRealtime:    {http.MethodGet, true, false, 50, s.serveRealtime},
		PathHistory:     {http.MethodGet, true, false, 50, s.serveHistory},
		PathPositions:   {http.MethodGet, true, false, 50, s.servePositions},
		PathLeverage:    {http.MethodPost, true, true, 10, s.serveLeverage},
		PathWallet:      {http.MethodGet, true, false, 50, s.serveWallet},
		PathCancel:      {http.MethodPost, true, true, 10, s.serveCancel},
		PathTradingStop: {http.MethodPost, true, true, 10, s.serveTradingStop},
	}
	ep, found := endpoints[r.URL.Path]
	if !found {
		return reply{status: http.StatusNotFound}
	}
	if r.Method != ep.method {
		return reply{status: http.StatusBadRequest}
	}
	if ep.private {
		payload := r.URL.RawQuery
		if r.Method == http.MethodPost {
			payload = string(body)
		}
		if code, msg := s.authenticate(r, payload, ep.trading); code != 0 {
			rep := fail(code, msg)
			rep.limit = ep.limit
			return rep
		}
	}
	if r.URL.Path == PathCreate && s.engineDelay > 0 {
		d := s.engineDelay
		s.mu.Unlock()
		s.sleep(d)
		s.mu.Lock()
		if msg, expired := s.expired(r); expired {
			rep := fail(-1, msg)
			rep.limit = ep.limit
			return rep
		}
	}
	rep := ep.fn(r, body)
	rep.limit = ep.limit
	return rep
}

// authenticate checks a private request the way Bybit v5 documents it: the
// key, the timestamp window server_time - recv_window <= timestamp <
// server_time + 1000, and the HMAC-SHA256 of timestamp + key + recv_window +
// payload. s.mu is held.
func (s *Server) authenticate(r *http.Request, payload string, trading bool) (int, string) {
	key := r.Header.Get("X-BAPI-API-KEY")
	apiKey, apiSecret := s.keys.Get()
	if key == "" || key != apiKey {
		return 10003, "API key is invalid."
	}
	tsStr := r.Header.Get("X-BAPI-TIMESTAMP")
	ts, err := strconv.ParseInt(tsStr, 10, 64)
	if err != nil {
		return 10001, "params error: X-BAPI-TIMESTAMP is invalid"
	}
	recvStr := r.Header.Get("X-BAPI-RECV-WINDOW")
	recv := int64(5000)
	if recvStr != "" {
		recv, err = strconv.ParseInt(recvStr, 10, 64)
		if err != nil || recv <= 0 {
			return 10001, "params error: X-BAPI-RECV-WINDOW is invalid"
		}
	}
	server := s.clock().UnixMilli()
	if ts < server-recv || ts >= server+1000 {
		return 10002, fmt.Sprintf("invalid request, please check your server timestamp or recv_window param. req_timestamp[%d],server_timestamp[%d],recv_window[%d]", ts, server, recv)
	}
	mac := hmac.New(sha256.New, []byte(apiSecret))
	mac.Write([]byte(tsStr + key + recvStr + payload))
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-BAPI-SIGN"))) {
		return 10004, "error sign! origin_string[" + tsStr + key + recvStr + payload + "]"
	}
	if s.ipBlocked {
		return 10010, "Unmatched IP, please check your API key's bound IP addresses."
	}
	if trading && s.readOnly {
		return 10005, "Permission denied, please check your API key permissions."
	}
	return 0, ""
}

// expired is the second look at an authenticated request's time, once it
// has been processed: past timestamp + recv_window it is refused. s.mu is
// held.
func (s *Server) expired(r *http.Request) (string, bool) {
	ts, _ := strconv.ParseInt(r.Header.Get("X-BAPI-TIMESTAMP"), 10, 64)
	recv := int64(5000)
	if v, err := strconv.ParseInt(r.Header.Get("X-BAPI-RECV-WINDOW"), 10, 64); err == nil {
		recv = v
	}
	now := s.clock().UnixMilli()
	if now-ts <= recv {
		return "", false
	}
	return fmt.Sprintf("request expired: o@0, now[%d] diff[%d]", now, now-ts-recv), true
}

func (s *Server) serveTime(*http.Request, []byte) reply {
	now := s.clock()
	return ok(map[string]string{
		"timeSecond": strconv.FormatInt(now.Unix(), 10),
		"timeNano":   strconv.FormatInt(now.UnixNano(), 10),
	})
}

func (s *Server) serveInstruments(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	cat := q.Get("category")
	ins, known := s.instruments[cat]
	if !known {
		return fail(10001, "params error: category invalid")
	}
	// status filters; without it only Trading symbols are listed, and
	// spot lists nothing else (Instrument.Status).
	status := q.Get("status")
	if status == "" || cat == CategorySpot {
		status = "Trading"
	}
	list := []any{}
	for sym, in := range ins {
		if q.Get("symbol") != "" && q.Get("symbol") != sym || in.status() != status {
			continue
		}
		list = append(list, instrumentJSON(cat, in))
	}
	return ok(map[string]any{"category": cat, "list": list, "nextPageCursor": ""})
}

func instrumentJSON(cat string, in Instrument) map[string]any {
	m := map[string]any{
		"symbol": in.Symbol, "status": in.status(), "baseCoin": in.BaseCoin, "quoteCoin": in.QuoteCoin,
		"priceFilter": map[string]string{"tickSize": in.TickSize.String()},
	}
	if cat == CategorySpot {
		m["lotSizeFilter"] = map[string]string{
			"basePrecision": in.QtyStep.String(), "quotePrecision": "0.0000001",
			"minOrderQty": in.MinOrderQty.String(), "minOrderAmt": in.MinNotional.String(),
			"maxOrderQty": "1000000", "maxOrderAmt": "100000000",
			"maxLimitOrderQty": "1000000", "maxMarketOrderQty": in.maxMkt().String(),
		}
		return m
	}
	m["contractType"] = "LinearPerpetual"
	m["settleCoin"] = in.QuoteCoin
	m["leverageFilter"] = map[string]string{"minLeverage": "1", "maxLeverage": strconv.Itoa(in.MaxLeverage) + ".00", "leverageStep": "0.01"}
	m["lotSizeFilter"] = map[string]string{
		"qtyStep": in.QtyStep.String(), "minOrderQty": in.MinOrderQty.String(),
		"minNotionalValue": in.MinNotional.String(), "maxOrderQty": "1000000", "maxMktOrderQty": in.maxMkt().String(),
	}
	return m
}

func (s *Server) serveTickers(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	cat := q.Get("category")
	ts, known := s.tickers[cat]
	if !known {
		return fail(10001, "params error: category invalid")
	}
	sym := q.Get("symbol")
	last, found := ts[sym]
	if !found {
		return fail(10001, "Not supported symbols")
	}
	t := map[string]string{"symbol": sym, "lastPrice": last.String()}
	if cat == CategoryLinear {
		t["markPrice"] = last.String()
	}
	return ok(map[string]any{"category": cat, "list": []any{t}})
}

func (s *Server) serveRealtime(r *http.Request, _ []byte) reply {
	return s.queryOrders(r, false)
}

func (s *Server) serveHistory(r *http.Request, _ []byte) reply {
	return s.queryOrders(r, true)
}

func (s *Server) queryOrders(r *http.Request, history bool) reply {
	q := r.URL.Query()
	cat := q.Get("category")
	if _, known := s.instruments[cat]; !known {
		return fail(10001, "params error: category invalid")
	}
	sym, linkID, orderID := q.Get("symbol"), q.Get("orderLinkId"), q.Get("orderId")
	if cat == CategoryLinear && sym == "" && !history {
		return fail(10001, "Missing some parameters that must be filled in, symbol or settleCoin or baseCoin")
	}
	now := s.clock()
	var from, to time.Time
	if history {
		var msg string
		if from, to, msg = historyRange(q.Get("startTime"), q.Get("endTime"), now); msg != "" {
			return fail(10001, msg)
		}
	}
	list := []any{}
	for i := len(s.book) - 1; i >= 0; i-- { // newest first, as Bybit sorts
		o := s.book[i]
		// Bybit resolves orderId > orderLinkId > symbol: an ID finds its
		// order whatever symbol the query names.
		bySymbol := sym != "" && linkID == "" && orderID == ""
		switch {
		case o.Category != cat, bySymbol && o.Symbol != sym,
			linkID != "" && o.OrderLinkID != linkID, orderID != "" && o.OrderID != orderID,
			now.Before(o.VisibleAt):
			continue
		}
		open := isOpen(o.Status)
		if history && (open || !inHistory(o, from, to, now)) {
			continue
		}
		if !history && !open && (s.forgetReal || linkID == "" && orderID == "") {
			continue
		}
		if o.HiddenFor > 0 {
			o.HiddenFor--
			continue
		}
		entry := orderJSON(o)
		entry["cumFeeDetail"] = s.feeDetail(o)
		list = append(list, entry)
	}
	return ok(map[string]any{"category": cat, "list": list, "nextPageCursor": ""})
}

// historyWindow is the longest span one history query covers, and the
// span it covers by default (order-list.mdx, startTime: "startTime and
// endTime are not passed, return 7 days by default"; "endTime - startTime
// <= 7 days").
const historyWindow = 7 * 24 * time.Hour

// historyRange is the creation-time range a history query asks for, as
// order-list.mdx documents startTime and endTime, or why it is refused.
func historyRange(start, end string, now time.Time) (from, to time.Time, msg string) {
	ms := func(s string) (time.Time, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return time.UnixMilli(n), err == nil
	}
	st, hasStart := ms(start)
	en, hasEnd := ms(end)
	switch {
	case start != "" && !hasStart, end != "" && !hasEnd:
		return time.Time{}, time.Time{}, "params error: startTime or endTime invalid"
	case hasStart && hasEnd:
		if en.Sub(st) > historyWindow || en.Before(st) {
			return time.Time{}, time.Time{}, "params error: The time range between startTime and endTime cannot exceed 7 days"
		}
		return st, en, ""
	case hasStart:
		return st, st.Add(historyWindow), ""
	case hasEnd:
		return en.Add(-historyWindow), en, ""
	}
	return now.Add(-historyWindow), now, ""
}

// inHistory reports whether a closed order shows in a history query for
// [from, to]: created in the range, and still kept (order-list.mdx: orders
// beyond 7 days only with fills; Cancelled, Rejected and Deactivated
// orders without fills only for 24 hours).
func inHistory(o *Order, from, to, now time.Time) bool {
	if o.CreatedAt.Before(from) || o.CreatedAt.After(to) {
		return false
	}
	filled := o.CumExecQty.IsPositive()
	switch {
	case !filled && now.Sub(o.CreatedAt) > historyWindow:
		return false
	case !filled && now.Sub(o.CreatedAt) > 24*time.Hour &&
		(o.Status == "Cancelled" || o.Status == "Rejected" || o.Status == "Deactivated"):
		return false
	}
	return true
}

func isOpen(status string) bool {
	return status == "New" || status == "PartiallyFilled" || status == "Untriggered"
}

func orderJSON(o *Order) map[string]any {
	avg := ""
	if !o.CumExecQty.IsZero() {
		avg = o.AvgPrice.String()
	}
	reason := o.RejectReason
	if reason == "" {
		reason = "EC_NoError"
	}
	return map[string]any{
		"orderId": o.OrderID, "orderLinkId": o.OrderLinkID, "symbol": o.Symbol,
		"price": o.Price.String(), "qty": o.Qty.String(), "side": o.Side,
		"positionIdx": 0, "orderStatus": o.Status, "rejectReason": reason,
		"avgPrice": avg, "cumExecQty": o.CumExecQty.String(), "cumExecFee": o.CumExecFee.String(), "leavesQty": o.Qty.Sub(o.CumExecQty).String(),
		"orderType": o.OrderType, "timeInForce": o.TimeInForce, "reduceOnly": o.ReduceOnly,
		"marketUnit": o.MarketUnit,
		"takeProfit": listedPrice(o.Category, o.TakeProfit), "stopLoss": listedPrice(o.Category, o.StopLoss),
		"tpslMode": o.TpslMode, "tpTriggerBy": o.TpTriggerBy, "slTriggerBy": o.SlTriggerBy,
		"createdTime": strconv.FormatInt(o.CreatedAt.UnixMilli(), 10),
		"updatedTime": strconv.FormatInt(o.CreatedAt.UnixMilli(), 10),
	}
}

// listedPrice is how the order lists show a take-profit or stop-loss:
// the price, or for none "0.00" on linear (order-list.mdx's example) and
// "" on spot.
func listedPrice(category string, p decimal.Decimal) string {
	switch {
	case !p.IsZero():
		return p.String()
	case category == CategoryLinear:
		return "0.00"
	}
	return ""
}

func (s *Server) servePositions(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	if q.Get("category") != CategoryLinear {
		return fail(10001, "params error: category invalid")
	}
	sym := q.Get("symbol")
	if _, known := s.instruments[CategoryLinear][sym]; !known {
		return fail(10001, "params error: symbol invalid")
	}
	p := s.positions[sym]
	lev := s.leverage[sym]
	if lev.IsZero() {
		lev = decimal.NewFromInt(defaultLeverage)
	}
	entry := func(idx int, side string, size decimal.Decimal) map[string]any {
		ts := decimal.Zero
		if side == p.Side {
			ts = p.TrailingStop
		}
		return map[string]any{"positionIdx": idx, "symbol": sym, "side": side, "size": size.String(),
			"avgPrice": "0", "leverage": lev.String(), "tpslMode": "Full", "takeProfit": "0.00",
			"stopLoss": "0.00", "trailingStop": listedPrice(CategoryLinear, ts)}
	}
	list := []any{entry(0, p.Side, p.Size)}
	if s.hedge {
		// Hedge mode lists one position per side: positionIdx 1 (Buy)
		// and 2 (Sell).
		buy, sell := decimal.Zero, decimal.Zero
		if p.Side == "Buy" {
			buy = p.Size
		} else if p.Side == "Sell" {
			sell = p.Size
		}
		list = []any{entry(1, "Buy", buy), entry(2, "Sell", sell)}
	}
	return ok(map[string]any{"category": CategoryLinear, "list": list, "nextPageCursor": ""})
}

// defaultLeverage is what Bybit shows for a symbol whose leverage was never
// set; setting it again answers 110043.
const defaultLeverage = 10

func (s *Server) serveLeverage(_ *http.Request, body []byte) reply {
	var req struct {
		Category     string `json:"category"`
		Symbol       string `json:"symbol"`
		BuyLeverage  string `json:"buyLeverage"`
		SellLeverage string `json:"sellLeverage"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(10001, "params error: body is not json")
	}
	if req.Category != CategoryLinear {
		return fail(10001, "params error: category invalid")
	}
	in, known := s.instruments[CategoryLinear][req.Symbol]
	if !known {
		return fail(10001, "params error: symbol invalid")
	}
	if req.BuyLeverage != req.SellLeverage {
		return fail(10001, "params error: buy leverage must equal sell leverage in one-way mode")
	}
	// leverageFilter: minLeverage 1, maxLeverage, leverageStep 0.01.
	lev, err := decimal.NewFromString(req.BuyLeverage)
	if err != nil || lev.LessThan(decimal.NewFromInt(1)) || lev.GreaterThan(decimal.NewFromInt(int64(in.MaxLeverage))) ||
		!lev.Mod(decimal.RequireFromString("0.01")).IsZero() {
		return fail(10001, "params error: leverage invalid")
	}
	s.leverageSet[req.Symbol]++
	if s.refuseLeverage {
		return fail(110013, "cannot set leverage due to risk limit level")
	}
	cur := s.leverage[req.Symbol]
	if cur.IsZero() {
		cur = decimal.NewFromInt(defaultLeverage)
	}
	if cur.Equal(lev) {
		return fail(110043, "leverage not modified")
	}
	s.leverage[req.Symbol] = lev
	return ok(struct{}{})
}

func (s *Server) serveWallet(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	if q.Get("accountType") != "UNIFIED" {
		return fail(10001, "accountType only support UNIFIED")
	}
	// The account-wide fields cover every coin; coin filters the list.
	wallet, im := decimal.Zero, decimal.Zero
	coins := []any{}
	for coin, b := range s.balances {
		posIM, ordIM := s.positionIM(coin), s.orderIM(coin)
		wallet, im = wallet.Add(s.usdValue(coin, b.WalletBalance)), im.Add(s.usdValue(coin, posIM.Add(ordIM)))
		if q.Get("coin") != "" && q.Get("coin") != coin {
			continue
		}
		coins = append(coins, map[string]string{
			"coin": coin, "walletBalance": b.WalletBalance.String(), "locked": b.Locked.String(),
			"spotBorrow": "0", "equity": b.WalletBalance.String(), "bonus": "0",
			"usdValue":        s.usdValue(coin, b.WalletBalance).String(),
			"totalPositionIM": posIM.String(), "totalOrderIM": ordIM.String(),
		})
	}
	return ok(map[string]any{"list": []any{map[string]any{
		"accountType": "UNIFIED", "coin": coins,
		"totalWalletBalance": wallet.String(), "totalMarginBalance": wallet.String(), "totalEquity": wallet.String(),
		"totalInitialMargin": im.String(), "totalAvailableBalance": wallet.Sub(im).String(),
	}}})
}

// maxMkt is the instrument's maxMktOrderQty, 100000 when unset.
func (in Instrument) maxMkt() decimal.Decimal {
	if in.MaxMktOrderQty.IsPositive() {
		return in.MaxMktOrderQty
	}
	return decimal.NewFromInt(100000)
}

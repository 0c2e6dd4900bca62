package okxfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/shopspring/decimal"
)

// clOrdIDPattern is OKX's documented form of clOrdId: up to 32
// case-sensitive alphanumerics.
var clOrdIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,32}$`)

type reply struct {
	status int
	code   string
	msg    string
	data   any
}

func ok(data any) reply { return reply{status: http.StatusOK, code: "0", data: data} }

// fail is an envelope error: code and message at the top.
func fail(status, code int, msg string) reply {
	return reply{status: status, code: strconv.Itoa(code), msg: msg, data: []any{}}
}

// orderFail is a refused order: envelope code 1, the reason in sCode.
func orderFail(clOrdID string, code int, msg string) reply {
	return reply{status: http.StatusOK, code: "1", msg: "All operations failed",
		data: []map[string]string{{"ordId": "", "clOrdId": clOrdID, "sCode": strconv.Itoa(code), "sMsg": msg}}}
}

func write(w http.ResponseWriter, r reply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": r.code, "msg": r.msg, "data": r.data})
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v5/public/time", func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		write(w, ok([]map[string]string{{"ts": strconv.FormatInt(s.Now().UnixMilli(), 10)}}))
	})
	mux.HandleFunc("GET /api/v5/account/instruments", s.private(s.serveInstruments))
	mux.HandleFunc("GET /api/v5/account/balance", s.private(s.serveBalance))
	mux.HandleFunc("GET /api/v5/account/positions", s.private(s.servePositions))
	mux.HandleFunc("POST /api/v5/account/set-leverage", s.private(s.serveLeverage))
	mux.HandleFunc("GET /api/v5/account/config", s.private(s.serveConfig))
	mux.HandleFunc("GET /api/v5/market/ticker", func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		write(w, s.serveTicker(r))
	})
	mux.HandleFunc("GET /api/v5/account/leverage-info", s.private(s.serveLeverageInfo))
	mux.HandleFunc("GET /api/v5/trade/order", s.private(s.serveOrder))
	mux.HandleFunc("POST /api/v5/trade/order", s.servePlace)
	mux.HandleFunc("POST "+PathCancel, s.private(s.serveCancel))
	mux.HandleFunc("POST "+PathAlgo, s.serveAlgoPlace)
	mux.HandleFunc("GET "+PathAlgo, s.private(s.serveAlgoDetails))
	mux.HandleFunc("POST "+PathCancelAlgo, s.private(s.serveAlgoCancel))
	mux.HandleFunc("GET "+PathAlgoPending, s.private(s.serveAlgoPending))
	return mux
}

func (s *Server) count(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.URL.Path]++
}

// private wraps a handler with OKX's authentication.
func (s *Server) private(h func(r *http.Request, body []byte) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		body, rep, okAuth := s.authenticate(r)
		if !okAuth {
			write(w, rep)
			return
		}
		write(w, h(r, body))
	}
}

// authenticate checks key, passphrase, timestamp and signature as OKX
// documents ("REST Authentication"): the signature is the Base64
// HMAC-SHA256 of timestamp + METHOD + requestPath (with the query) + body.
func (s *Server) authenticate(r *http.Request) ([]byte, reply, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fail(http.StatusBadRequest, 50000, "Body for POST request cannot be empty."), false
	}
	s.mu.Lock()
	key, secret, pass, now := s.apiKey, s.apiSecret, s.passphrase, s.now()
	s.mu.Unlock()
	switch h := r.Header; {
	case h.Get("OK-ACCESS-KEY") == "":
		return nil, fail(http.StatusUnauthorized, 50103, `Request header "OK-ACCESS-KEY" cannot be empty.`), false
	case h.Get("OK-ACCESS-KEY") != key:
		return nil, fail(http.StatusUnauthorized, 50111, "Invalid OK-ACCESS-KEY."), false
	case h.Get("OK-ACCESS-PASSPHRASE") != pass:
		return nil, fail(http.StatusUnauthorized, 50105, `Request header "OK-ACCESS-PASSPHRASE" incorrect.`), false
	}
	ts := r.Header.Get("OK-ACCESS-TIMESTAMP")
	at, err := time.Parse("2006-01-02T15:04:05.000Z", ts)
	if err != nil {
		return nil, fail(http.StatusUnauthorized, 50112, "Invalid OK-ACCESS-TIMESTAMP."), false
	}
	if d := now.Sub(at); d > TimestampTolerance || d < -TimestampTolerance {
		return nil, fail(http.StatusUnauthorized, 50102, "Timestamp request expired."), false
	}
	path := r.URL.Path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + r.Method + path + string(body)))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("OK-ACCESS-SIGN"))) {
		return nil, fail(http.StatusUnauthorized, 50113, "Invalid signature."), false
	}
	return body, reply{}, true
}

func str(d decimal.Decimal) string { return d.String() }

func compact(instID string) string {
	return strings.ReplaceAll(strings.TrimSuffix(instID, "-SWAP"), "-", "")
}

func (s *Server) serveInstruments(r *http.Request, _ []byte) reply {
	typ := r.URL.Query().Get("instType")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, in := range s.instruments {
		if in.InstType != typ {
			continue
		}
		m := map[string]any{"instType": in.InstType, "instId": in.InstID, "baseCcy": in.BaseCcy, "quoteCcy": in.QuoteCcy,
			"settleCcy": in.SettleCcy, "tickSz": str(in.TickSz), "lotSz": str(in.LotSz), "minSz": str(in.MinSz), "state": in.State,
			"ctVal": "", "ctType": "", "maxMktSz": ""}
		if in.MaxMktSz.IsPositive() {
			m["maxMktSz"] = str(in.MaxMktSz)
		}
		if in.InstType == InstSwap {
			m["ctVal"], m["ctType"] = str(in.CtVal), "linear"
		}
		out = append(out, m)
	}
	return ok(out)
}

func (s *Server) serveBalance(r *http.Request, _ []byte) reply {
	ccy := r.URL.Query().Get("ccy")
	s.mu.Lock()
	defer s.mu.Unlock()
	var details []map[string]string
	for c, amt := range s.balances {
		if ccy == "" || c == ccy {
			details = append(details, map[string]string{"ccy": c, "availBal": str(amt), "cashBal": str(amt)})
		}
	}
	return ok([]map[string]any{{"details": details}})
}

func (s *Server) servePositions(r *http.Request, _ []byte) reply {
	inst := r.URL.Query().Get("instId")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]string{}
	for id, pos := range s.positions {
		if (inst == "" || id == inst) && !pos.IsZero() {
			// Get positions: "When the account is in net mode, net
			// positions will be displayed, and when the account is in
			// long/short mode, long or short positions will be displayed"
			// — posSide long or short, pos the side's (positive) size.
			side := "net"
			if s.longShort {
				side = "long"
				if pos.IsNegative() {
					side, pos = "short", pos.Neg()
				}
			}
			out = append(out, map[string]string{"instId": id, "instType": InstSwap, "posSide": side, "pos": str(pos), "mgnMode": "cross"})
		}
	}
	return ok(out)
}

// serveTicker is GET /api/v5/market/ticker (public): the last price the
// fake fills market orders at.
func (s *Server) serveTicker(r *http.Request) reply {
	inst := r.URL.Query().Get("instId")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, found := s.instruments[inst]; !found {
		return fail(http.StatusOK, 51001, "Instrument ID or Spread ID doesn't exist.")
	}
	return ok([]map[string]string{{"instId": inst, "last": str(s.prices[compact(inst)])}})
}

// serveConfig is GET /api/v5/account/config: posMode is the account's
// position mode, long_short_mode (hedge) or net_mode (one-way).
func (s *Server) serveConfig(_ *http.Request, _ []byte) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	mode := "net_mode"
	if s.longShort {
		mode = "long_short_mode"
	}
	return ok([]map[string]string{{"acctLv": "2", "posMode": mode}})
}

// serveLeverageInfo is GET /api/v5/account/leverage-info: the leverage of
// an instrument in a margin mode (20 when never set, OKX's default here).
func (s *Server) serveLeverageInfo(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	inst, mgnMode := q.Get("instId"), q.Get("mgnMode")
	if mgnMode != "cross" && mgnMode != "isolated" {
		return fail(http.StatusOK, 51000, "Parameter mgnMode error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, found := s.instruments[inst]; !found {
		return fail(http.StatusOK, 51001, "Instrument ID or Spread ID doesn't exist.")
	}
	lever := s.leverage[inst]
	if lever == 0 {
		lever = 20
	}
	return ok([]map[string]string{{"instId": inst, "mgnMode": mgnMode, "posSide": "net", "lever": strconv.Itoa(lever)}})
}

func (s *Server) serveLeverage(_ *http.Request, body []byte) reply {
	var req struct {
		InstID  string `json:"instId"`
		Lever   string `json:"lever"`
		MgnMode string `json:"mgnMode"`
	}
	if json.Unmarshal(body, &req) != nil {
		return fail(http.StatusBadRequest, 50002, "JSON syntax error")
	}
	lever, err := strconv.Atoi(req.Lever)
	if err != nil || lever < 1 || lever > 125 {
		return fail(http.StatusOK, 51000, "Parameter lever error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.instruments[req.InstID]
	if !found {
		return fail(http.StatusOK, 51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if in.Lever > 0 && lever > in.Lever {
		// Error_Code/Rest_API/Account.md, 59102 (HTTP 200).
		return fail(http.StatusOK, 59102, "Leverage exceeds the maximum limit. Please lower the leverage.")
	}
	if s.refuseLeverage {
		return fail(http.StatusOK, 59107, "You have pending orders under the service, please modify the leverage after canceling all pending orders.")
	}
	s.leverageSets[req.InstID]++
	s.leverage[req.InstID] = lever
	return ok([]map[string]string{{"instId": req.InstID, "lever": req.Lever, "mgnMode": req.MgnMode}})
}

// serveOrder answers GET /api/v5/trade/order by ordId or clOrdId: "If the
// clOrdId is associated with multiple orders, only the latest one will be
// returned." An order inside its lookup lag is not there yet (51603).
func (s *Server) serveOrder(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	inst, ordID, clOrdID := q.Get("instId"), q.Get("ordId"), q.Get("clOrdId")
	if ordID == "" && clOrdID == "" {
		return fail(http.StatusOK, 51003, "Either client order ID or order ID is required.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	now := s.now()
	for i := len(s.orders) - 1; i >= 0; i-- {
		o := s.orders[i]
		if o.InstID != inst || now.Before(o.VisibleAt) {
			continue
		}
		if (ordID != "" && o.OrdID == ordID) || (ordID == "" && o.ClOrdID == clOrdID) {
			m := orderJSON(o)
			if fee, ccy := s.feeOf(o); ccy != "" {
				m["fee"], m["feeCcy"] = fee.String(), ccy
			}
			return ok([]map[string]any{m})
		}
	}
	return fail(http.StatusOK, 51603, "Order does not exist.")
}

func orderJSON(o *Order) map[string]any {
	m := map[string]any{"instType": o.InstType, "instId": o.InstID, "ordId": o.OrdID, "clOrdId": o.ClOrdID,
		"side": o.Side, "ordType": o.OrdType, "sz": str(o.Sz), "accFillSz": str(o.AccFillSz), "state": o.State,
		"px": "", "avgPx": "", "reduceOnly": strconv.FormatBool(o.ReduceOnly), "cTime": strconv.FormatInt(o.CTime.UnixMilli(), 10)}
	if o.OrdType == "limit" {
		m["px"] = str(o.Px)
	}
	if o.AccFillSz.IsPositive() {
		m["avgPx"] = str(o.AvgPx)
	}
	// Get_Order_Details.md: attachAlgoOrds, the TP/SL attached when
	// placing the order ([] when none).
	algos := []map[string]string{}
	if !o.TpTriggerPx.IsZero() || !o.SlTriggerPx.IsZero() {
		algo := map[string]string{"attachAlgoId": "8" + o.OrdID[1:], "tpTriggerPx": "", "tpOrdPx": "", "slTriggerPx": "", "slOrdPx": "",
			"tpTriggerPxType": "", "slTriggerPxType": "", "failCode": "", "failReason": ""}
		if !o.TpTriggerPx.IsZero() {
			algo["tpTriggerPx"], algo["tpOrdPx"], algo["tpTriggerPxType"] = str(o.TpTriggerPx), str(o.TpOrdPx), "last"
		}
		if !o.SlTriggerPx.IsZero() {
			algo["slTriggerPx"], algo["slOrdPx"], algo["slTriggerPxType"] = str(o.SlTriggerPx), str(o.SlOrdPx), "last"
		}
		algos = append(algos, algo)
	}
	m["attachAlgoOrds"] = algos
	return m
}

// attachAlgo is one element of a placement's attachAlgoOrds.
type attachAlgo struct {
	AttachAlgoClOrdID string `json:"attachAlgoClOrdId"`
	TpTriggerPx       string `json:"tpTriggerPx"`
	TpOrdPx           string `json:"tpOrdPx"`
	TpTriggerPxType   string `json:"tpTriggerPxType"`
	SlTriggerPx       string `json:"slTriggerPx"`
	SlOrdPx           string `json:"slOrdPx"`
	SlTriggerPxType   string `json:"slTriggerPxType"`
}

// checkAttached applies the rules of Post_Place_Order.md's attachAlgoOrds
// and the error codes of Error_Code/Rest_API/Public.md to a placement:
// each trigger price comes with its order price (-1: market) and the
// reverse (51000); a reduce-only order takes none (51100); a buy's
// take-profit is above, its stop-loss below the order price (limit:
// 51046, 51047) or the best ask (market: 51050, 51051), a sell's the
// other way round (51048, 51049; 51052, 51053) — the fake's single last
// price stands for the best bid and ask. The fake takes one element (one
// TP and/or one SL), not split TPs (sz).
func checkAttached(b placeBody, ref decimal.Decimal) (tp, tpOrd, sl, slOrd decimal.Decimal, rep reply, refused bool) {
	if len(b.AttachAlgoOrds) == 0 {
		return tp, tpOrd, sl, slOrd, rep, false
	}
	if b.ReduceOnly {
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51100, "Unable to place order. Take profit/Stop loss conditions cannot be added to reduce-only orders."), true
	}
	if len(b.AttachAlgoOrds) > 1 {
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51000, "Parameter attachAlgoOrds error: the fake takes one TP/SL element"), true
	}
	a := b.AttachAlgoOrds[0]
	pair := func(trigger, ord string) (decimal.Decimal, decimal.Decimal, bool) {
		if (trigger == "") != (ord == "") {
			return decimal.Zero, decimal.Zero, false
		}
		if trigger == "" {
			return decimal.Zero, decimal.Zero, true
		}
		t, err1 := decimal.NewFromString(trigger)
		o, err2 := decimal.NewFromString(ord)
		return t, o, err1 == nil && err2 == nil && t.IsPositive() && (o.IsPositive() || o.Equal(decimal.NewFromInt(-1)))
	}
	var good bool
	if tp, tpOrd, good = pair(a.TpTriggerPx, a.TpOrdPx); !good {
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51000, "Parameter tpOrdPx error"), true
	}
	if sl, slOrd, good = pair(a.SlTriggerPx, a.SlOrdPx); !good {
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51000, "Parameter slOrdPx error"), true
	}
	limit, buy := b.OrdType == "limit", b.Side == "buy"
	switch {
	case !tp.IsZero() && buy && !tp.GreaterThan(ref):
		if limit {
			return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51046, "The take profit trigger price must be higher than the order price"), true
		}
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51050, "The take profit trigger price must be higher than the best ask price"), true
	case !sl.IsZero() && buy && !sl.LessThan(ref):
		if limit {
			return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51047, "The stop loss trigger price must be lower than the order price"), true
		}
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51051, "The stop loss trigger price must be lower than the best ask price"), true
	case !tp.IsZero() && !buy && !tp.LessThan(ref):
		if limit {
			return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51048, "The take profit trigger price must be lower than the order price"), true
		}
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51052, "The take profit trigger price must be lower than the best bid price"), true
	case !sl.IsZero() && !buy && !sl.GreaterThan(ref):
		if limit {
			return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51049, "The stop loss trigger price must be higher than the order price"), true
		}
		return tp, tpOrd, sl, slOrd, orderFail(b.ClOrdID, 51053, "The stop loss trigger price must be higher than the best bid price"), true
	}
	return tp, tpOrd, sl, slOrd, rep, false
}

type placeBody struct {
	InstID     string `json:"instId"`
	TdMode     string `json:"tdMode"`
	ClOrdID    string `json:"clOrdId"`
	Side       string `json:"side"`
	OrdType    string `json:"ordType"`
	Sz         string `json:"sz"`
	Px         string `json:"px"`
	TgtCcy     string `json:"tgtCcy"`
	ReduceOnly bool   `json:"reduceOnly"`
	PosSide    string `json:"posSide"`
	// AttachAlgoOrds are the TP/SL attached to the order.
	AttachAlgoOrds []attachAlgo `json:"attachAlgoOrds"`
	// BanAmend true makes a spot market order that the funds cannot
	// cover a refusal instead of an order for what they can buy.
	BanAmend bool `json:"banAmend"`
}

// servePlace is POST /api/v5/trade/order: authentication, expTime, faults,
// then the order's rules in the order OKX applies them.
func (s *Server) servePlace(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	body, rep, okAuth := s.authenticate(r)
	if !okAuth {
		write(w, rep)
		return
	}
	var expTime time.Time
	if v := r.Header.Get("expTime"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			write(w, fail(http.StatusBadRequest, 51000, "Parameter expTime error"))
			return
		}
		expTime = time.UnixMilli(ms)
	}
	s.mu.Lock()
	s.placements++
	var inst struct {
		InstID string `json:"instId"`
	}
	_ = json.Unmarshal(body, &inst)
	if s.overOrderRate(inst.InstID, s.now()) {
		s.mu.Unlock()
		write(w, rateLimited())
		return
	}
	var f Fault
	faulted := len(s.faults) > 0
	if faulted {
		f, s.faults = s.faults[0], s.faults[1:]
	}
	now := s.now()
	if !expTime.IsZero() && now.After(expTime) {
		s.mu.Unlock()
		var b placeBody
		_ = json.Unmarshal(body, &b)
		write(w, orderFail(b.ClOrdID, 50037, "Order expired."))
		return
	}
	if faulted && f.Kind == FaultLateInEngine {
		s.late.Add(lateOrder{body: body, expTime: expTime}, now.Add(f.Delay))
		s.mu.Unlock()
		write(w, fail(http.StatusBadRequest, 50004, "API endpoint request timeout. (does not mean that the request was successful or failed, please check the request result)."))
		return
	}
	if faulted && f.Kind == FaultRefuse {
		s.mu.Unlock()
		var b placeBody
		_ = json.Unmarshal(body, &b)
		write(w, orderFail(b.ClOrdID, f.Code, f.Msg))
		return
	}
	rep = s.place(body, now)
	s.mu.Unlock()
	if faulted && rep.code == "0" {
		switch f.Kind {
		case FaultServerErrorAfterAccept:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
			return
		case FaultHangAfterAccept:
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		case FaultDropAfterAccept:
			venuefake.Drop(w)
			return
		}
	}
	write(w, rep)
}

// place books an order if OKX's rules allow it; callers hold mu.
func (s *Server) place(body []byte, now time.Time) reply {
	var b placeBody
	if err := json.Unmarshal(body, &b); err != nil {
		return fail(http.StatusBadRequest, 50002, "JSON syntax error")
	}
	if !clOrdIDPattern.MatchString(b.ClOrdID) {
		return orderFail(b.ClOrdID, 51000, "Parameter clOrdId error")
	}
	in, found := s.instruments[b.InstID]
	if !found {
		return orderFail(b.ClOrdID, 51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if in.State != "live" {
		return orderFail(b.ClOrdID, 51022, "Contract suspended.")
	}
	if (b.Side != "buy" && b.Side != "sell") || (b.OrdType != "market" && b.OrdType != "limit") {
		return orderFail(b.ClOrdID, 51000, "Parameter side or ordType error")
	}
	if in.InstType == InstSwap && s.longShort && b.PosSide != "long" && b.PosSide != "short" {
		// posSide: "Required in long/short mode, and can only be long or
		// short."
		return orderFail(b.ClOrdID, 51000, "Parameter posSide error")
	}
	// "clOrdId must be unique among the clOrdIds of all pending orders."
	for _, o := range s.orders {
		if o.ClOrdID == b.ClOrdID && o.Pending() {
			return orderFail(b.ClOrdID, 51016, "Client order ID already exists.")
		}
	}
	sz, err := decimal.NewFromString(b.Sz)
	if err != nil || !sz.IsPositive() {
		return orderFail(b.ClOrdID, 51000, "Parameter sz error")
	}
	if in.InstType == InstSpot && b.OrdType == "market" && b.TgtCcy != "base_ccy" && b.Side == "buy" {
		// The fake, like hoox, sizes orders in the base currency; a quote
		// sized market buy would be a different order than hoox meant.
		return orderFail(b.ClOrdID, 51000, "Parameter tgtCcy error: the fake only supports base_ccy")
	}
	if !sz.Mod(in.LotSz).IsZero() {
		return orderFail(b.ClOrdID, 51121, "Order quantity must be a multiple of the lot size.")
	}
	if sz.LessThan(in.MinSz) {
		return orderFail(b.ClOrdID, 51020, "Your order should meet or exceed the minimum order amount.")
	}
	if b.OrdType == "market" && in.MaxMktSz.IsPositive() && sz.GreaterThan(in.MaxMktSz) {
		// Get_Instruments.md maxMktSz, "Max order quantity of a single
		// market order"; Error_Code/Rest_API/Public.md 51202.
		return orderFail(b.ClOrdID, 51202, "Market order amount exceeds the maximum amount.")
	}
	price := s.prices[compact(b.InstID)]
	var px decimal.Decimal
	if b.OrdType == "limit" {
		if px, err = decimal.NewFromString(b.Px); err != nil || !px.IsPositive() {
			return orderFail(b.ClOrdID, 51000, "Parameter px error")
		}
		if !px.Mod(in.TickSz).IsZero() {
			return orderFail(b.ClOrdID, 51000, "Parameter px error: not a multiple of the tick size")
		}
	}
	ref := price
	if b.OrdType == "limit" {
		ref = px
	}
	tp, tpOrd, sl, slOrd, refusal, refused := checkAttached(b, ref)
	if refused {
		return refusal
	}
	if in.InstType == InstSwap {
		pos := s.positions[b.InstID]
		if b.ReduceOnly {
			reduces := (b.Side == "sell" && pos.IsPositive()) || (b.Side == "buy" && pos.IsNegative())
			if !reduces || sz.GreaterThan(pos.Abs()) {
				return orderFail(b.ClOrdID, 51169, "Order failed because you don't have any positions in this direction for this contract to reduce or close.")
			}
		}
	} else {
		quote, baseBal := s.balances[in.QuoteCcy], s.balances[in.BaseCcy]
		marketBuy := b.Side == "buy" && b.OrdType == "market"
		cost := sz.Mul(ref)
		if marketBuy {
			// "As the filled price for market orders cannot be determined
			// in advance, OKX reserves/freezes your quote currency by an
			// additional 5% for risk check" (Post_Place_Order.md, ordType).
			cost = cost.Mul(marketBuyFreeze)
		}
		if marketBuy && quote.LessThan(cost) && !b.BanAmend {
			// tgtCcy base_ccy: "If the quantity you enter is greater than
			// what you can buy …, the system will execute the order
			// according to your maximum buyable … quantity" unless
			// banAmend is true.
			sz = quote.Div(ref.Mul(marketBuyFreeze)).Div(in.LotSz).Floor().Mul(in.LotSz)
			cost = sz.Mul(ref).Mul(marketBuyFreeze)
			if sz.LessThan(in.MinSz) {
				sz = decimal.Zero
			}
		}
		if (b.Side == "buy" && (quote.LessThan(cost) || !sz.IsPositive())) || (b.Side == "sell" && baseBal.LessThan(sz)) {
			ccy := in.QuoteCcy
			if b.Side == "sell" {
				ccy = in.BaseCcy
			}
			return orderFail(b.ClOrdID, 51008, "Order failed. Insufficient "+ccy+" balance in account")
		}
	}
	s.nextID++
	lag := time.Duration(0)
	if s.nextLag != nil {
		lag, s.nextLag = *s.nextLag, nil
	}
	o := &Order{InstType: in.InstType, InstID: b.InstID, OrdID: strconv.FormatInt(700000000000000000+s.nextID, 10), ClOrdID: b.ClOrdID,
		Side: b.Side, OrdType: b.OrdType, Sz: sz, Px: px, State: "live", ReduceOnly: b.ReduceOnly, CTime: now, VisibleAt: now.Add(lag),
		TpTriggerPx: tp, TpOrdPx: tpOrd, SlTriggerPx: sl, SlOrdPx: slOrd}
	if len(b.AttachAlgoOrds) == 1 {
		o.AttachAlgoClOrdID = b.AttachAlgoOrds[0].AttachAlgoClOrdID
	}
	s.orders = append(s.orders, o)
	if b.OrdType == "market" || (b.Side == "buy" && px.GreaterThanOrEqual(price)) || (b.Side == "sell" && px.LessThanOrEqual(price)) {
		s.fill(o, price)
	}
	return ok([]map[string]string{{"ordId": o.OrdID, "clOrdId": o.ClOrdID, "tag": "", "sCode": "0", "sMsg": "Order placed"}})
}

// marketBuyFreeze is what a spot market buy freezes of its quote cost: 5 %
// more (Post_Place_Order.md, ordType market).
var marketBuyFreeze = decimal.RequireFromString("1.05")

// fill executes o in full at price; callers hold mu.
func (s *Server) fill(o *Order, price decimal.Decimal) {
	in := s.instruments[o.InstID]
	o.State, o.AccFillSz, o.AvgPx = "filled", o.Sz, price
	signed := o.Sz
	if o.Side == "sell" {
		signed = signed.Neg()
	}
	if in.InstType == InstSwap {
		s.positions[o.InstID] = s.positions[o.InstID].Add(signed)
		s.generateAttached(o)
		return
	}
	s.balances[in.BaseCcy] = s.balances[in.BaseCcy].Add(signed)
	s.balances[in.QuoteCcy] = s.balances[in.QuoteCcy].Sub(signed.Mul(price))
	if s.spotFeeRate != nil && s.spotFeeRate.IsPositive() {
		received, ccy := o.Sz, in.BaseCcy
		if o.Side == "sell" {
			received, ccy = o.Sz.Mul(price), in.QuoteCcy
		}
		fee := received.Mul(*s.spotFeeRate).Truncate(8)
		s.balances[ccy] = s.balances[ccy].Sub(fee)
		o.Fee, o.FeeCcy = fee.Neg(), ccy
	}
}

// runEngine hands due late orders to the engine: refused past their
// expTime, booked otherwise; callers hold mu.
func (s *Server) runEngine() {
	s.finishCancels(s.now())
	s.late.Run(s.now(), func(l lateOrder, due time.Time) bool {
		if !l.expTime.IsZero() && due.After(l.expTime) {
			return false
		}
		s.place(l.body, due)
		return true
	})
}

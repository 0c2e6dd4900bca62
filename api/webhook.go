package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// signalResponse is the body of a placed (200) or reconciling (202) signal.
type signalResponse struct {
	TraceID    string    `json:"trace_id"`
	Status     string    `json:"status"`
	Duplicate  bool      `json:"duplicate"`
	ReceivedAt time.Time `json:"received_at"`
	Order      *orderDTO `json:"order"`
	// Orders lists every order of a signal that placed several (a split
	// close): the primary first, then its legs in plan order. Omitted for
	// a one-order signal.
	Orders []*orderDTO `json:"orders,omitempty"`
	// Attached are the exits the order carries (take-profit, stop-loss);
	// left out when it carries none.
	Attached []attachedDTO `json:"attached,omitempty"`
	// Cancelled lists the orders a cancel signal cancelled (an empty list
	// when none was open); absent for every other signal.
	Cancelled *[]orderDTO `json:"cancelled,omitempty"`
}

// attachedDTO is one exit attached to an order: the shape the answer, the
// admin API and the audit share (separate exit orders add their own IDs).
type attachedDTO struct {
	Role string `json:"role"`
	// TriggerPrice is absent for a trailing stop, which has none: it
	// trails by CallbackRate instead.
	TriggerPrice string `json:"trigger_price,omitempty"`
	// CallbackRate is a trailing stop's rate in percent (Binance USDⓈ-M
	// callbackRate, Binance spot trailingDelta / 100).
	CallbackRate string `json:"callback_rate,omitempty"`
	// TrailingDistance is a trailing stop's price distance (Bybit).
	TrailingDistance string `json:"trailing_distance,omitempty"`
	Status           string `json:"status"`
	// ClientOrderID and ExchangeOrderID identify an exit placed as its own
	// order (Binance USDⓈ-M); omitted for an exit held on the entry.
	ClientOrderID   string `json:"client_order_id,omitempty"`
	ExchangeOrderID string `json:"exchange_order_id,omitempty"`
}

// newAttachedDTOs lists o's attached exits, nil when it has none (or o is
// nil).
func newAttachedDTOs(o *db.OrderRow) []attachedDTO {
	if o == nil {
		return nil
	}
	var out []attachedDTO
	for _, a := range o.Attached() {
		dto := attachedDTO{Role: a.Role, TriggerPrice: a.TriggerPrice.String(), Status: a.Status,
			ClientOrderID: a.ClientOrderID, ExchangeOrderID: a.ExchangeOrderID}
		if a.Role == exchange.RoleTrailingStop {
			dto.TriggerPrice = ""
			if a.CallbackRate.Valid {
				dto.CallbackRate = a.CallbackRate.Decimal.String()
			}
			if a.TrailingDistance.Valid {
				dto.TrailingDistance = a.TrailingDistance.Decimal.String()
			}
		}
		out = append(out, dto)
	}
	return out
}

type orderDTO struct {
	ID              string  `json:"id"`
	ClientOrderID   string  `json:"client_order_id"`
	Exchange        string  `json:"exchange"`
	Symbol          string  `json:"symbol"`
	Side            string  `json:"side"`
	OrderType       string  `json:"order_type"`
	Quantity        string  `json:"quantity"`
	Price           *string `json:"price"`
	Status          string  `json:"status"`
	ExchangeOrderID *string `json:"exchange_order_id"`
	FillPrice       *string `json:"fill_price,omitempty"`
	FilledQuantity  *string `json:"filled_quantity,omitempty"`
	RejectReason    *string `json:"reject_reason,omitempty"`
	// Role is what the order is to its signal: primary, or a leg's role
	// (close_part, …).
	Role string `json:"role,omitempty"`
	// AvgPrice, Fee and FeeAsset say what the order executed at and what
	// the venue charged, once it executed something.
	AvgPrice *string `json:"avg_price,omitempty"`
	Fee      *string `json:"fee,omitempty"`
	FeeAsset *string `json:"fee_asset,omitempty"`
}

func newOrderDTO(o *db.OrderRow) *orderDTO {
	if o == nil {
		return nil
	}
	return &orderDTO{ID: o.ID.String(), ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Symbol: o.Symbol,
		Side: o.Side, OrderType: o.OrderType, Quantity: o.Quantity.String(), Price: decimalText(o.Price),
		Status: o.Status, ExchangeOrderID: o.ExchangeOrderID, FillPrice: decimalText(o.FillPrice),
		FilledQuantity: decimalText(o.FilledQuantity), RejectReason: o.RejectReason, Role: o.Role,
		AvgPrice: decimalText(o.AvgPrice), Fee: decimalText(o.Fee), FeeAsset: o.FeeAsset}
}

// attachedWithLegs lists the exits of an entry: those the venue holds on
// the order itself, then those placed as their own orders (legs).
func attachedWithLegs(primary *db.OrderRow, legs []db.OrderRow) []attachedDTO {
	out := newAttachedDTOs(primary)
	for i := range legs {
		out = append(out, newAttachedDTOs(&legs[i])...)
	}
	return out
}

// ordersDTO is the primary order and its legs' orders, or nil when the
// signal placed only one.
func ordersDTO(primary *db.OrderRow, legs []db.OrderRow) []*orderDTO {
	if primary == nil || len(legs) == 0 {
		return nil
	}
	out := []*orderDTO{newOrderDTO(primary)}
	for i := range legs {
		out = append(out, newOrderDTO(&legs[i]))
	}
	return out
}

// newOrderDTOs is the list of orders a cancel cancelled; nil (absent from
// the body) when orders is nil, an empty list when it is empty.
func newOrderDTOs(orders []db.OrderRow) *[]orderDTO {
	if orders == nil {
		return nil
	}
	out := make([]orderDTO, len(orders))
	for i := range orders {
		out[i] = *newOrderDTO(&orders[i])
	}
	return &out
}

// decimalText is d as an exact decimal string, nil when d is null: bodies
// carry quantities and prices as strings, never as floats.
func decimalText(d decimal.NullDecimal) *string {
	if !d.Valid {
		return nil
	}
	s := d.Decimal.String()
	return &s
}

// webhook takes a signal. The checks run in a fixed order so each error
// means one thing: size and content type → source IP → JSON syntax → secret
// → rate limit → fields and trace (what picks the trace must be covered by
// the credential: credential.covers) → (kill switch, claim, dispatch in the
// gateway).
func (s *Server) webhook(c echo.Context) error {
	start := s.cfg.Timing.Clock()
	req := c.Request()
	if err := checkContentType(req.Header.Get(echo.HeaderContentType)); err != nil {
		return err
	}
	if err := checkContentEncoding(c); err != nil {
		return err
	}
	if req.ContentLength > s.cfg.MaxBody {
		return problem(codes.TooLarge, fmt.Sprintf("body is %d bytes; the limit is %d", req.ContentLength, s.cfg.MaxBody))
	}
	ip, err := netip.ParseAddr(c.RealIP())
	if err != nil {
		return problem(codes.Forbidden, "source address could not be determined")
	}
	ip = ip.Unmap()
	if !s.cfg.AllowedIPs.Allows(ip) {
		return problem(codes.Forbidden, fmt.Sprintf("source address %s is not allowed", ip))
	}
	body, err := readBody(c, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	if int64(len(body)) > s.cfg.MaxBody {
		return problem(codes.TooLarge, fmt.Sprintf("body exceeds the limit of %d bytes", s.cfg.MaxBody))
	}
	raw, err := signal.Decode(body)
	if err != nil {
		return invalidSignal(err)
	}
	cred, err := s.authenticate(raw.Secret(), req.Header, body, s.cfg.Timing.Clock())
	if err != nil {
		return err
	}
	if s.limiter != nil && !s.limiter.Allow() {
		return problem(codes.RateLimited, "too many signals; slow down").withRetryAfter(time.Second)
	}
	sig, err := raw.Signal()
	if err != nil {
		return invalidSignal(err)
	}
	headerKey := req.Header.Get(signal.HeaderIdempotencyKey)
	targets, err := s.targets(sig, headerKey, start)
	if err != nil {
		return err
	}
	// Every account's trace comes from the same key source, so what
	// covers one covers all.
	if err := cred.covers(targets[0].trace, headerKey, sig.ClientKey); err != nil {
		return err
	}
	if s.deps.Gateway == nil {
		return problem(codes.Unavailable, "this server executes no signals").withRetryAfter(5 * time.Second)
	}
	s.deps.Stages.ObserveStage(gateway.StageDecode, time.Since(start))
	if sig.FanOut {
		return s.fanOut(c, sig, targets, ip, start)
	}
	one := targets[0]
	out, err := s.deps.Gateway.Execute(req.Context(), gateway.Input{Signal: sig.ForAccount(one.account), Trace: one.trace, SourceIP: ip, Arrived: start})
	if err != nil {
		return err
	}
	answerStart := time.Now()
	defer func() { s.deps.Stages.ObserveStage(gateway.StageAnswer, time.Since(answerStart)) }()
	status := http.StatusOK
	if out.Status == db.TraceReconciling {
		status = http.StatusAccepted
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	return writeJSON(c.Response(), signalResponse{TraceID: out.TraceID, Status: string(out.Status),
		ReceivedAt: out.ReceivedAt.UTC(), Order: newOrderDTO(out.Order), Orders: ordersDTO(out.Order, out.Legs),
		Attached: attachedWithLegs(out.Order, out.Legs), Cancelled: newOrderDTOs(out.Cancelled)})
}

func (p *Problem) withRetryAfter(d time.Duration) *Problem {
	p.RetryAfter = d
	return p
}

func invalidSignal(err error) error {
	var se *signal.Error
	if errors.As(err, &se) {
		return problem(codes.InvalidSignal, se.Error())
	}
	return problem(codes.InvalidSignal, err.Error())
}

// checkContentType accepts JSON and text/plain, which TradingView sends when
// it does not recognise the message as JSON.
func checkContentType(ct string) error {
	if ct == "" {
		return problem(codes.UnsupportedMedia, "Content-Type is missing; send application/json or text/plain")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return problem(codes.UnsupportedMedia, "Content-Type could not be parsed; send application/json or text/plain")
	}
	if mt == "application/json" || mt == "text/plain" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return problem(codes.UnsupportedMedia, fmt.Sprintf("Content-Type %s is not accepted; send application/json or text/plain", mt))
}

// The signature headers. X-Hoox-Signature is the hex HMAC-SHA256, keyed
// with the webhook secret, of the raw body — or, when X-Hoox-Timestamp is
// sent, of the timestamp's exact text, a dot and the raw body:
//
//	hex(HMAC-SHA256(secret, timestamp + "." + body))
//
// The timestamp is Unix seconds; a signed request whose timestamp is more
// than MaxSignalAge away from the server's clock is refused, so a captured
// request cannot be replayed later. A body-only signature never expires:
// only the body's trace refuses its replay (see credential.covers), and
// Config.RequireSignedTimestamp refuses it altogether.
const (
	HeaderSignature = "X-Hoox-Signature"
	HeaderTimestamp = "X-Hoox-Timestamp"
)

// credential is what authenticated a signal. It decides what else the
// request may carry: only what the credential covers may pick the trace.
type credential int

const (
	// credSecret: the secret in the body. Whoever holds the body holds
	// the secret, so nothing beside it needs more proof.
	credSecret credential = iota
	// credBodySignature: an X-Hoox-Signature over the body alone. It
	// never expires, so only the body's own trace keeps a resend from
	// executing again.
	credBodySignature
	// credStampedSignature: an X-Hoox-Signature over X-Hoox-Timestamp and
	// the body, valid for MaxSignalAge.
	credStampedSignature
)

// covers refuses a signed request whose trace would be picked by something
// the signature does not cover, or whose trace a resend could escape:
//   - an Idempotency-Key header (unsigned) that is not the signed body's own
//     key: otherwise one captured request, resent with fresh keys, would be
//     as many orders (400 invalid_signal; a header contradicting the body's
//     key is refused for every credential by signal.DeriveTrace);
//   - a body-only signature of a window signal (neither key nor timestamp
//     in the body): its trace lasts HOOX_DEDUP_WINDOW, the signature
//     forever, so each resend after the window would be a new order (401).
func (c credential) covers(tr signal.Trace, headerKey, bodyKey string) error {
	if c == credSecret {
		return nil
	}
	if headerKey != "" && headerKey != bodyKey {
		return problem(codes.InvalidSignal, signal.HeaderIdempotencyKey+": is not covered by "+HeaderSignature+
			"; with a signature, put the key in the signed body as trace_id (the header may repeat it)")
	}
	if c == credBodySignature && tr.Source == signal.KeyWindow {
		return problem(codes.Unauthorized, "a signal with neither trace_id nor timestamp, signed without "+HeaderTimestamp+
			", could be replayed as a new order after the dedup window: send "+HeaderTimestamp+` and sign "<timestamp>.<body>", or put trace_id or timestamp in the body`)
	}
	return nil
}

// authenticate accepts the body's secret, or else a valid signature, both
// compared in constant time, and says which it was. It answers a *Problem:
// 401 unauthorized.
func (s *Server) authenticate(secret string, h http.Header, body []byte, now time.Time) (credential, error) {
	refused := func() error { return problem(codes.Unauthorized, "missing or wrong secret or "+HeaderSignature) }
	want := []byte(s.cfg.WebhookSecret)
	if len(want) == 0 {
		return 0, refused()
	}
	if secret != "" && equalSecret(secret, s.cfg.WebhookSecret) {
		// A body secret is a credential in itself; a timestamp header
		// beside it is not signed, so it proves nothing and is ignored.
		return credSecret, nil
	}
	signature := h.Get(HeaderSignature)
	if signature == "" {
		return 0, refused()
	}
	got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(signature), "sha256="))
	if err != nil {
		return 0, refused()
	}
	mac := hmac.New(sha256.New, want)
	stamps := h.Values(HeaderTimestamp)
	if len(stamps) == 0 {
		mac.Write(body)
		if !hmac.Equal(got, mac.Sum(nil)) {
			return 0, refused()
		}
		if s.cfg.RequireSignedTimestamp {
			// Checked after the signature, so a wrong one still reads
			// as wrong.
			return 0, problem(codes.Unauthorized, "this server requires "+HeaderTimestamp+
				` with every signature (HOOX_REQUIRE_SIGNED_TIMESTAMP): sign "<timestamp>.<body>"`)
		}
		return credBodySignature, nil
	}
	// With a timestamp, only a signature over it counts: a captured
	// body-only signature must not pass beside a fresh header.
	if len(stamps) > 1 {
		return 0, problem(codes.Unauthorized, "send one "+HeaderTimestamp+" header")
	}
	stamp := stamps[0]
	sec, err := parseUnixSeconds(stamp)
	if err != nil {
		return 0, problem(codes.Unauthorized, HeaderTimestamp+" "+err.Error())
	}
	mac.Write([]byte(stamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return 0, problem(codes.Unauthorized, "wrong "+HeaderSignature+`: with `+HeaderTimestamp+` it is the HMAC-SHA256 of "<timestamp>.<body>"`)
	}
	// A stamp centuries away would saturate a Duration (Time.Sub), and
	// negating the saturated value overflows, passing both bounds: one
	// over 2^32 s (136 years) away is refused in whole seconds first; any
	// other is judged by its exact age (a stamp 30.9 s old is past 30 s).
	maxAge := s.cfg.Timing.MaxSignalAge
	if d := now.Unix() - sec; d > 1<<32 || -d > 1<<32 {
		return 0, problem(codes.Unauthorized, fmt.Sprintf("%s is more than %s from this server's clock; a signed signal is refused as a possible replay, or the sender's clock is off",
			HeaderTimestamp, maxAge))
	}
	switch age := now.Sub(time.Unix(sec, 0)); {
	case age > maxAge:
		return 0, problem(codes.Unauthorized, fmt.Sprintf("%s is %s old; a signed signal older than %s is refused as a possible replay",
			HeaderTimestamp, age.Round(time.Second), maxAge))
	case -age > maxAge:
		return 0, problem(codes.Unauthorized, fmt.Sprintf("%s is %s in the future; the sender's clock is off by more than %s",
			HeaderTimestamp, (-age).Round(time.Second), maxAge))
	}
	return credStampedSignature, nil
}

// parseUnixSeconds reads a timestamp header: decimal digits only, so the
// signed text has one spelling, and seconds, not milliseconds.
func parseUnixSeconds(s string) (int64, error) {
	if s == "" || len(s) > 11 || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("must be Unix seconds (decimal digits, e.g. 1700000000)")
	}
	return strconv.ParseInt(s, 10, 64)
}

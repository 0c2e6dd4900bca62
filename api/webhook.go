package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/signal"
)

// signalResponse is the body of a placed (200) or reconciling (202) signal.
type signalResponse struct {
	TraceID    string    `json:"trace_id"`
	Status     string    `json:"status"`
	Duplicate  bool      `json:"duplicate"`
	ReceivedAt time.Time `json:"received_at"`
	Order      *orderDTO `json:"order"`
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
	RejectReason    *string `json:"reject_reason,omitempty"`
}

func newOrderDTO(o *db.OrderRow) *orderDTO {
	if o == nil {
		return nil
	}
	return &orderDTO{ID: o.ID.String(), ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Symbol: o.Symbol,
		Side: o.Side, OrderType: o.OrderType, Quantity: o.Quantity.String(), Price: decimalText(o.Price),
		Status: o.Status, ExchangeOrderID: o.ExchangeOrderID, FillPrice: decimalText(o.FillPrice),
		RejectReason: o.RejectReason}
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

// webhook takes a signal. The checks run in DESIGN.md's order so each error
// means one thing: size and content type → source IP → JSON syntax → secret
// → fields → (kill switch, claim, dispatch in the gateway).
func (s *Server) webhook(c echo.Context) error {
	req := c.Request()
	if err := checkContentType(req.Header.Get(echo.HeaderContentType)); err != nil {
		return err
	}
	if req.ContentLength > s.cfg.MaxBody {
		return problem(CodeTooLarge, fmt.Sprintf("body is %d bytes; the limit is %d", req.ContentLength, s.cfg.MaxBody))
	}
	ip, err := netip.ParseAddr(c.RealIP())
	if err != nil {
		return problem(CodeForbidden, "source address could not be determined")
	}
	ip = ip.Unmap()
	if !s.cfg.AllowedIPs.Allows(ip) {
		return problem(CodeForbidden, fmt.Sprintf("source address %s is not allowed", ip))
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, s.cfg.MaxBody+1))
	if err != nil {
		return problem(CodeInvalidRequest, "could not read the body")
	}
	if int64(len(body)) > s.cfg.MaxBody {
		return problem(CodeTooLarge, fmt.Sprintf("body exceeds the limit of %d bytes", s.cfg.MaxBody))
	}
	raw, err := signal.Decode(body)
	if err != nil {
		return invalidSignal(err)
	}
	if !s.authentic(raw.Secret(), req.Header.Get("X-Hoox-Signature"), body) {
		return problem(CodeUnauthorized, "missing or wrong secret or X-Hoox-Signature")
	}
	if s.limiter != nil && !s.limiter.Allow() {
		return problem(CodeRateLimited, "too many signals; slow down").withRetryAfter(time.Second)
	}
	sig, err := raw.Signal()
	if err != nil {
		return invalidSignal(err)
	}
	tr, err := signal.DeriveTrace(sig, req.Header.Get("Idempotency-Key"), time.Now())
	if err != nil {
		return invalidSignal(err)
	}
	out, err := s.deps.Gateway.Execute(req.Context(), gateway.Input{Signal: sig, Trace: tr, SourceIP: ip})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if out.Status == db.TraceReconciling {
		status = http.StatusAccepted
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	return writeJSON(c.Response(), signalResponse{TraceID: out.TraceID, Status: out.Status,
		ReceivedAt: out.ReceivedAt.UTC(), Order: newOrderDTO(out.Order)})
}

func (p *Problem) withRetryAfter(d time.Duration) *Problem {
	p.RetryAfter = d
	return p
}

func invalidSignal(err error) error {
	var se *signal.Error
	if errors.As(err, &se) {
		return problem(gateway.CodeInvalid, se.Error())
	}
	return problem(gateway.CodeInvalid, err.Error())
}

// checkContentType accepts JSON and text/plain, which TradingView sends when
// it does not recognise the message as JSON.
func checkContentType(ct string) error {
	if ct == "" {
		return problem(CodeUnsupportedMedia, "Content-Type is missing; send application/json or text/plain")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return problem(CodeUnsupportedMedia, "Content-Type could not be parsed; send application/json or text/plain")
	}
	if mt == "application/json" || mt == "text/plain" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return problem(CodeUnsupportedMedia, fmt.Sprintf("Content-Type %s is not accepted; send application/json or text/plain", mt))
}

// authentic checks the body's secret, or else an HMAC-SHA256 signature of the
// raw body, in constant time.
func (s *Server) authentic(secret, signature string, body []byte) bool {
	want := []byte(s.cfg.WebhookSecret)
	if len(want) == 0 {
		return false
	}
	if secret != "" && subtle.ConstantTimeCompare([]byte(secret), want) == 1 {
		return true
	}
	if signature == "" {
		return false
	}
	got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(signature), "sha256="))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, want)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

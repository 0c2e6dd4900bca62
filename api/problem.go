package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/gateway"
)

// Codes the HTTP layer raises itself; the gateway's are in package gateway.
const (
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeTooLarge         = "payload_too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeRateLimited      = "rate_limited"
	CodeNotFound         = "not_found"
	CodeInvalidRequest   = "invalid_request"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeInternal         = "internal"
	// CodeReconciling refuses to release a trace whose order may exist at
	// the venue: the reconcile settles it first.
	CodeReconciling = "reconciling"
)

// statusOf is the one table from a problem code to its HTTP status.
var statusOf = map[string]int{
	gateway.CodeInvalid:       http.StatusBadRequest,
	CodeInvalidRequest:        http.StatusBadRequest,
	CodeUnauthorized:          http.StatusUnauthorized,
	CodeForbidden:             http.StatusForbidden,
	CodeNotFound:              http.StatusNotFound,
	CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	gateway.CodeDuplicate:     http.StatusConflict,
	gateway.CodeInProgress:    http.StatusConflict,
	CodeReconciling:           http.StatusConflict,
	CodeTooLarge:              http.StatusRequestEntityTooLarge,
	CodeUnsupportedMedia:      http.StatusUnsupportedMediaType,
	gateway.CodeKeyReused:     http.StatusUnprocessableEntity,
	gateway.CodeOrderRejected: http.StatusUnprocessableEntity,
	CodeRateLimited:           http.StatusTooManyRequests,
	gateway.CodeUnavailable:   http.StatusServiceUnavailable,
	gateway.CodeKillSwitch:    http.StatusServiceUnavailable,
	CodeInternal:              http.StatusInternalServerError,
}

// Problem is an RFC 9457 problem+json body with hoox's stable code and the
// extension members some codes carry.
type Problem struct {
	Type     string    `json:"type"`
	Title    string    `json:"title"`
	Status   int       `json:"status"`
	Detail   string    `json:"detail"`
	Code     string    `json:"code"`
	Instance string    `json:"instance,omitempty"`
	TraceID  string    `json:"trace_id,omitempty"`
	Original *original `json:"original,omitempty"`
	Order    *orderDTO `json:"order,omitempty"`
	// Duplicate is set on 409 duplicate answers, mirroring the success body.
	Duplicate  *bool         `json:"duplicate,omitempty"`
	RetryAfter time.Duration `json:"-"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// problem builds a Problem for one of the codes above.
func problem(code, detail string) *Problem {
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return &Problem{Type: "urn:hoox:problem:" + code, Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
}

type original struct {
	Status        string    `json:"status"`
	OrderID       *string   `json:"order_id"`
	ClientOrderID *string   `json:"client_order_id"`
	FirstSeen     time.Time `json:"first_seen"`
}

// fromGateway turns a gateway refusal into its problem.
func fromGateway(e *gateway.Error) *Problem {
	p := problem(e.Code, e.Detail)
	p.RetryAfter = e.RetryAfter
	if o := e.Original; o != nil {
		p.TraceID = o.TraceID
		orig := &original{Status: string(o.Status), ClientOrderID: o.ClientOrderID, FirstSeen: o.FirstSeen.UTC()}
		if o.OrderID != nil {
			id := o.OrderID.String()
			orig.OrderID = &id
		}
		p.Original = orig
		if e.Code == gateway.CodeDuplicate {
			dup := true
			p.Duplicate = &dup
		}
	}
	if out := e.Outcome; out != nil {
		p.TraceID = out.TraceID
		p.Order = newOrderDTO(out.Order)
	}
	return p
}

// errorHandler is Echo's single error writer: every error leaves as
// problem+json. Internal causes are logged, never shown.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var (
			p  *Problem
			ge *gateway.Error
			he *echo.HTTPError
		)
		switch {
		case errors.As(err, &p):
		case errors.As(err, &ge):
			p = fromGateway(ge)
			if ge.Err != nil {
				log.WarnContext(c.Request().Context(), "signal refused", "code", ge.Code, "error", ge.Err,
					"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
			}
		case errors.As(err, &he):
			p = fromHTTPError(he)
		default:
			log.ErrorContext(c.Request().Context(), "internal error", "error", err,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
			p = problem(CodeInternal, "internal error; see the server log for request "+c.Response().Header().Get(echo.HeaderXRequestID))
		}
		if p.Instance == "" {
			p.Instance = c.Request().URL.Path
		}
		if p.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		c.Response().WriteHeader(p.Status)
		if c.Request().Method == http.MethodHead {
			return
		}
		_ = writeJSON(c.Response(), p)
	}
}

func fromHTTPError(he *echo.HTTPError) *Problem {
	detail := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok {
		detail = m
	}
	switch he.Code {
	case http.StatusNotFound:
		return problem(CodeNotFound, detail)
	case http.StatusMethodNotAllowed:
		return problem(CodeMethodNotAllowed, detail)
	case http.StatusRequestEntityTooLarge:
		return problem(CodeTooLarge, detail)
	case http.StatusUnsupportedMediaType:
		return problem(CodeUnsupportedMedia, detail)
	case http.StatusUnauthorized:
		return problem(CodeUnauthorized, detail)
	case http.StatusTooManyRequests:
		return problem(CodeRateLimited, detail)
	}
	if he.Code >= 500 {
		return problem(CodeInternal, detail)
	}
	return problem(CodeInvalidRequest, detail)
}

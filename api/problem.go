package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// statusOf is the one table from a problem code to its HTTP status.
var statusOf = map[string]int{
	codes.InvalidSignal:    http.StatusBadRequest,
	codes.InvalidRequest:   http.StatusBadRequest,
	codes.Unauthorized:     http.StatusUnauthorized,
	codes.Forbidden:        http.StatusForbidden,
	codes.NotFound:         http.StatusNotFound,
	codes.MethodNotAllowed: http.StatusMethodNotAllowed,
	codes.RequestTimeout:   http.StatusRequestTimeout,
	codes.Duplicate:        http.StatusConflict,
	codes.InProgress:       http.StatusConflict,
	codes.Reconciling:      http.StatusConflict,
	codes.TraceChanged:     http.StatusConflict,
	codes.LedgerChanged:    http.StatusConflict,
	codes.TooLarge:         http.StatusRequestEntityTooLarge,
	codes.UnsupportedMedia: http.StatusUnsupportedMediaType,
	codes.KeyReused:        http.StatusUnprocessableEntity,
	codes.OrderRejected:    http.StatusUnprocessableEntity,
	codes.Unsupported:      http.StatusUnprocessableEntity,
	codes.AccountsRefused:  http.StatusUnprocessableEntity,
	codes.RateLimited:      http.StatusTooManyRequests,
	codes.Unavailable:      http.StatusServiceUnavailable,
	codes.KillSwitch:       http.StatusServiceUnavailable,
	codes.Internal:         http.StatusInternalServerError,
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
	// Attached are the rejected order's exits (status not_placed).
	Attached []attachedDTO `json:"attached,omitempty"`
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
	// Cancelled is what a cancel signal's first attempt cancelled.
	Cancelled *[]orderDTO `json:"cancelled,omitempty"`
}

// fromGateway turns a gateway refusal into its problem.
func fromGateway(e *gateway.Error) *Problem {
	p := problem(e.Code, e.Detail)
	p.RetryAfter = e.RetryAfter
	if o := e.Original; o != nil {
		p.TraceID = o.TraceID
		orig := &original{Status: string(o.Status), ClientOrderID: o.ClientOrderID, FirstSeen: o.FirstSeen.UTC(),
			Cancelled: newOrderDTOs(o.Cancelled)}
		if o.OrderID != nil {
			id := o.OrderID.String()
			orig.OrderID = &id
		}
		p.Original = orig
		if e.Code == codes.Duplicate {
			dup := true
			p.Duplicate = &dup
		}
	}
	if out := e.Outcome; out != nil {
		p.TraceID = out.TraceID
		p.Order = newOrderDTO(out.Order)
		p.Attached = newAttachedDTOs(out.Order)
	}
	return p
}

// classify is the one place an error gets its problem, and so its status,
// for the JSON API and the web page alike: a *Problem as is; a gateway
// refusal, an Echo error and an unreachable database translated. known is
// false for any other error, which is answered as internal.
func classify(err error) (p *Problem, known bool) {
	var (
		ge *gateway.Error
		he *echo.HTTPError
	)
	switch {
	case errors.As(err, &p):
		return p, true
	case errors.As(err, &ge):
		return fromGateway(ge), true
	case errors.As(err, &he):
		return fromHTTPError(he), true
	case errors.Is(err, db.ErrStatementTimeout):
		// The transaction was rolled back: nothing changed. A listing
		// that is merely slow may pass with a narrower filter; one stuck
		// behind a lock, a moment later.
		return problem(codes.Unavailable, "a database statement ran past the admin statement timeout and was cancelled; nothing was changed: "+
			"narrow the request (filters, a smaller limit) or try again shortly").withRetryAfter(5 * time.Second), true
	case errors.Is(err, db.ErrUnavailable):
		// Nothing was committed, and trying again shortly is what helps:
		// the same answer, and wait, as the gateway's.
		return problem(codes.Unavailable, "the database is unavailable; try again shortly").withRetryAfter(5 * time.Second), true
	}
	return problem(codes.Internal, "internal error"), false
}

// problemFor is err's answer to the request c: its problem (classify), with
// the causes an operator needs logged — a refusal's cause and an unreachable
// database as warnings, an internal error in full — and Retry-After set
// when the problem carries one. An internal cause is never shown: the
// detail names the request to look up in the log. errorHandler and the web
// page both answer through it.
func problemFor(c echo.Context, log *slog.Logger, err error) *Problem {
	ctx := c.Request().Context()
	requestID := c.Response().Header().Get(echo.HeaderXRequestID)
	p, known := classify(err)
	var ge *gateway.Error
	switch {
	case !known:
		log.ErrorContext(ctx, "internal error", "error", err, "request_id", requestID)
		p.Detail = "internal error; see the server log for request " + requestID
	case errors.As(err, &ge):
		if ge.Err != nil {
			log.WarnContext(ctx, "signal refused", "code", ge.Code, "error", ge.Err, "request_id", requestID)
		}
	case errors.Is(err, db.ErrUnavailable):
		log.WarnContext(ctx, "database unavailable", "error", err, "request_id", requestID)
	}
	if p.RetryAfter > 0 {
		c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	return p
}

// errorHandler is Echo's single error writer: every error leaves as
// problem+json.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := problemFor(c, log, err)
		if p.Instance == "" {
			p.Instance = c.Request().URL.Path
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
		return problem(codes.NotFound, detail)
	case http.StatusMethodNotAllowed:
		return problem(codes.MethodNotAllowed, detail)
	case http.StatusRequestEntityTooLarge:
		return problem(codes.TooLarge, detail)
	case http.StatusUnsupportedMediaType:
		return problem(codes.UnsupportedMedia, detail)
	case http.StatusUnauthorized:
		return problem(codes.Unauthorized, detail)
	case http.StatusTooManyRequests:
		return problem(codes.RateLimited, detail)
	}
	if he.Code >= 500 {
		return problem(codes.Internal, detail)
	}
	return problem(codes.InvalidRequest, detail)
}

package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
)

// adminOrder is an order as the admin API shows it: decimals as strings,
// never a float round trip.
type adminOrder struct {
	ID            string `json:"id"`
	TraceID       string `json:"trace_id"`
	ClientOrderID string `json:"client_order_id"`
	Exchange      string `json:"exchange"`
	// Account is the account the order was placed on (adminTrace.Account).
	Account         string  `json:"account"`
	Symbol          string  `json:"symbol"`
	Action          string  `json:"action"`
	Side            *string `json:"side"`
	OrderType       string  `json:"order_type"`
	Quantity        string  `json:"quantity"`
	Price           *string `json:"price"`
	Leverage        *int32  `json:"leverage"`
	Mode            string  `json:"mode"`
	Status          string  `json:"status"`
	ExchangeOrderID *string `json:"exchange_order_id"`
	FillPrice       *string `json:"fill_price"`
	FilledQuantity  *string `json:"filled_quantity"`
	RejectReason    *string `json:"reject_reason"`
	// Role is primary (the signal's own order) or a leg's (close_part, …).
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	// Attached are the exits the order carries; left out when none.
	Attached []attachedDTO `json:"attached,omitempty"`
	// What the order executed at and what it cost, as the follow job
	// last recorded it (issue 19).
	AvgPrice    *string    `json:"avg_price"`
	Fee         *string    `json:"fee"`
	FeeAsset    *string    `json:"fee_asset"`
	UpdatedAt   *time.Time `json:"updated_at"`
	FinalAt     *time.Time `json:"final_at"`
	CancelledBy *string    `json:"cancelled_by"`
}

func newAdminOrder(o db.OrderRow) adminOrder {
	a := adminOrder{ID: o.ID.String(), TraceID: o.TraceID, ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Account: o.Exchange,
		Symbol: o.Symbol, Action: o.Action, OrderType: o.OrderType, Quantity: o.Quantity.String(),
		Price: decimalText(o.Price), Leverage: o.Leverage, Mode: o.Mode, Status: o.Status,
		ExchangeOrderID: o.ExchangeOrderID, FillPrice: decimalText(o.FillPrice),
		FilledQuantity: decimalText(o.FilledQuantity), RejectReason: o.RejectReason, Role: o.Role, CreatedAt: o.CreatedAt.UTC(),
		Attached: newAttachedDTOs(&o), AvgPrice: decimalText(o.AvgPrice), Fee: decimalText(o.Fee), FeeAsset: o.FeeAsset,
		UpdatedAt: utcPtr(o.UpdatedAt), FinalAt: utcPtr(o.FinalAt), CancelledBy: o.CancelledBy}
	if o.Side != "" {
		side := o.Side
		a.Side = &side
	}
	return a
}

// ordersPage is GET /admin/orders: next_cursor is null on the last page.
type ordersPage struct {
	Orders     []adminOrder `json:"orders"`
	NextCursor *string      `json:"next_cursor"`
}

// listOrders pages through orders newest first; status is the order status.
func (a *Admin) listOrders(c echo.Context) error {
	rows, next, err := listOrderRows(c.Request().Context(), a.db(), c.QueryParams())
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, ordersPage{Orders: items(rows, newAdminOrder), NextCursor: next})
}

// utcPtr is t in UTC, nil when t is.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

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
	Account         string    `json:"account"`
	Symbol          string    `json:"symbol"`
	Action          string    `json:"action"`
	Side            *string   `json:"side"`
	OrderType       string    `json:"order_type"`
	Quantity        string    `json:"quantity"`
	Price           *string   `json:"price"`
	Leverage        *int32    `json:"leverage"`
	Mode            string    `json:"mode"`
	Status          string    `json:"status"`
	ExchangeOrderID *string   `json:"exchange_order_id"`
	FillPrice       *string   `json:"fill_price"`
	FilledQuantity  *string   `json:"filled_quantity"`
	RejectReason    *string   `json:"reject_reason"`
	CreatedAt       time.Time `json:"created_at"`
}

func newAdminOrder(o db.OrderRow) adminOrder {
	a := adminOrder{ID: o.ID.String(), TraceID: o.TraceID, ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Account: o.Exchange,
		Symbol: o.Symbol, Action: o.Action, OrderType: o.OrderType, Quantity: o.Quantity.String(),
		Price: decimalText(o.Price), Leverage: o.Leverage, Mode: o.Mode, Status: o.Status,
		ExchangeOrderID: o.ExchangeOrderID, FillPrice: decimalText(o.FillPrice),
		FilledQuantity: decimalText(o.FilledQuantity), RejectReason: o.RejectReason, CreatedAt: o.CreatedAt.UTC()}
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
	rows, next, err := listOrderRows(c.Request().Context(), a.Pool, c.QueryParams())
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, ordersPage{Orders: items(rows, newAdminOrder), NextCursor: next})
}

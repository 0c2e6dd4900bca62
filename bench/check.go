package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// Check is the exactly-once check of one run, read back from the database.
type Check struct {
	// Expected is the number of distinct signals sent.
	Expected int
	// Errors is requests that got no answer: a signal whose every attempt
	// failed that way may have no order, so Orders may fall short of
	// Expected by at most this many without an exactly-once failure.
	Errors int
	// Refused is requests answered 503, which promise nothing was placed.
	// When every key was sent once (Once), a refused key must have no
	// order at all; otherwise a later resend of it may have placed one.
	Refused int
	Once    bool
	// Orders, OrderTraces and OrderIDs count orders rows of the run, their
	// distinct trace IDs and distinct client order IDs.
	Orders, OrderTraces, OrderIDs int
	// Paper and PaperIDs count the paper venue's fills and their distinct
	// client order IDs; PaperOrphans are fills with no order row.
	Paper, PaperIDs, PaperOrphans int
	// Traces counts trace_ids rows of the run.
	Traces int
}

// OK reports whether every signal placed exactly one order.
func (c Check) OK() bool {
	most := c.Expected
	if c.Once {
		most -= c.Refused
	}
	return c.Orders == c.OrderTraces && c.Orders == c.OrderIDs && c.Paper == c.Orders && c.PaperIDs == c.Paper &&
		c.PaperOrphans == 0 && c.Orders <= most && c.Orders >= c.Expected-c.Refused-c.Errors
}

const checkSQL = `
SELECT (SELECT count(*) FROM orders WHERE symbol = $1),
       (SELECT count(DISTINCT trace_id) FROM orders WHERE symbol = $1),
       (SELECT count(DISTINCT client_order_id) FROM orders WHERE symbol = $1),
       (SELECT count(*) FROM paper_orders WHERE symbol = $1),
       (SELECT count(DISTINCT client_order_id) FROM paper_orders WHERE symbol = $1),
       (SELECT count(*) FROM paper_orders p WHERE p.symbol = $1
          AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.client_order_id = p.client_order_id)),
       (SELECT count(*) FROM trace_ids WHERE symbol = $1)`

// CheckRun reads back the orders of rep's run (its signals carry their own
// symbol) and compares them with what was sent.
func CheckRun(ctx context.Context, conn *pgx.Conn, rep *Report) (Check, error) {
	c := Check{Expected: rep.DistinctKeys, Errors: rep.Errors(), Refused: rep.Refused(), Once: rep.Repeats == 0}
	err := conn.QueryRow(ctx, checkSQL, rep.Config.Symbol).Scan(&c.Orders, &c.OrderTraces, &c.OrderIDs,
		&c.Paper, &c.PaperIDs, &c.PaperOrphans, &c.Traces)
	if err != nil {
		return c, fmt.Errorf("exactly-once check: %w", err)
	}
	return c, nil
}

// Print writes the check for a person.
func (c Check) Print(w io.Writer) {
	verdict := "OK"
	if !c.OK() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "exactly-once: %s — distinct signals sent %d, orders %d (distinct traces %d, distinct client order ids %d), "+
		"paper fills %d (distinct %d, without an order %d), traces %d, unanswered requests %d, refused (503, nothing placed) %d\n",
		verdict, c.Expected, c.Orders, c.OrderTraces, c.OrderIDs, c.Paper, c.PaperIDs, c.PaperOrphans, c.Traces, c.Errors, c.Refused)
}

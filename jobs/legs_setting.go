package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// settingAfterCancel decides leg, a position setting (exchange.ExitIsSetting:
// a Bybit linear trailing stop) that a cancel signal marked after it may
// have been set, under the trace's lock tx holds, and ends tx; it returns
// the outcome settled ("" when nothing was). The cancel cleared what the
// position held for it when it ran, or left it here because its answer
// could still arrive (gateway cancel). A setting carries no ID: the lookup
// finds whatever trailing stop of this distance the position holds, which
// may be a later entry's. So, under the position's setting lock
// (db.LockPositionSetting, which every leg holds while it sets one):
//   - once a later leg of the position was armed, nothing is looked up or
//     cleared for leg: settled not_placed;
//   - otherwise a setting found is leg's (set late) and is cleared, as
//     the cancel would have: recorded cancelled; one gone with its
//     position: recorded expired;
//   - nothing of it (no setting, or another one) past its accept
//     window: settled not_placed, never asked about again (a later ask
//     could only find a later setting); inside it, left for a later pass.
//
// It never sends leg.
func (r *LegRunner) settingAfterCancel(ctx context.Context, tx *db.LegsTx, venue exchange.Venue, leg db.Leg) (db.IntentOutcome, error) {
	if err := tx.LockPositionSetting(ctx, leg); err != nil {
		return "", fmt.Errorf("leg %s: %w", leg.ClientOrderID, err)
	}
	later, err := tx.LaterSettingLeg(ctx, leg)
	if err != nil {
		return "", err
	}
	if later != "" {
		return db.IntentNotPlaced, r.settleCancelled(ctx, tx, leg, fmt.Sprintf(
			"the cancel signal %s came after this %s may have been set, and %s of the same position was set since: "+
				"the position's setting carries no ID and cannot be told apart from that one's, so it is neither looked up "+
				"nor cleared for this exit, and not sent again", leg.CancelledBy, leg.Role, later))
	}
	vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
	held, err := venue.Lookup(vctx, leg.Order)
	cancel()
	switch {
	case err == nil:
		if held, err = r.cancelAtVenue(ctx, venue, leg, held); err != nil {
			return "", err
		}
		outcome := db.RecordReport(leg.TraceID, leg.Exchange, leg.Mode, leg.Order, held).IntentOutcome
		return outcome, r.record(ctx, tx, leg, held, true)
	case (errors.Is(err, exchange.ErrNotFound) || errors.Is(err, exchange.ErrMismatch)) && leg.SentAgo < venue.AcceptWindow():
		// Another setting on the position, with no later leg (read
		// above), is leg's not there yet, as for a setting not found:
		// its send may still take effect, and be cleared then.
		return "", fmt.Errorf("leg %s: %w: not visible yet and its accept window is open", leg.ClientOrderID, ErrNotYet)
	case errors.Is(err, exchange.ErrNotFound), errors.Is(err, exchange.ErrMismatch):
		return db.IntentNotPlaced, r.settleCancelled(ctx, tx, leg, fmt.Sprintf(
			"the cancel signal %s came after this %s may have been set; the position does not hold it (%v) and its accept "+
				"window has closed: cleared by the cancel or never set. Not sent again, and not looked up again: "+
				"a later setting of the position could not be told from it", leg.CancelledBy, leg.Role, err))
	}
	return "", fmt.Errorf("leg %s: %w: %w", leg.ClientOrderID, ErrUnanswered, err)
}

// settingMismatch is what a lookup's ErrMismatch (err) means for leg, a
// position setting (exchange.ExitIsSetting: a Bybit linear trailing stop,
// one per position, recognised by its distance): the position holds
// another setting. It proves leg's replaced only when a later setting leg
// of the same position exists (later, db.LaterSettingLeg: armed after leg
// was last sent) and leg's own send can no longer take effect (sendOver:
// past its accept window, or recorded open): then leg ended, and the report
// records it expired. Otherwise leg's setting is simply not there — never
// applied (a request that failed) or changed by hand — and the error
// returned wraps ErrNotFound, for the caller's not-found rules: wait out
// the accept window, then set it again (the leg runner, where a same-ID
// send is safe) or record it gone (the follow job).
func settingMismatch(leg db.Leg, later string, sendOver bool, err error) (exchange.Report, error) {
	if later == "" || !sendOver {
		why := "no later leg of the position replaced it: never applied, or changed by hand"
		if later != "" {
			why = fmt.Sprintf("%s of the position was set since, and this one's send may still take effect", later)
		}
		return exchange.Report{}, fmt.Errorf("%s %s: %w: the position holds another setting (%v); %s",
			leg.Role, leg.ClientOrderID, exchange.ErrNotFound, err, why)
	}
	r := exchange.Report{Symbol: exchange.VenueSymbol(leg.Order.Symbol), Side: leg.Order.Side, Quantity: leg.Order.Quantity,
		Status: exchange.StatusExpired, Reason: fmt.Sprintf("replaced by the later %s %s: the position holds one, and no longer this one",
			strings.ReplaceAll(leg.Role, "_", " "), later)}
	if leg.Order.TrailingStop != nil {
		r.TrailingDistance = leg.Order.TrailingStop.Distance
	}
	return r, nil
}

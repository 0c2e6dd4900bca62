package gateway

import (
	"time"

	"github.com/hoox/hoox/signal"
)

// ParseInput turns a signal body into an Input the way the webhook does,
// minus authentication: for callers that are trusted already (the CLI, the
// benchmarks, tests). headerKey stands for an Idempotency-Key header.
func ParseInput(body []byte, headerKey string, now time.Time) (Input, error) {
	raw, err := signal.Decode(body)
	if err != nil {
		return Input{}, err
	}
	sig, err := raw.Signal()
	if err != nil {
		return Input{}, err
	}
	tr, err := signal.DeriveTrace(sig, headerKey, now)
	if err != nil {
		return Input{}, err
	}
	return Input{Signal: sig, Trace: tr, Arrived: now}, nil
}

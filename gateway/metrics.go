package gateway

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gateway's Prometheus instruments.
type Metrics struct {
	// Signals counts signals by outcome: dispatched, rejected, reconciling,
	// or the refusal's code.
	Signals *prometheus.CounterVec
	// ClaimSeconds times the claim round trip, lock wait included.
	ClaimSeconds prometheus.Histogram
	// DispatchSeconds times the venue call.
	DispatchSeconds prometheus.Histogram
}

// NewMetrics builds the instruments and registers them on reg when it is
// not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	m := &Metrics{
		Signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_signals_total", Help: "Signals by outcome.",
		}, []string{"outcome"}),
		ClaimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hoox_claim_seconds", Help: "Time to claim a trace ID, lock wait included.", Buckets: buckets,
		}),
		DispatchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hoox_dispatch_seconds", Help: "Time the venue took to answer an order.", Buckets: buckets,
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Signals, m.ClaimSeconds, m.DispatchSeconds)
	}
	return m
}

func (m *Metrics) observeOutcome(out *Outcome, err error) {
	var e *Error
	switch {
	case err == nil && out != nil:
		m.Signals.WithLabelValues(string(out.Status)).Inc()
	case errors.As(err, &e):
		m.Signals.WithLabelValues(e.Code).Inc()
	default:
		m.Signals.WithLabelValues("error").Inc()
	}
}

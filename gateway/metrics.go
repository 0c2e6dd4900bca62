package gateway

import (
	"errors"
	"time"

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
	// Stages times each stage of a new signal (StageDecode … StageAnswer),
	// so a latency tail can be placed: the gateway observes its own stages,
	// the HTTP handler decode and answer.
	Stages *prometheus.HistogramVec
}

// The stages of hoox_stage_seconds, in the order a new signal passes them.
const (
	// StageDecode is the HTTP handler up to the gateway: body read, JSON,
	// secret, fields, trace ID.
	StageDecode = "decode"
	// StageClaim is the claim's round trip, lock wait included.
	StageClaim = "claim"
	// StageIntent is the durable intent's commit, before the venue call.
	StageIntent = "intent"
	// StageVenue is the venue's answer to the order.
	StageVenue = "venue"
	// StageRecord is the commit that records the order and settles the
	// trace.
	StageRecord = "record"
	// StageAnswer is writing the HTTP answer after the gateway returned.
	StageAnswer = "answer"
)

// Stages lists the stages in order.
func Stages() []string {
	return []string{StageDecode, StageClaim, StageIntent, StageVenue, StageRecord, StageAnswer}
}

// ObserveStage records d for stage; safe on nil Metrics.
func (m *Metrics) ObserveStage(stage string, d time.Duration) {
	if m == nil || m.Stages == nil {
		return
	}
	m.Stages.WithLabelValues(stage).Observe(d.Seconds())
}

// StageBuckets resolve the sub-millisecond stages a benchmark reads
// quantiles from, up to the seconds a stalled venue takes.
var StageBuckets = []float64{.00005, .0001, .00015, .0002, .0003, .0004, .0005, .00075, .001, .0015, .002, .003, .004, .005,
	.0075, .01, .015, .02, .03, .05, .075, .1, .25, .5, 1, 2.5}

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
		Stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hoox_stage_seconds", Help: "Time a signal spent in each stage: decode, claim, intent, venue, record, answer.",
			Buckets: StageBuckets,
		}, []string{"stage"}),
	}
	if reg != nil {
		reg.MustRegister(m.Signals, m.ClaimSeconds, m.DispatchSeconds, m.Stages)
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

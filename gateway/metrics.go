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
	// stages are Stages' children by Stage, resolved once: observing one
	// on the signal's path looks no label up.
	stages [stageCount]prometheus.Observer
}

// Stage is one stage of hoox_stage_seconds.
type Stage int

// The stages, in the order a new signal passes them.
const (
	// StageDecode is the HTTP handler up to the gateway: body read, JSON,
	// secret, fields, trace ID.
	StageDecode Stage = iota
	// StageClaim is the claim's round trip, lock wait included (also
	// ClaimSeconds).
	StageClaim
	// StageIntent is the durable intent's commit, before the venue call.
	StageIntent
	// StageVenue is the venue's answer to the order (also
	// DispatchSeconds).
	StageVenue
	// StageRecord is the commit that records the order and settles the
	// trace.
	StageRecord
	// StageAnswer is writing the HTTP answer after the gateway returned.
	StageAnswer
	stageCount
)

var stageNames = [stageCount]string{"decode", "claim", "intent", "venue", "record", "answer"}

// String is the stage's label value.
func (s Stage) String() string { return stageNames[s] }

// Stages lists the stages' label values in order.
func Stages() []string { return stageNames[:] }

// ObserveStage records d for stage; safe on nil Metrics. The claim and the
// venue call also feed their own histograms.
func (m *Metrics) ObserveStage(stage Stage, d time.Duration) {
	if m == nil {
		return
	}
	sec := d.Seconds()
	m.stages[stage].Observe(sec)
	switch stage {
	case StageClaim:
		m.ClaimSeconds.Observe(sec)
	case StageVenue:
		m.DispatchSeconds.Observe(sec)
	}
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
	for i, name := range stageNames {
		m.stages[i] = m.Stages.WithLabelValues(name)
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

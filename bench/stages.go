package bench

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hoox/hoox/gateway"
)

// StageSnapshot is the cumulative content of hoox_stage_seconds at one
// moment: per stage, the count at or below each upper bound.
type StageSnapshot map[string]stageHist

type stageHist struct {
	bounds []float64 // seconds, ascending; the last bucket is +Inf
	counts []uint64  // cumulative
	count  uint64
	sum    float64
}

// SnapshotStages reads hoox_stage_seconds from g (an in-process hoox's
// registry). An empty snapshot when g is nil or holds no such metric.
func SnapshotStages(g prometheus.Gatherer) (StageSnapshot, error) {
	snap := StageSnapshot{}
	if g == nil {
		return snap, nil
	}
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != "hoox_stage_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			snap[stageLabel(m)] = newStageHist(m.GetHistogram())
		}
	}
	return snap, nil
}

func stageLabel(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "stage" {
			return l.GetValue()
		}
	}
	return ""
}

func newStageHist(h *dto.Histogram) stageHist {
	s := stageHist{count: h.GetSampleCount(), sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		s.bounds = append(s.bounds, b.GetUpperBound())
		s.counts = append(s.counts, b.GetCumulativeCount())
	}
	return s
}

// StageTimes are the quantiles of each stage over one run (the difference of
// two snapshots), estimated from the histogram's buckets.
type StageTimes struct {
	Stage         string
	Count         uint64
	Mean          time.Duration
	P50, P99, Max time.Duration // Max is the upper bound of the highest bucket used
}

// StagesBetween returns each stage's quantiles between before and after, in
// the stages' order; stages with no observation are left out.
func StagesBetween(before, after StageSnapshot) []StageTimes {
	var out []StageTimes
	for _, stage := range gateway.Stages() {
		a, ok := after[stage]
		if !ok {
			continue
		}
		b := before[stage]
		n := a.count - b.count
		if n == 0 {
			continue
		}
		delta := make([]uint64, len(a.counts))
		for i := range a.counts {
			delta[i] = a.counts[i]
			if i < len(b.counts) {
				delta[i] -= b.counts[i]
			}
		}
		out = append(out, StageTimes{Stage: stage, Count: n,
			Mean: seconds((a.sum - b.sum) / float64(n)),
			P50:  seconds(bucketQuantile(0.50, a.bounds, delta, n)),
			P99:  seconds(bucketQuantile(0.99, a.bounds, delta, n)),
			Max:  seconds(bucketQuantile(1, a.bounds, delta, n))})
	}
	return out
}

// bucketQuantile interpolates linearly inside the bucket that holds the
// q-quantile, as Prometheus' histogram_quantile does. Past the last finite
// bound it answers that bound.
func bucketQuantile(q float64, bounds []float64, cumulative []uint64, n uint64) float64 {
	rank := q * float64(n)
	lower, below := 0.0, uint64(0)
	for i, upper := range bounds {
		c := cumulative[i]
		if float64(c) >= rank && c > below {
			if q == 1 {
				return upper
			}
			return lower + (upper-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = upper, c
	}
	return lower
}

func seconds(s float64) time.Duration {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// PrintStages writes one line per stage.
func PrintStages(w io.Writer, st []StageTimes) {
	if len(st) == 0 {
		return
	}
	fmt.Fprintf(w, "stages (from hoox_stage_seconds' buckets):")
	for _, s := range st {
		fmt.Fprintf(w, " %s p50 %s p99 %s (mean %s);", s.Stage, msf(s.P50), msf(s.P99), msf(s.Mean))
	}
	fmt.Fprintln(w)
}

func msf(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

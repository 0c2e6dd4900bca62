package api

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestHistogramLatencyInterpolatesLikePrometheus(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Buckets: []float64{0.001, 0.01, 0.1}})
	reg.MustRegister(h)
	mf := func() latency {
		fams, err := reg.Gather()
		require.NoError(t, err)
		return histogramLatency(fams[0])
	}
	empty := mf()
	require.Zero(t, empty.Count)
	require.Nil(t, empty.P50, "no samples, no quantile")

	// 100 samples: 50 at or under 1 ms, 49 in (1 ms, 10 ms], 1 over 100 ms.
	for range 50 {
		h.Observe(0.0005)
	}
	for range 49 {
		h.Observe(0.005)
	}
	h.Observe(3)
	l := mf()
	require.EqualValues(t, 100, l.Count)
	require.InDelta(t, 0.001, *l.P50, 1e-12, "rank 50 is the top of the first bucket")
	require.InDelta(t, 0.01, *l.P99, 1e-12, "rank 99 is the top of the second bucket")

	// Past every finite bucket, the highest bound is all that is known.
	for range 100 {
		h.Observe(5)
	}
	require.InDelta(t, 0.1, *mf().P99, 1e-12)
}

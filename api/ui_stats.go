package api

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	dto "github.com/prometheus/client_model/go"

	"github.com/hoox/hoox/db"
)

// The histograms the gateway records (gateway/metrics.go).
const (
	claimHistogram    = "hoox_claim_seconds"
	dispatchHistogram = "hoox_dispatch_seconds"
)

// chartSeries maps each line of the stats chart to the audit events it
// counts.
var chartSeries = []struct {
	Name   string
	Events []string
}{
	{"signals", []string{db.EventReceived}},
	{"duplicates", []string{db.EventDuplicate, db.EventKeyReused}},
	{"rejections", []string{db.EventRejected}},
	{"reconciles", []string{db.EventReconciling}},
}

// latency is one histogram's quantiles in seconds; nil before any sample.
type latency struct {
	Count uint64   `json:"count"`
	P50   *float64 `json:"p50"`
	P99   *float64 `json:"p99"`
}

// statsView is the stats page.
type statsView struct {
	Stats      db.Stats
	LastPurge  *db.PurgeRecord
	OldestAge  string
	Claim      latency
	Dispatch   latency
	Hours      int
	HourChoice []int
}

// statsPage shows the event counts of the last hour and day, the dedup
// table, latency quantiles and the chart's frame (drawn by ui.js).
func (u *webUI) statsPage(c echo.Context) error {
	s, lp, ks, err := readStats(c.Request().Context(), u.db())
	if err != nil {
		return err
	}
	v := statsView{Stats: s, LastPurge: lp, Hours: chartHours(c), HourChoice: []int{1, 3, 6, 12, 24}}
	if s.OldestTrace != nil {
		v.OldestAge = s.Now.Sub(*s.OldestTrace).Round(time.Second).String()
	}
	v.Claim, v.Dispatch = u.latencies()
	// The banner's switch is the snapshot's: render reads it no more.
	return u.render(c, http.StatusOK, "stats", view{Title: "Stats", Nav: "stats", Data: v, KillSwitch: &ks})
}

// chartHours is the chart's span: 3 h unless the page asked for 1 to 24.
func chartHours(c echo.Context) int {
	h, err := strconv.Atoi(c.QueryParam("hours"))
	if err != nil || h < 1 || h > 24 {
		return 3
	}
	return h
}

// statsSeries is GET /ui/stats.json: one count per minute and line, oldest
// first, Start being the first minute.
type statsSeries struct {
	Start         time.Time          `json:"start"`
	StepSeconds   int                `json:"step_seconds"`
	Series        map[string][]int64 `json:"series"`
	Claim         latency            `json:"claim_seconds"`
	Dispatch      latency            `json:"dispatch_seconds"`
	GeneratedAt   time.Time          `json:"generated_at"`
	SeriesOrdered []string           `json:"series_order"`
}

func (u *webUI) statsJSON(c echo.Context) error {
	minutes := chartHours(c) * 60
	var events []string
	line := map[string]string{}
	for _, s := range chartSeries {
		for _, e := range s.Events {
			events = append(events, e)
			line[e] = s.Name
		}
	}
	es, err := db.EventsPerMinute(c.Request().Context(), u.db(), minutes, events)
	if err != nil {
		return err
	}
	out := statsSeries{Start: es.Start.UTC(), StepSeconds: 60, Series: map[string][]int64{}, GeneratedAt: es.End.UTC()}
	for _, s := range chartSeries {
		out.Series[s.Name] = make([]int64, minutes)
		out.SeriesOrdered = append(out.SeriesOrdered, s.Name)
	}
	for _, mc := range es.Counts {
		i := int(mc.Minute.Sub(es.Start) / time.Minute)
		if i >= 0 && i < minutes {
			out.Series[line[mc.Event]][i] += mc.Count
		}
	}
	out.Claim, out.Dispatch = u.latencies()
	return adminJSON(c, http.StatusOK, out)
}

// latencies reads the claim and dispatch quantiles from this process's
// metrics: they cover what this replica saw since it started.
func (u *webUI) latencies() (claim, dispatch latency) {
	mfs, err := u.s.deps.Registry.Gather()
	if err != nil {
		// Gather reports a partial failure with whatever it did gather.
		u.s.deps.Logger.Warn("ui: gather metrics", "error", err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case claimHistogram:
			claim = histogramLatency(mf)
		case dispatchHistogram:
			dispatch = histogramLatency(mf)
		}
	}
	return claim, dispatch
}

// histogramLatency merges a family's histograms and estimates p50 and p99
// the way Prometheus's histogram_quantile does: linear within a bucket.
func histogramLatency(mf *dto.MetricFamily) latency {
	type bucket struct {
		upper float64
		count uint64
	}
	var total uint64
	merged := map[float64]uint64{}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			merged[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	out := latency{Count: total}
	if total == 0 {
		return out
	}
	buckets := make([]bucket, 0, len(merged)+1)
	for ub, n := range merged {
		buckets = append(buckets, bucket{ub, n})
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		switch {
		case a.upper < b.upper:
			return -1
		case a.upper > b.upper:
			return 1
		}
		return 0
	})
	if len(buckets) == 0 || !math.IsInf(buckets[len(buckets)-1].upper, 1) {
		buckets = append(buckets, bucket{math.Inf(1), total})
	}
	quantile := func(q float64) *float64 {
		rank := q * float64(total)
		lower, below := 0.0, uint64(0)
		for i, b := range buckets {
			if float64(b.count) >= rank {
				if math.IsInf(b.upper, 1) {
					// Above the last finite bound: that bound is all we know.
					if i == 0 {
						return nil
					}
					v := buckets[i-1].upper
					return &v
				}
				in := float64(b.count - below)
				v := b.upper
				if in > 0 {
					v = lower + (b.upper-lower)*(rank-float64(below))/in
				}
				return &v
			}
			lower, below = b.upper, b.count
		}
		return nil
	}
	out.P50, out.P99 = quantile(0.5), quantile(0.99)
	return out
}

package bench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what one load run measured.
type Report struct {
	Config  LoadConfig
	Elapsed time.Duration
	// Requests counts every answered or failed request.
	Requests int
	// Throughput is requests completed per second of the run.
	Throughput float64
	// DistinctKeys is the number of distinct keys sent as new signals
	// (the repeated key counts once); Repeats counts requests that reused
	// a key on purpose.
	DistinctKeys, Repeats int
	// Outcomes are per status (and problem code), most frequent first.
	Outcomes []Outcome
	// All summarises every request together.
	All Outcome

	byOutcome map[string][]time.Duration
	last      time.Time
	// began is when the run began; sent holds every request's scheduled
	// (open loop) or actual (closed loop) send time and latency.
	began time.Time
	sent  []sentAt
}

// sentAt is one request: when it was due to be sent, and how long its
// answer took from then.
type sentAt struct {
	at  time.Time
	lat time.Duration
}

// Outcome is the latency distribution of one kind of answer.
type Outcome struct {
	Label                   string
	Count                   int
	P50, P95, P99, Max, Min time.Duration
}

func (r *Report) add(label string, lat time.Duration, end time.Time) {
	r.byOutcome[label] = append(r.byOutcome[label], lat)
	r.sent = append(r.sent, sentAt{at: end.Add(-lat), lat: lat})
	r.Requests++
	if end.After(r.last) {
		r.last = end
	}
}

func (r *Report) finish(began time.Time) {
	r.began = began
	var all []time.Duration
	for label, lats := range r.byOutcome {
		r.Outcomes = append(r.Outcomes, summarise(label, lats))
		all = append(all, lats...)
	}
	sort.Slice(r.Outcomes, func(i, j int) bool { return r.Outcomes[i].Count > r.Outcomes[j].Count })
	r.All = summarise("all", all)
	if span := r.last.Sub(began); span > 0 {
		r.Throughput = float64(r.Requests) / span.Seconds()
	}
}

// Count returns how many requests ended with label (e.g. "200").
func (r *Report) Count(label string) int {
	return len(r.byOutcome[label])
}

// Errors counts requests that got no HTTP answer.
func (r *Report) Errors() int {
	n := 0
	for _, o := range r.Outcomes {
		if len(o.Label) > 6 && o.Label[:6] == "error:" {
			n += o.Count
		}
	}
	return n
}

// Refused counts requests answered 503: hoox said nothing was placed (its
// database or venue could not take the signal, or it was at capacity).
func (r *Report) Refused() int {
	n := 0
	for _, o := range r.Outcomes {
		if strings.HasPrefix(o.Label, "503") {
			n += o.Count
		}
	}
	return n
}

// Stretch is a stretch of a run, by send time.
type Stretch struct {
	From, To time.Time
	// Requests were sent in it; Over of them took longer than the run's
	// p99, which OverAll requests did in the whole run.
	Requests, Over, OverAll int
	// Max is the longest answer of a request sent in it.
	Max time.Duration
}

// Slowest returns the width-long stretch (starting on a multiple of
// width/4 from the run's start) whose requests hold the most of the
// run's answers slower than its p99: where the tail came from. ok is
// false for a run with no such answer.
func (r *Report) Slowest(width time.Duration) (s Stretch, ok bool) {
	p99 := r.All.P99
	step := width / 4
	if step <= 0 || len(r.sent) == 0 {
		return s, false
	}
	over := map[int]int{}
	maxOf := map[int]time.Duration{}
	all := 0
	for _, x := range r.sent {
		i := int(x.at.Sub(r.began) / step)
		maxOf[i] = max(maxOf[i], x.lat)
		if x.lat > p99 {
			over[i]++
			all++
		}
	}
	if all == 0 {
		return s, false
	}
	best, bestN := 0, -1
	for i := range over {
		n := 0
		for j := i; j < i+4; j++ {
			n += over[j]
		}
		if n > bestN || (n == bestN && i < best) {
			best, bestN = i, n
		}
	}
	s = Stretch{From: r.began.Add(time.Duration(best) * step), Over: bestN, OverAll: all}
	s.To = s.From.Add(width)
	for _, x := range r.sent {
		if !x.at.Before(s.From) && x.at.Before(s.To) {
			s.Requests++
			s.Max = max(s.Max, x.lat)
		}
	}
	return s, true
}

// SecondsP99 is the p99 of the requests sent in each whole second of the
// run, in order.
func (r *Report) SecondsP99() []time.Duration {
	var secs [][]time.Duration
	for _, x := range r.sent {
		i := int(x.at.Sub(r.began) / time.Second)
		if i < 0 {
			continue
		}
		for len(secs) <= i {
			secs = append(secs, nil)
		}
		secs[i] = append(secs[i], x.lat)
	}
	out := make([]time.Duration, len(secs))
	for i, lats := range secs {
		out[i] = summarise("", lats).P99
	}
	return out
}

// Pooled summarises the requests of several runs as one distribution,
// counting those sent no later than until (every request when until is
// zero): the p99 over interleaved rounds, or of "the signals sent while
// the purge ran", the same statistic as one run's p99, where the worst of
// several runs' p99 is a maximum over windows and reads worse than any
// single window would.
func Pooled(reps []*Report, until time.Time) Outcome {
	var lats []time.Duration
	for _, r := range reps {
		for _, x := range r.sent {
			if until.IsZero() || !x.at.After(until) {
				lats = append(lats, x.lat)
			}
		}
	}
	return summarise("all", lats)
}

// Began is when the run began.
func (r *Report) Began() time.Time { return r.began }

func summarise(label string, lats []time.Duration) Outcome {
	o := Outcome{Label: label, Count: len(lats)}
	if len(lats) == 0 {
		return o
	}
	slices.Sort(lats)
	q := func(p float64) time.Duration {
		i := int(p*float64(len(lats))+0.5) - 1
		return lats[min(max(i, 0), len(lats)-1)]
	}
	o.P50, o.P95, o.P99, o.Min, o.Max = q(0.50), q(0.95), q(0.99), lats[0], lats[len(lats)-1]
	return o
}

// Print writes the report for a person.
func (r *Report) Print(w io.Writer) {
	mode := fmt.Sprintf("closed loop, %d senders", r.Config.Workers)
	if r.Config.Rate > 0 {
		mode = fmt.Sprintf("open loop, %d/s (latency from scheduled send time)", r.Config.Rate)
	}
	fmt.Fprintf(w, "target %s, %s, %s\n", r.Config.Target, mode, r.Elapsed.Round(time.Millisecond))
	if r.Config.Target == TargetWebhook {
		fmt.Fprintf(w, "signals: %d distinct keys, %d repeats (dup ratio %.2f, repeat-one %v)\n",
			r.DistinctKeys, r.Repeats, r.Config.DupRatio, r.Config.RepeatOne)
	}
	fmt.Fprintf(w, "throughput: %.0f req/s (%d requests)\n", r.Throughput, r.Requests)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "outcome\tcount\tp50\tp95\tp99\tmax\t")
	for _, o := range append(r.Outcomes, r.All) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", o.Label, o.Count, ms(o.P50), ms(o.P95), ms(o.P99), ms(o.Max))
	}
	_ = tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

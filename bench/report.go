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
}

// Outcome is the latency distribution of one kind of answer.
type Outcome struct {
	Label                   string
	Count                   int
	P50, P95, P99, Max, Min time.Duration
}

func (r *Report) add(label string, lat time.Duration, end time.Time) {
	r.byOutcome[label] = append(r.byOutcome[label], lat)
	r.Requests++
	if end.After(r.last) {
		r.last = end
	}
}

func (r *Report) finish(began time.Time) {
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

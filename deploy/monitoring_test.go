package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/pgtest"
)

// TestMain shares one Postgres server across the package's tests.
func TestMain(m *testing.M) {
	pgtest.MainLeakChecked(m, func() { http.DefaultClient.CloseIdleConnections() })
}

// rule is one alerting rule of the PrometheusRule.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	m := render(t, "overlays/production")
	var spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	m.get("PrometheusRule", "hoox", &spec)
	var out []rule
	for _, g := range spec.Groups {
		out = append(out, g.Rules...)
	}
	require.NotEmpty(t, out)
	return out
}

// dashboardExprs are every PromQL expression of the Grafana dashboard, by
// panel title.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(readFile(t, "components/monitoring/dashboard.json"), &d))
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q has an empty query", p.Title)
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// TestAlertRules: every rule alerts (no recording rules to keep in step),
// has a known severity, a sane `for:`, a summary and a description, and the
// alerts the issue asks for exist.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range alertRules(t) {
		require.NotEmpty(t, r.Alert, "a rule without an alert name: %s", r.Expr)
		require.False(t, seen[r.Alert], "alert %s is declared twice", r.Alert)
		seen[r.Alert] = true
		require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s: severity", r.Alert)
		require.NotEmpty(t, r.For, "%s: an alert without for: pages on one bad scrape", r.Alert)
		d, err := model.ParseDuration(r.For)
		require.NoError(t, err, "%s: for: %s", r.Alert, r.For)
		require.GreaterOrEqual(t, time.Duration(d), time.Minute, "%s: for: shorter than a minute pages on noise", r.Alert)
		require.LessOrEqual(t, time.Duration(d), time.Hour, "%s: for: longer than an hour hides an incident", r.Alert)
		require.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
		require.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
		// Every range in the expression is at least two scrapes (15 s).
		for _, m := range regexp.MustCompile(`\[(\w+)\]`).FindAllStringSubmatch(r.Expr, -1) {
			w, err := model.ParseDuration(m[1])
			require.NoError(t, err)
			require.GreaterOrEqual(t, time.Duration(w), time.Minute, "%s: range [%s] too short for a 15 s scrape", r.Alert, m[1])
		}
	}
	// What each alert is about, by the metric it reads.
	about := map[string]string{
		"traces stuck reconciling":            "hoox_reconciling_oldest_seconds",
		"unsettled intents past the recovery": "hoox_unsettled_intent_oldest_seconds",
		"a venue's error rate":                "hoox_venue_errors_total",
		"the kill switch engaged":             "hoox_kill_switch_engaged",
		"the purge falling behind":            "hoox_purge_overdue_seconds",
		"a replica not ready":                 "hoox_ready",
	}
	for what, metric := range about {
		found := false
		for _, r := range alertRules(t) {
			found = found || slices.Contains(metricNames(r.Expr), metric)
		}
		require.True(t, found, "no alert on %s (%s)", what, metric)
	}
}

// TestDashboardSections: the dashboard shows what an operator looks for.
func TestDashboardSections(t *testing.T) {
	t.Parallel()
	panels := dashboardExprs(t)
	var all []string
	for _, exprs := range panels {
		for _, e := range exprs {
			all = append(all, metricNames(e)...)
		}
	}
	for what, metric := range map[string]string{
		"signals":           "hoox_signals_total",
		"latency by stage":  "hoox_stage_seconds_bucket",
		"venue outcomes":    "hoox_venue_errors_total",
		"pools":             "hoox_db_pool_acquired_conns",
		"purge":             "hoox_purged_rows_total",
		"duplicates (kind)": "hoox_signals_total",
	} {
		require.Contains(t, all, metric, "the dashboard shows no %s", what)
	}
	require.Contains(t, strings.Join(flatten(panels), "\n"), `outcome=~"duplicate`, "the dashboard shows no duplicates")
}

// TestMonitoringNamesExportedMetrics starts hoox (app.New, the wiring of
// hoox serve) on a test database, sends a signal and its repeat, scrapes
// /metrics, and checks that every metric the alerts and the dashboard name
// is one hoox exports — so a renamed metric fails here, not in an
// incident.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	exported, samples := scrapeHoox(t)

	check := func(where, expr string) {
		for _, name := range metricNames(expr) {
			if name == "up" { // Prometheus's own series for a target
				continue
			}
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && exported[b] == "histogram" {
					base = b
				}
			}
			_, ok := exported[base]
			require.True(t, ok, "%s names %s, which hoox does not export", where, name)
		}
	}
	for _, r := range alertRules(t) {
		check("alert "+r.Alert, r.Expr)
	}
	for title, exprs := range dashboardExprs(t) {
		for _, e := range exprs {
			check("dashboard panel "+title, e)
		}
	}
	// The state gauges read Postgres (this scrape could), and the fresh
	// database has nothing stuck and the switch released.
	for _, want := range []string{"hoox_state_read_ok 1", "hoox_ready 1", "hoox_kill_switch_engaged 0",
		"hoox_reconciling_traces 0", "hoox_unsettled_intents 0", `hoox_venue_errors_total{venue="paper"} 0`} {
		require.Contains(t, samples, want)
	}
}

// scrapeHoox returns the metric families /metrics lists (name → type) and
// its sample lines.
func scrapeHoox(t *testing.T) (map[string]string, []string) {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.Addr = "127.0.0.1:0"
	cfg.API.WebhookSecret = "monitoring-test-secret"
	cfg.DBMaxConns = 8
	cfg.DBMinConns = 1
	cfg.NoMigrate = true // the harness migrated the database
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close(context.Background()) })
	base := "http://" + a.Addr()

	// A signal and its repeat, so the per-outcome and per-route series exist.
	body := `{"secret":"monitoring-test-secret","exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"monitoring-1"}`
	for _, want := range []int{http.StatusOK, http.StatusConflict} {
		res, err := http.Post(base+"/webhook", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, want, res.StatusCode)
	}

	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	types := map[string]string{}
	var samples []string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			samples = append(samples, sc.Text())
		}
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, types)
	return types, samples
}

// promqlWords are PromQL's functions and keywords, which look like metric
// names to a tokenizer.
var promqlWords = map[string]bool{
	"sum": true, "max": true, "min": true, "avg": true, "count": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "and": true, "or": true, "unless": true, "bool": true,
	"rate": true, "irate": true, "increase": true, "delta": true, "histogram_quantile": true, "clamp_min": true,
	"clamp_max": true, "absent": true, "time": true, "offset": true, "topk": true, "bottomk": true, "le": true,
	"max_over_time": true, "min_over_time": true, "avg_over_time": true, "changes": true, "resets": true,
	"vector": true, "scalar": true, "label_replace": true,
}

// metricNames are the metric names a PromQL expression selects: every
// identifier outside label matchers, strings and ranges that is not a
// function, keyword or grouping label.
func metricNames(expr string) []string {
	// Drop strings, label matchers, ranges, grouping clauses and Grafana's
	// variables.
	for _, re := range []string{`"[^"]*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `(by|without|on|ignoring)\s*\([^)]*\)`, `\$\w+`} {
		expr = regexp.MustCompile(re).ReplaceAllString(expr, " ")
	}
	var out []string
	for _, m := range regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`).FindAllString(expr, -1) {
		if promqlWords[m] || regexp.MustCompile(`^[0-9]`).MatchString(m) || m == "e" {
			continue
		}
		out = append(out, m)
	}
	return out
}

func flatten(m map[string][]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}

// TestMetricNamesParser: the tokenizer the checks above rely on.
func TestMetricNamesParser(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"hoox_signals_total", "hoox_signals_total"},
		metricNames(`sum(rate(hoox_signals_total{outcome="unavailable"}[5m])) / clamp_min(sum(rate(hoox_signals_total[5m])), 1e-9) > 0.1`))
	require.Equal(t, []string{"hoox_stage_seconds_bucket"},
		metricNames(`histogram_quantile(0.99, sum by (stage, le) (rate(hoox_stage_seconds_bucket[$__rate_interval])))`))
	require.Equal(t, []string{"up"}, metricNames(`up{job="hoox"} == 0`))
	require.Equal(t, []string{"hoox_ready", "hoox_ready"}, metricNames(`sum(hoox_ready) < 1 or absent(hoox_ready)`))
}

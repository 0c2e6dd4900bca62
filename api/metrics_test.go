package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
)

// B9 of issue 17: every label of the request metric comes from a fixed set,
// whatever a client sends. Before, each made-up method (and so each
// request a scanner sends) was a new time series, and a few thousand of
// them cost Prometheus and hoox memory for good.
func TestRequestMetricLabelsAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Registry: reg}).Handler()
	for i := range 200 {
		for _, target := range []string{"/webhook", fmt.Sprintf("/no-such-page-%d", i), fmt.Sprintf("/ui/static/x-%d.css", i)} {
			req := httptest.NewRequest(fmt.Sprintf("MADEUP%d", i), target, nil)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, "/healthz", nil))
	}

	methods, routes := map[string]bool{}, map[string]bool{}
	families, err := reg.Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range families {
		if f.GetName() != "hoox_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					methods[l.GetValue()] = true
				case "route":
					routes[l.GetValue()] = true
				}
			}
		}
	}
	require.NotZero(t, series)
	require.Equal(t, map[string]bool{"other": true, "GET": true, "POST": true, "DELETE": true}, methods)
	for r := range routes {
		require.Contains(t, []string{"/webhook", "/healthz", "/ui/static/*", "unmatched"}, r)
	}
	require.Less(t, series, 20, "series must not grow with what clients send")
}

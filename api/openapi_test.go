package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/api/openapi"
	"github.com/hoox/hoox/api/openapi/openapitest"
)

// TestOpenAPIServed: GET /openapi.json answers the embedded document, which
// is a valid OpenAPI 3.1 document.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{})
	res := do(t, srv.Handler(), http.MethodGet, openapi.Path, "", "")
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.True(t, bytes.Equal(openapi.Document(), res.Body), "served document differs from the embedded one")
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.NoError(t, openapitest.Load(), "the document must load and validate")
}

// TestOpenAPIRoutes: every route the server declares under /webhook,
// /admin (River's UI aside), /healthz and /readyz is in the document, and
// every operation the document declares is a route, so neither can be
// added without the other.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Config{WebhookSecret: webhookSecret, AdminToken: adminToken},
		api.Deps{Admin: &api.Admin{}})
	e, ok := srv.Handler().(*echo.Echo)
	require.True(t, ok, "Server.Handler is no longer the Echo router; adapt this test")

	var served []string
	for _, r := range e.Routes() {
		p := r.Path
		inContract := p == "/webhook" || p == "/healthz" || p == "/readyz" || p == openapi.Path ||
			(strings.HasPrefix(p, "/admin/") && !strings.HasPrefix(p, "/admin/river"))
		if !inContract || r.Method == echo.RouteNotFound || r.Method == "echo_route_any" || r.Name == api.RefusedMethodRoute {
			continue
		}
		// The document spells Echo's trace wildcard as {trace_id}.
		p = strings.Replace(p, "/admin/traces/*", "/admin/traces/{trace_id}", 1)
		// and Echo's :param as {param}.
		p = regexp.MustCompile(`:([a-z_]+)`).ReplaceAllString(p, "{$1}")
		served = append(served, r.Method+" "+p)
	}

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document(), &doc))
	var documented []string
	for p, item := range doc.Paths {
		for m := range item {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(served)
	served = slices.Compact(served)
	slices.Sort(documented)
	require.Equal(t, documented, served)
}

// tbRecorder is a testing.TB that keeps what the contract reports instead
// of failing, so a test can show the contract fails on drift. It is
// used on the bare contract handler, never through do, which would wrap
// it again with the real test.
type tbRecorder struct {
	testing.TB
	errs []string
}

func (r *tbRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestContractCatchesDrift: a response the document does not describe (a
// missing field, an undocumented status, the wrong media type) fails the
// test that got it; one it describes passes.
func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	serve := func(status int, ctype, body string) []string {
		rec := &tbRecorder{TB: t}
		h := contract(rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.errs
	}
	require.Empty(t, serve(http.StatusOK, "application/json", `{"status":"ok"}`))
	require.NotEmpty(t, serve(http.StatusOK, "application/json", `{"state":"ok"}`), "missing field")
	require.NotEmpty(t, serve(http.StatusOK, "text/plain", `ok`), "wrong media type")
	require.NotEmpty(t, serve(http.StatusTeapot, "application/problem+json",
		`{"type":"x","title":"x","status":418,"detail":"x","code":"internal"}`), "undocumented status")

	// A request hoox accepted must match too: a kill switch body without
	// "engaged" answered 200 is drift.
	rec := &tbRecorder{TB: t}
	h := contract(rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"engaged":false,"reason":"","at":null}`))
	}))
	req := httptest.NewRequest(http.MethodPut, "/admin/kill-switch", strings.NewReader(`{"reason":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	require.NotEmpty(t, rec.errs, "accepted request without a required field")
}

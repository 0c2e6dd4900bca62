package api_test

import (
	"net/http"
	"testing"

	"github.com/hoox/hoox/api/openapi/openapitest"
)

// contract wraps h so that every exchange it serves to a route the OpenAPI
// document describes is checked against the document
// (openapitest.Handler); a mismatch fails t, the test that made the request.
func contract(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	return openapitest.Handler(t, h)
}

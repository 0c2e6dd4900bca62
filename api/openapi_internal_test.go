package api

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api/openapi"
)

// TestOpenAPIProblemCodes: the document's problem codes are exactly the
// codes hoox answers with, and wherever the document lists codes under a
// status, each code has that status in the one table (statusOf).
func TestOpenAPIProblemCodes(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openapi.Document(), &doc))
	comps := doc["components"].(map[string]any)
	problem := comps["schemas"].(map[string]any)["Problem"].(map[string]any)
	var documented []string
	for _, c := range problem["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		documented = append(documented, c.(string))
	}
	var known []string
	for c := range statusOf {
		known = append(known, c)
	}
	require.ElementsMatch(t, known, documented, "Problem.code must list every code in statusOf")

	// Every response that narrows the codes lists only codes of its status.
	checkResponse := func(where, status string, r map[string]any) {
		if ref, ok := r["$ref"].(string); ok {
			r = comps["responses"].(map[string]any)[ref[len("#/components/responses/"):]].(map[string]any)
		}
		content, ok := r["content"].(map[string]any)["application/problem+json"].(map[string]any)
		if !ok {
			return
		}
		for _, part := range content["schema"].(map[string]any)["allOf"].([]any) {
			props, ok := part.(map[string]any)["properties"].(map[string]any)
			if !ok {
				continue
			}
			for _, c := range props["code"].(map[string]any)["enum"].([]any) {
				require.Equal(t, status, strconv.Itoa(statusOf[c.(string)]), "%s %s lists code %s", where, status, c)
			}
		}
	}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			for status, r := range op.(map[string]any)["responses"].(map[string]any) {
				checkResponse(method+" "+path, status, r.(map[string]any))
			}
		}
	}
}

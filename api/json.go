package api

import (
	"encoding/json"
	"io"
)

// writeJSON encodes v without HTML escaping: bodies are read by programs,
// and escaping '<' in a strategy name would only confuse them.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

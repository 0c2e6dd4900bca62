// Package openapi holds hoox's HTTP API contract: an OpenAPI 3.1 document
// for /webhook, /admin, /healthz and /readyz, embedded in the binary and
// served at GET /openapi.json. The api package's tests check every
// response they get (and every request hoox accepts) against it, so the
// document cannot drift from the code.
package openapi

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.json
var document []byte

// Path is where hoox serves the document.
const Path = "/openapi.json"

// Document is the OpenAPI 3.1 document as JSON. Each call returns its own
// copy, so no caller can change what another is served.
func Document() []byte { return bytes.Clone(document) }

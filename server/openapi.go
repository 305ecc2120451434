package server

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 description of every route, served at
// GET /openapi.json. TestOpenAPI checks it against the route table and
// validates real responses against its schemas.
//
//go:embed openapi.json
var openAPIDoc []byte

// serveOpenAPI answers GET /openapi.json.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
}

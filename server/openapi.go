package server

import (
	_ "embed"
	"net/http"
	"slices"
)

// openAPI is the OpenAPI 3.1 document of every route, kept beside the code
// that serves them; the server's tests check every response they get
// against it, so the two cannot drift apart.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the server's API (served at
// GET /v1/openapi.json), as JSON.
func OpenAPI() []byte { return slices.Clone(openAPI) }

// handleOpenAPI answers GET /v1/openapi.json.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(openAPI)
}

// Routes returns the patterns of the routes s serves ("POST /invoke",
// "GET /v1/sessions/{id}", the channels' webhooks, …), in the order they
// were registered. The OpenAPI document describes each of them.
func (s *Server) Routes() []string { return slices.Clone(s.patterns) }

package server_test

import (
	"bytes"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/apicontract"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/discord"
	"github.com/spool-go/spool/server/channel/slack"
	"github.com/spool-go/spool/server/channel/telegram"
	"github.com/spool-go/spool/store/memstore"
)

// The document is valid OpenAPI 3.1, by libopenapi-validator's check
// against the specification's schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := apicontract.Document(t)
	if doc.Version != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.Version)
	}
}

// fullServer is a server with everything a route can come from: the web
// UI, /metrics and the three chat platforms.
func fullServer(t *testing.T) *server.Server {
	t.Helper()
	a, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := slack.New(slack.Config{SigningSecret: "s", BotToken: "xoxb-1"})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := telegram.New(telegram.Config{Token: "1:t", WebhookSecret: "w"})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discord.New(discord.Config{PublicKey: strings.Repeat("ab", 32), ApplicationID: "1", BotToken: "b"})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(a, server.Options{
		UI:       http.NotFoundHandler(),
		Metrics:  http.NotFoundHandler(),
		Channels: []channel.Driver{sl, tg, dc},
	})
	t.Cleanup(func() { s.Close(); a.Close() })
	return s
}

// Every route the server serves is in the document, and every operation
// of the document is served: a route added without its description (or
// described and then removed) fails here.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := apicontract.Document(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, pattern := range fullServer(t).Routes() {
		served[pattern] = true
		if !documented[pattern] {
			t.Errorf("the server serves %s, which the OpenAPI document (server/openapi.json) does not describe", pattern)
		}
	}
	var stale []string
	for op := range documented {
		if !served[op] {
			stale = append(stale, op)
		}
	}
	sort.Strings(stale)
	for _, op := range stale {
		t.Errorf("the OpenAPI document describes %s, which the server does not serve", op)
	}
	if len(served) < 20 {
		t.Fatalf("only %d routes: %v", len(served), slices.Sorted(maps.Keys(served)))
	}
}

// GET /v1/openapi.json serves the document kept in the repository.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.get("/v1/openapi.json")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.status, r.header.Get("Content-Type"))
	}
	file, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.body, file) || !bytes.Equal(server.OpenAPI(), file) {
		t.Fatal("the served document is not server/openapi.json")
	}
}

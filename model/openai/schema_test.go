package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/spool-go/spool/model"
)

// The API refuses a function whose parameters schema is not of type
// "object" ("Invalid schema for function 'now': schema must be a JSON
// Schema of 'type: \"object\"', got 'type: \"None\"'") or is an object
// without properties ("In context=(), object schema missing properties",
// code invalid_function_parameters), and so refused every request of a
// session that offered a tool written with tool.NewRaw and the schema {}
// or {"type":"object"} (no arguments, as MCP servers give such tools), or
// one that lists properties without saying their type. Such a schema
// means an object, with no properties when it lists none, as the provider
// offers a tool without a schema and as the anthropic provider sends it.
// The fake server refuses what the API refuses.
func TestToolSchemaIsAnObjectWithProperties(t *testing.T) {
	text := replay(t, "text.sse")
	var s *server
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tools []struct {
				Function struct {
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(s.body.Load().([]byte), &body) // newServer read it
		for _, tl := range body.Tools {
			if _, ok := tl.Function.Parameters["properties"].(map[string]any); !ok || tl.Function.Parameters["type"] != "object" {
				status(http.StatusBadRequest, "invalid_request_error", "invalid_function_parameters")(w, r)
				return
			}
		}
		text(w, r)
	})
	req := simpleRequest()
	req.Tools = []model.ToolSpec{
		{Name: "now", Parameters: json.RawMessage(`{}`)},
		{Name: "today", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "weather", Parameters: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "forecast", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	}
	if _, err := collect(newModel(t, s), context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

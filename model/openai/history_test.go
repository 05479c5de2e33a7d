package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/transcriptgen"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/openai"
	"github.com/spool-go/spool/transcript"
)

// capture is an http.RoundTripper that keeps the body of each request and
// answers it with a 400, so that a test reads the JSON the model sends.
type capture struct{ body []byte }

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.body = b
	return &http.Response{StatusCode: http.StatusBadRequest, Request: r,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{"error":{"type":"invalid_request_error","message":"captured"}}`))}, nil
}

// TestHistoryRequestsAreAccepted is a property over random transcripts as
// the runtime writes them (every turn status, calls stopped halfway or
// cut by a crash, approvals allowed, denied and pending, regenerates,
// edits, rolling compactions), with windows and budgets down to one
// message and a few tokens: at every point where the runtime asks the
// model, the request the history makes is one Chat Completions accepts
// (checkChatCompletions on the JSON sent). A refused request is a
// bricked session: every later turn sends the same history.
func TestHistoryRequestsAreAccepted(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 80
	}
	c := &capture{}
	m, err := openai.New("gpt-test-mini", openai.WithAPIKey("k"), openai.WithMaxRetries(0),
		openai.WithBaseURL("https://api.openai.com/v1"), openai.WithHTTPClient(&http.Client{Transport: c}))
	if err != nil {
		t.Fatal(err)
	}
	opts := []history.Options{
		{}, {MaxMessages: history.NoLimit, Instructions: "Be brief."},
		{MaxMessages: 1}, {MaxMessages: 2}, {MaxMessages: 3}, {MaxMessages: 5},
		{Budget: 1}, {Budget: 30}, {Budget: 80, Instructions: "Be brief."},
	}
	requests := 0
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		keep := 1 + r.IntN(3)
		cfg := transcriptgen.Config{Turns: 1 + r.IntN(12), Compact: func(es []transcript.Entry) (transcript.Compaction, bool) {
			p, ok := history.PlanCompaction(es, keep)
			return transcript.Compaction{Summary: "what was said", FirstTurn: p.FirstTurn, LastTurn: p.LastTurn, Turns: p.Turns}, ok
		}}
		transcriptgen.Session(r, cfg, func(es []transcript.Entry) {
			for _, opt := range opts {
				msgs := history.Build(es, opt)
				c.body = nil
				for _, err := range m.Stream(context.Background(), &model.Request{Messages: msgs}) {
					if err != nil && c.body == nil {
						t.Fatalf("seed %d, opt %+v: not sent: %v\nhistory:\n%s", seed, opt, err, dump(msgs))
					}
				}
				requests++
				if err := checkChatCompletions(c.body); err != nil {
					t.Fatalf("seed %d, opt %+v: %v\nsent: %s\nhistory:\n%s\ntranscript:\n%s", seed, opt, err, c.body, dump(msgs), dumpEntries(es))
				}
			}
		})
	}
	if requests < n {
		t.Fatalf("only %d requests", requests)
	}
}

// checkChatCompletions returns what Chat Completions would refuse in body,
// a request's JSON: a system message only in front; every assistant
// message with tool_calls (unique, non-empty ids) followed by exactly one
// tool message per call before any other message, and no tool message
// elsewhere; an assistant message without tool_calls has content; and
// the conversation starts with a user message and ends with a user or
// tool message (the runtime never asks with an answer last).
func checkChatCompletions(body []byte) error {
	var req struct {
		Messages []struct {
			Role      string           `json:"role"`
			Content   *json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].Role == "system" {
		msgs = msgs[1:]
	}
	if len(msgs) == 0 || msgs[0].Role != "user" {
		return fmt.Errorf("the conversation does not start with a user message")
	}
	if last := msgs[len(msgs)-1].Role; last != "user" && last != "tool" {
		return fmt.Errorf("the last message is from the %s", last)
	}
	ids := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case "user":
		case "tool":
			return fmt.Errorf("message %d: tool message for %q without its call right before it", i, m.ToolCallID)
		case "assistant":
			if len(m.ToolCalls) == 0 && m.Content == nil {
				return fmt.Errorf("message %d: assistant message without content or tool calls", i)
			}
			want := map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" || ids[c.ID] || c.Type != "function" || c.Function.Name == "" || !json.Valid([]byte(c.Function.Arguments)) {
					return fmt.Errorf("message %d: call %q: empty or repeated id, or malformed", i, c.ID)
				}
				ids[c.ID], want[c.ID] = true, true
			}
			j := i + 1
			for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				if !want[msgs[j].ToolCallID] {
					return fmt.Errorf("message %d: tool message for %q, which message %d did not call or was answered before", j, msgs[j].ToolCallID, i)
				}
				delete(want, msgs[j].ToolCallID)
			}
			for id := range want {
				return fmt.Errorf("message %d: call %q has no tool message", i, id)
			}
			i = j - 1
		default:
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
	}
	return nil
}

func dump(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		j, _ := json.Marshal(m)
		b.WriteString("  " + string(j) + "\n")
	}
	return b.String()
}

func dumpEntries(es []transcript.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "  %s %s %s %s\n", e.TurnID, e.Type, e.Status, e.Data)
	}
	return b.String()
}

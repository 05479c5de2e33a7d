package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/transcriptgen"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/anthropic"
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
		Body:   io.NopCloser(strings.NewReader(`{"type":"error","error":{"type":"invalid_request_error","message":"captured"}}`))}, nil
}

// TestHistoryRequestsAreAccepted is a property over random transcripts as
// the runtime writes them (every turn status, calls stopped halfway,
// approvals allowed, denied and pending, regenerates, edits, rolling
// compactions), with windows and budgets down to one message and a few
// tokens: at every point where the runtime asks the model, the request
// the history makes is one the Messages API accepts (checkMessagesAPI on
// the JSON sent). A refused request is a bricked session: every later
// turn sends the same history and is refused the same way.
func TestHistoryRequestsAreAccepted(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 80
	}
	c := &capture{}
	m, err := anthropic.New("claude-test-1", anthropic.WithAPIKey("k"), anthropic.WithMaxRetries(0),
		anthropic.WithHTTPClient(&http.Client{Transport: c}))
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
				if err := checkMessagesAPI(c.body); err != nil {
					t.Fatalf("seed %d, opt %+v: %v\nsent: %s\nhistory:\n%s\ntranscript:\n%s", seed, opt, err, c.body, dump(msgs), dumpEntries(es))
				}
			}
		})
	}
	if requests < n {
		t.Fatalf("only %d requests", requests)
	}
}

// toolUseID is what the API takes as a tool_use id.
var toolUseID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// checkMessagesAPI returns what the Messages API would refuse in body, a
// request's JSON, of the rules a conversation must keep: messages start
// with a user message and alternate; none is empty, and no text block is
// blank; every tool_use has a unique id of the allowed form, and the next
// message answers each with a tool_result, before any text; every
// tool_result answers a tool_use of the message right before it, once; a
// request ends with a user message (an assistant message last would be a
// prefill, which the runtime never means).
func checkMessagesAPI(body []byte) error {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	msgs := req.Messages
	if len(msgs) == 0 {
		return fmt.Errorf("no messages")
	}
	if msgs[0].Role != "user" {
		return fmt.Errorf("the first message is from the %s", msgs[0].Role)
	}
	if last := msgs[len(msgs)-1]; last.Role != "user" {
		return fmt.Errorf("the last message is from the %s", last.Role)
	}
	uses := map[string]bool{}
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			return fmt.Errorf("messages %d and %d are both from the %s", i-1, i, m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("message %d is empty", i)
		}
		var asked []string // tool_use ids of the message before
		if i > 0 {
			for _, b := range msgs[i-1].Content {
				if b.Type == "tool_use" {
					asked = append(asked, b.ID)
				}
			}
		}
		answered := map[string]int{}
		text := false
		for j, b := range m.Content {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					return fmt.Errorf("message %d block %d: blank text", i, j)
				}
				text = true
			case "tool_use":
				if m.Role != "assistant" {
					return fmt.Errorf("message %d block %d: tool_use in a %s message", i, j, m.Role)
				}
				if !toolUseID.MatchString(b.ID) || uses[b.ID] {
					return fmt.Errorf("message %d block %d: tool_use id %q is malformed or used before", i, j, b.ID)
				}
				uses[b.ID] = true
			case "tool_result":
				if m.Role != "user" || text {
					return fmt.Errorf("message %d block %d: tool_result in a %s message, or after text", i, j, m.Role)
				}
				if !contains(asked, b.ToolUseID) || answered[b.ToolUseID] > 0 {
					return fmt.Errorf("message %d block %d: tool_result for %q, which message %d did not ask for, or answered twice", i, j, b.ToolUseID, i-1)
				}
				answered[b.ToolUseID]++
			default:
				return fmt.Errorf("message %d block %d: type %q", i, j, b.Type)
			}
		}
		if m.Role == "user" {
			for _, id := range asked {
				if answered[id] == 0 {
					return fmt.Errorf("message %d: tool_use %q of message %d has no tool_result", i, id, i-1)
				}
			}
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
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

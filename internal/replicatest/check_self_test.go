package replicatest

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/transcript"
)

// builder writes synthetic transcripts, chained as a store would hold
// them, for testing the checks themselves.
type builder struct {
	entries []transcript.Entry
	now     time.Time
}

func (b *builder) add(t *testing.T, typ transcript.Type, turnID string, status transcript.Status, data any) {
	t.Helper()
	b.now = b.now.Add(time.Millisecond)
	e, err := transcript.New(b.now, typ, turnID, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Status = status
	if n := len(b.entries); n > 0 {
		e.ParentID = b.entries[n-1].ID
	}
	b.entries = append(b.entries, e)
}

// plain adds a whole turn answered in text, as the echo model answers.
func (b *builder) plain(t *testing.T, turnID, prompt string) {
	b.add(t, transcript.TypeUserMessage, turnID, "", transcript.UserMessage{Text: prompt})
	b.add(t, transcript.TypeAssistantMessage, turnID, "", transcript.AssistantMessage{Text: "echo: " + prompt})
	b.add(t, transcript.TypeTurnEnd, turnID, transcript.StatusOK, transcript.TurnEnd{})
}

// tool adds a whole turn with one tool call.
func (b *builder) tool(t *testing.T, turnID, prompt string) {
	b.add(t, transcript.TypeUserMessage, turnID, "", transcript.UserMessage{Text: prompt})
	b.add(t, transcript.TypeAssistantMessage, turnID, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{{ID: "c-" + turnID, Name: "get_time", Arguments: []byte(`{}`)}}})
	b.add(t, transcript.TypeToolResult, turnID, "", transcript.ToolResult{CallID: "c-" + turnID, Tool: "get_time", Result: "now"})
	b.add(t, transcript.TypeAssistantMessage, turnID, "", transcript.AssistantMessage{Text: "tool get_time returned: now"})
	b.add(t, transcript.TypeTurnEnd, turnID, transcript.StatusOK, transcript.TurnEnd{})
}

func okWant(prompts ...string) map[string]expect {
	w := map[string]expect{}
	for _, p := range prompts {
		w[p] = expect{status: transcript.StatusOK}
	}
	return w
}

// The checks pass a well-formed transcript and name each way one can be
// wrong, so that the replica tests cannot pass by checking nothing.
func TestChecks(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T, b *builder) map[string]expect
		want  string // a problem containing this; "" for none
	}{
		{"well formed", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.tool(t, "t2", "/call get_time {}\nB-2")
			b.plain(t, "t3", "A-3")
			w := okWant("A-1", "/call get_time {}\nB-2", "A-3")
			w["A-1"] = expect{status: transcript.StatusOK, turnID: "t1", text: "echo: A-1", answer: true}
			return w
		}, ""},
		{"broken chain", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.plain(t, "t2", "A-2")
			b.entries[4].ParentID = b.entries[1].ID
			return okWant("A-1", "A-2")
		}, "the chain is broken"},
		{"first entry with a parent", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.entries[0].ParentID = "x"
			return okWant("A-1")
		}, "the first entry has parent"},
		{"interleaved turns", func(t *testing.T, b *builder) map[string]expect {
			b.add(t, transcript.TypeUserMessage, "t1", "", transcript.UserMessage{Text: "A-1"})
			b.add(t, transcript.TypeUserMessage, "t2", "", transcript.UserMessage{Text: "B-1"})
			b.add(t, transcript.TypeAssistantMessage, "t1", "", transcript.AssistantMessage{Text: "echo: A-1"})
			b.add(t, transcript.TypeTurnEnd, "t1", transcript.StatusOK, transcript.TurnEnd{})
			b.add(t, transcript.TypeAssistantMessage, "t2", "", transcript.AssistantMessage{Text: "echo: B-1"})
			b.add(t, transcript.TypeTurnEnd, "t2", transcript.StatusOK, transcript.TurnEnd{})
			return okWant("A-1", "B-1")
		}, "turns interleave"},
		{"entry after its turn ended", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.add(t, transcript.TypeAssistantMessage, "t1", "", transcript.AssistantMessage{Text: "late"})
			return okWant("A-1")
		}, "after its turn ended"},
		{"turn never ended", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.add(t, transcript.TypeUserMessage, "t2", "", transcript.UserMessage{Text: "B-1"})
			return okWant("A-1", "B-1")
		}, "never ended"},
		{"two turn ends", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.add(t, transcript.TypeTurnEnd, "t1", transcript.StatusCancelled, transcript.TurnEnd{})
			return okWant("A-1")
		}, "after its turn ended"},
		{"prompt twice", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.plain(t, "t2", "A-1")
			return okWant("A-1")
		}, "in 2 turns"},
		{"prompt missing", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			return okWant("A-1", "B-1")
		}, `"B-1" is in 0 turns`},
		{"prompt nobody sent", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			b.plain(t, "t2", "Z-9")
			return okWant("A-1")
		}, "a prompt no request sent"},
		{"turn cancelled", func(t *testing.T, b *builder) map[string]expect {
			b.add(t, transcript.TypeUserMessage, "t1", "", transcript.UserMessage{Text: "A-1"})
			b.add(t, transcript.TypeTurnEnd, "t1", transcript.StatusCancelled, transcript.TurnEnd{})
			return okWant("A-1")
		}, `ended "cancelled", want "ok"`},
		{"answered with another turn", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			return map[string]expect{"A-1": {status: transcript.StatusOK, turnID: "t9"}}
		}, "answered with turn t9"},
		{"answered with another text", func(t *testing.T, b *builder) map[string]expect {
			b.plain(t, "t1", "A-1")
			return map[string]expect{"A-1": {status: transcript.StatusOK, text: "echo: B-1", answer: true}}
		}, "but its client got"},
		{"tool result without its call", func(t *testing.T, b *builder) map[string]expect {
			b.tool(t, "t1", "/call get_time {}\nA-1")
			b.entries[2].Data = []byte(`{"callId":"other","tool":"get_time","result":"now","isError":false,"durationMs":0}`)
			return okWant("/call get_time {}\nA-1")
		}, "which no assistant message of the turn asked for"},
		{"no turn id", func(t *testing.T, b *builder) map[string]expect {
			b.add(t, transcript.TypeAssistantMessage, "", "", transcript.AssistantMessage{Text: "hi"})
			return okWant()
		}, "outside any turn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &builder{now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
			want := c.build(t, b)
			_, problems := checkSession(b.entries, want)
			joined := strings.Join(problems, "\n")
			switch {
			case c.want == "" && len(problems) > 0:
				t.Fatalf("problems in a well-formed transcript:\n%s", joined)
			case c.want != "" && !strings.Contains(joined, c.want):
				t.Fatalf("want a problem with %q, got:\n%s", c.want, joined)
			}
		})
	}
}

func TestHandoffs(t *testing.T) {
	turns := []turn{{prompt: "A-1"}, {prompt: "A-2"}, {prompt: "/call get_time {}\nB-1"}, {prompt: "A-3"}}
	if n := handoffs(turns); n != 2 {
		t.Fatalf("handoffs = %d, want 2", n)
	}
}

package history

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkBuild builds the history of a 10,000-entry session from
// scratch, as a reader of a whole transcript does (spool sessions history,
// Session.History): with the default cap, with no cap (the whole
// conversation decoded), and with a token budget; and of a 1,000-entry
// session with the default cap (issue 12's figure).
func BenchmarkBuild(b *testing.B) {
	entries := benchSession(b, 10_000)
	b.Run("entries=1000/cap=200", func(b *testing.B) {
		short := benchSession(b, 1000)
		b.ReportAllocs()
		cpu := benchdata.CPU()
		for b.Loop() {
			Build(short, Options{Instructions: "You are a support agent."})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(short)), "ns/entry")
		b.ReportMetric(float64((benchdata.CPU()-cpu).Nanoseconds())/float64(b.N)/float64(len(short)), "cpu-ns/entry")
	})
	for _, bc := range []struct {
		name string
		opt  Options
	}{
		{"cap=200", Options{Instructions: "You are a support agent."}},
		{"cap=none", Options{Instructions: "You are a support agent.", MaxMessages: NoLimit}},
		{"budget=8000", Options{Instructions: "You are a support agent.", MaxMessages: NoLimit, Budget: 8000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(Build(entries, bc.opt))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(entries)), "ns/entry")
			b.ReportMetric(float64(n), "messages")
		})
	}
}

// benchSession makes a realistic session of about n entries: mostly plain
// turns and tool turns, some approvals, now and then a stopped answer or a
// cancelled turn. Texts have the lengths of a support conversation.
func benchSession(tb testing.TB, n int) []transcript.Entry {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	words := strings.Fields("the order shipped from our warehouse on monday and should arrive by thursday " +
		"please check the tracking link refund invoice customer account delivery address parcel carrier")
	text := func(min, max int) string {
		var sb strings.Builder
		for want := min + r.IntN(max-min); sb.Len() < want; {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	var entries []transcript.Entry
	var turn string
	add := func(typ transcript.Type, status transcript.Status, data any) {
		now = now.Add(time.Second)
		e, err := transcript.New(now, typ, turn, data)
		if err != nil {
			tb.Fatal(err)
		}
		if turn == "" {
			turn = e.ID // spool's turn id is its first entry's id
			e.TurnID = turn
		}
		e.Status = status
		if len(entries) > 0 {
			e.ParentID = entries[len(entries)-1].ID
		}
		entries = append(entries, e)
	}
	calls := 0
	call := func() transcript.ToolCall {
		calls++
		return transcript.ToolCall{ID: fmt.Sprintf("call_%d", calls), Name: "lookup_order",
			Arguments: json.RawMessage(fmt.Sprintf(`{"order":%d,"fields":["status","eta"]}`, 1000+r.IntN(9000)))}
	}
	result := func(c transcript.ToolCall) {
		add(transcript.TypeToolResult, "", transcript.ToolResult{CallID: c.ID, Tool: c.Name,
			Result: `{"status":"shipped","note":"` + text(100, 1500) + `"}`, DurationMs: 40})
	}
	end := func(s transcript.Status) {
		add(transcript.TypeTurnEnd, s, transcript.TurnEnd{Usage: transcript.Usage{InputTokens: 900, OutputTokens: 120}, DurationMs: 1800})
	}
	for len(entries) < n {
		turn = ""
		add(transcript.TypeUserMessage, "", transcript.UserMessage{Text: text(40, 300)})
		switch k := r.IntN(100); {
		case k < 55: // a plain answer
			add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: text(200, 1500), Model: "m"})
			end(transcript.StatusOK)
		case k < 88: // one or two tool steps
			for range 1 + r.IntN(2) {
				cs := []transcript.ToolCall{call()}
				if r.IntN(3) == 0 {
					cs = append(cs, call())
				}
				add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: cs, Model: "m"})
				for _, c := range cs {
					result(c)
				}
			}
			add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: text(200, 1000), Model: "m"})
			end(transcript.StatusOK)
		case k < 94: // a call approved by a person
			c := call()
			add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{c}, Model: "m"})
			id := fmt.Sprintf("appr_%d", calls)
			add(transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: id, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
			add(transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: id, CallID: c.ID, Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
			result(c)
			add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: text(100, 600), Model: "m"})
			end(transcript.StatusOK)
		case k < 97: // an answer stopped by a guard
			add(transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: transcript.NoticeResponseStopped, Message: "stopped"})
			end(transcript.StatusResponseBlocked)
		default: // stopped by the user
			add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: text(50, 200), Model: "m"})
			end(transcript.StatusCancelled)
		}
	}
	return entries[:n]
}

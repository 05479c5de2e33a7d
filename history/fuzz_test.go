package history

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// FuzzBuild builds transcripts from the fuzz input and checks that Build
// never panics and that the invariants of checkInvariants hold.
func FuzzBuild(f *testing.F) {
	f.Add([]byte("\x00\x00\x00" + "\x00\x00\x02\x01\x06\x01" + "\x00\x00\x02\x11\x04\x01\x02\x01\x06\x01"))
	f.Add([]byte("\x01\x02\x01" + "\x00\x00\x02\x11\x07\x01" + "\x00\x00\x06\x21" + "\x01\x01\x06\x01"))
	f.Add([]byte("\x03\x01\x02" + "\x00\x00\x02\x21\x00\x03\x04\x11\x06\x11\x08\x01\x0b\x00\x09\x00"))
	f.Add([]byte("\x02\x00\x00" + "\x00\x00\x06\x31\x00\x00\x02\x51\x05\x11\x00\x00\x02\x01\x07\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
		entries, _, opt := fuzzTranscript(in)
		got := Build(entries, opt)
		if err := checkInvariants(entries, opt, got); err != nil {
			t.Fatalf("%v\nopt %+v\ntranscript:\n%s\nhistory:\n%s", err, opt, dumpEntries(entries), dumpMessages(got))
		}
	})
}

// fuzzTranscript reads in as options (three bytes) and then entries (two
// bytes each: an operation and its argument). Turn ids, call ids and
// approval ids are drawn from small sets so that calls, results and
// decisions meet; turns may interleave, data may be malformed, and statuses
// may be anything. values holds the value each entry's data was made from
// (nil for data that is not JSON of a value).
func fuzzTranscript(in []byte) (entries []transcript.Entry, values []any, opt Options) {
	if len(in) >= 3 {
		opt.MaxMessages = []int{0, 1, 2, 3, 5, 8, NoLimit}[int(in[0])%7]
		opt.Budget = []int{0, 0, 12, 30, 60, 200}[int(in[1])%6]
		if in[2]&1 != 0 {
			opt.Instructions = "Be brief."
		}
		if in[2]&4 != 0 {
			opt.Counter = perMessage
		}
		in = in[3:]
	}
	descending := len(in) > 0 && in[0]&0x80 != 0 // turn ids that sort backwards, as another writer's might
	turnID := func(k int) string {
		if descending {
			k = 99 - k
		}
		return fmt.Sprintf("t%02d", k)
	}
	turns, cur := 1, 0
	for i := 0; i+1 < len(in) && len(entries) < 200; i += 2 {
		op, arg := in[i]%13, int(in[i+1])
		switch arg & 3 {
		case 0:
			cur = turns
			turns++
		case 3:
			cur = (arg >> 2) % turns
		}
		tid := turnID(cur)
		call := func(n int) string { return fmt.Sprintf("%s-c%d", tid, n%3) }
		var (
			typ    transcript.Type
			status transcript.Status
			data   any
		)
		switch op {
		case 0, 1:
			typ, data = transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprintf("u%d", len(entries))}
		case 2, 3:
			a := transcript.AssistantMessage{Text: fmt.Sprintf("a%d", len(entries))}
			for n := range (arg >> 4) % 4 {
				a.ToolCalls = append(a.ToolCalls, transcript.ToolCall{ID: call(n + arg>>6), Name: "f", Arguments: json.RawMessage(`{}`)})
			}
			typ, data = transcript.TypeAssistantMessage, a
		case 4, 5:
			typ, data = transcript.TypeToolResult, transcript.ToolResult{CallID: call(arg >> 4), Result: "r", IsError: arg&0x40 != 0}
		case 6:
			statuses := []transcript.Status{transcript.StatusOK, transcript.StatusOK, transcript.StatusPromptBlocked,
				transcript.StatusResponseBlocked, transcript.StatusError, transcript.StatusCancelled, "", "bogus"}
			typ, status = transcript.TypeTurnEnd, statuses[(arg>>2)%len(statuses)]
		case 7:
			typ, data = transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: fmt.Sprintf("a%d", (arg>>4)%3), CallID: call(arg >> 6)}
		case 8:
			d := transcript.ApprovalDecision{ApprovalID: fmt.Sprintf("a%d", (arg>>4)%3), CallID: call(arg >> 6), Decision: transcript.VerdictAllow}
			if arg&0x40 != 0 {
				d.Decision, d.Reason = transcript.VerdictDeny, "no"
			}
			typ, data = transcript.TypeApprovalDecision, d
		case 9:
			if sub := (arg >> 2) % 8; sub >= 4 {
				// A session.branch marker (rule 11), naming turns that
				// may or may not have begun.
				typ, data = transcript.TypeBranch, fuzzMarker(sub, arg>>5, turns, turnID)
				break
			}
			typ = []transcript.Type{"x.unknown", transcript.TypeGovernanceNotice, transcript.TypeSessionMode, ""}[(arg>>2)%4]
		case 10:
			// Data that does not decode into what its type promises.
			typ = []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeToolResult, transcript.TypeApprovalRequest}[(arg>>2)%4]
			data = json.RawMessage([]string{`{"text":1,"toolCalls":{},"callId":2}`, `{"toolCalls":[{"id":3}]}`, `{"approvalId":""}`, `nope`}[(arg>>4)%4])
		case 11:
			typ, data = transcript.TypeAssistantMessage, transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{{ID: call(0)}, {ID: call(0)}}}
		case 12:
			// A session.compaction (rule 10), covering turns that may or
			// may not have begun, ended, or be on the active branch.
			typ, data = transcript.TypeCompaction, fuzzCompaction(arg>>2, turns, turnID, len(entries))
		}
		entries = append(entries, fuzzEntry(len(entries), tid, typ, status, data))
		if _, raw := data.(json.RawMessage); raw {
			data = nil
		}
		values = append(values, data)
	}
	return entries, values, opt
}

// fuzzMarker returns the data of a marker: sub 4 supersedes one turn
// (a regenerate), 5 a turn and every later one (an edit), 6 restores one,
// 7 supersedes one and restores another (a switch).
func fuzzMarker(sub, arg, turns int, turnID func(int) string) transcript.Branch {
	t := arg % (turns + 1) // turns itself names a turn not begun yet
	b := transcript.Branch{Kind: transcript.BranchSwitch}
	switch sub {
	case 4:
		b.Kind, b.Supersedes = transcript.BranchRegenerate, []string{turnID(t)}
	case 5:
		b.Kind = transcript.BranchEdit
		for k := t; k < turns; k++ {
			b.Supersedes = append(b.Supersedes, turnID(k))
		}
	case 6:
		b.Restores = []string{turnID(t)}
	case 7:
		b.Supersedes, b.Restores = []string{turnID(t)}, []string{turnID((t + 1 + arg/3) % (turns + 1))}
	}
	return b
}

// fuzzCompaction returns the data of a compaction: from a turn to the
// same or a later one; turns itself names a turn not begun yet, and now
// and then the last turn comes before the first.
func fuzzCompaction(arg, turns int, turnID func(int) string, n int) transcript.Compaction {
	first := arg % 3 % turns // rolling summaries start at the first turns
	last := first + (arg>>2)%(turns-first+1)
	if arg&0x20 != 0 && first > 0 {
		first, last = last, first-1
	}
	return transcript.Compaction{Summary: fmt.Sprintf("s%d", n), FirstTurn: turnID(first), LastTurn: turnID(last), Turns: last - first + 1}
}

func fuzzEntry(n int, turn string, typ transcript.Type, status transcript.Status, data any) transcript.Entry {
	raw, ok := data.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(data)
	}
	if data == nil {
		raw = json.RawMessage(`{}`)
	}
	return transcript.Entry{ID: fmt.Sprintf("e%d", n), TurnID: turn, Type: typ, Status: status, Data: raw}
}

func dumpEntries(entries []transcript.Entry) string {
	s := ""
	for _, e := range entries {
		s += fmt.Sprintf("  %s %s %s %s\n", e.TurnID, e.Type, e.Status, e.Data)
	}
	return s
}

func dumpMessages(ms []model.Message) string {
	s := ""
	for _, m := range ms {
		b, _ := json.Marshal(m)
		s += "  " + string(b) + "\n"
	}
	return s
}

package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from Build's output")

// perMessage counts every message as one token, so a budget reads as a
// message count: handy to see the budget rule on its own.
func perMessage(model.Message) int { return 1 }

// goldenCases pairs a transcript in testdata/<transcript>.jsonl with
// options; the expected history is testdata/golden/<name>.json. The golden
// files are the spec: review them by hand when they change.
var goldenCases = []struct {
	name, transcript string
	opt              Options
}{
	{"plain", "plain", Options{Instructions: "You are a support agent for an online shop."}},
	{"plain-no-instructions", "plain", Options{}},
	{"empty", "empty", Options{}},
	{"empty-instructions", "empty", Options{Instructions: "You are terse."}},

	// Rule 2: refused, failed (also rate limited) and cancelled turns.
	{"statuses", "statuses", Options{}},
	// Rule 3 and 5: a stopped answer keeps its question, merged into the next.
	{"response-blocked", "response_blocked", Options{}},
	{"response-blocked-newest", "response_blocked_newest", Options{}},
	{"response-blocked-cap-2", "response_blocked", Options{MaxMessages: 2}},
	{"merge-chain", "merge_chain", Options{}},
	{"merge-chain-cap-1", "merge_chain", Options{MaxMessages: 1}},
	{"merge-chain-cap-2", "merge_chain", Options{MaxMessages: 2}},
	{"merge-chain-cap-3", "merge_chain", Options{MaxMessages: 3}},
	// Rule 4: results after the step that called, in call order; errors.
	{"tools", "tools", Options{}},

	// Rule 6: turns of 2, 4, 2, 4 and 2 messages. The newest 4 and 10
	// messages would start on a tool result, the newest 5 on its call.
	{"window-cap-200", "window", Options{MaxMessages: 200}},
	{"window-cap-1", "window", Options{MaxMessages: 1}},
	{"window-cap-2", "window", Options{MaxMessages: 2}},
	{"window-cap-3", "window", Options{MaxMessages: 3}},
	{"window-cap-4-result-at-edge", "window", Options{MaxMessages: 4}},
	{"window-cap-5-call-at-edge", "window", Options{MaxMessages: 5}},
	{"window-cap-6", "window", Options{MaxMessages: 6}},
	{"window-cap-10-result-at-edge", "window", Options{MaxMessages: 10}},
	{"window-cap-2-instructions", "window", Options{MaxMessages: 2, Instructions: "Be brief."}},
	{"long-turn-cap-3", "long_turn", Options{MaxMessages: 3}},
	{"long-turn-cap-13", "long_turn", Options{MaxMessages: 13}},
	{"long-turn-cap-14", "long_turn", Options{MaxMessages: 14}},

	// Rule 8: a turn waiting on an approval.
	{"approval-waiting", "approval_waiting", Options{}},
	{"approval-waiting-cap-1", "approval_waiting", Options{MaxMessages: 1}},
	{"approval-waiting-budget-10", "approval_waiting", Options{Budget: 10}},
	{"approval-resolved", "approval_resolved", Options{}},
	{"approval-older-cap-2", "approval_older", Options{MaxMessages: 2}},
	{"approval-older", "approval_older", Options{}},

	// Rule 7: each budget turn is 36 tokens by ApproxTokens; the
	// instructions are 8.
	{"budget-none", "budget", Options{}},
	{"budget-108", "budget", Options{Budget: 108}},
	{"budget-107", "budget", Options{Budget: 107}},
	{"budget-80-instructions", "budget", Options{Budget: 80, Instructions: "You are terse."}},
	{"budget-79-instructions", "budget", Options{Budget: 79, Instructions: "You are terse."}},
	{"budget-10-newest-always", "budget", Options{Budget: 10}},
	{"budget-counter-5", "budget", Options{Budget: 5, Counter: perMessage}},
	{"budget-and-cap", "budget", Options{Budget: 1000, MaxMessages: 4}},

	// Entries that are not messages, turns that never ended, suffixes,
	// interleaved turns, and another writer's transcript.
	{"unknown", "unknown", Options{}},
	{"unfinished", "unfinished", Options{}},
	{"suffix", "suffix", Options{}},
	{"interleaved", "interleaved", Options{}},
	{"interleaved-open", "interleaved_open", Options{}},
	{"missing-result", "missing_result", Options{}},
	{"foreign", "foreign", Options{}},

	// Rule 11: an edit of an edit; three regenerates (one of them failed)
	// and a switch back to the first answer; and the earlier rules on the
	// active branch: a stopped answer's question merges into the edited
	// one, whose turn waits on an approval.
	{"branch-edit-chain", "branch_edit_chain", Options{}},
	{"branch-edit-chain-cap-2", "branch_edit_chain", Options{MaxMessages: 2}},
	{"branch-regenerate-switch", "branch_regenerate_switch", Options{}},
	{"branch-regenerate-switch-cap-3", "branch_regenerate_switch", Options{MaxMessages: 3}},
	{"branch-rules", "branch_rules", Options{}},
	{"branch-rules-cap-1", "branch_rules", Options{MaxMessages: 1}},

	// Rule 10: six turns, the first four (one with a tool call) covered,
	// the newest two kept; then the window and the budget on the result:
	// the summary is one unit of two messages, cut whole. By
	// ApproxTokens the two kept turns are 30 tokens, the summary 56.
	{"compaction", "compaction", Options{Instructions: "You are a support agent."}},
	{"compaction-cap-2", "compaction", Options{MaxMessages: 2}},
	{"compaction-cap-5", "compaction", Options{MaxMessages: 5}},
	{"compaction-cap-6", "compaction", Options{MaxMessages: 6}},
	{"compaction-budget-40", "compaction", Options{Budget: 40}},
	{"compaction-budget-85", "compaction", Options{Budget: 85}},
	{"compaction-budget-86", "compaction", Options{Budget: 86}},
	// Refused, failed and cancelled turns in the range and out of it; a
	// stopped answer's question before the range merges into the
	// summary's question, one in the range is covered, one after it
	// merges into the next question.
	{"compaction-statuses", "compaction_statuses", Options{}},
	{"compaction-statuses-cap-3", "compaction_statuses", Options{MaxMessages: 3}},
	// A rolling summary takes the place of the one it extends; one that
	// would cover a turn waiting on an approval covers nothing, and that
	// turn is sent (rule 8), with a cap of 1 too.
	{"compaction-rolling", "compaction_rolling", Options{}},
	{"compaction-rolling-cap-1", "compaction_rolling", Options{MaxMessages: 1}},
	// Rule 11 first: an edit after the range keeps the compaction; an
	// edit of a covered turn ends it; a compaction of the new branch
	// applies; a switch back to the covered turn makes the first apply
	// again, and the newer one, whose turn left the branch, not.
	{"compaction-branch-kept", "compaction_branch_kept", Options{}},
	{"compaction-branch-edit", "compaction_branch_edit", Options{}},
	{"compaction-branch-new", "compaction_branch_new", Options{}},
	{"compaction-branch-switch", "compaction_branch_switch", Options{}},
	{"compaction-branch-switch-cap-4", "compaction_branch_switch", Options{MaxMessages: 4}},
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			entries := readTranscript(t, tc.transcript)
			got := Build(entries, tc.opt)
			if err := checkInvariants(entries, tc.opt, got); err != nil {
				t.Errorf("invariant: %v", err)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			path := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestBuildGolden -update to write it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("history differs from %s\n--- got\n%s\n--- want\n%s", path, out, want)
			}
		})
	}
}

// TestGoldenFilesUsed keeps testdata honest: every transcript and golden
// file belongs to a case.
func TestGoldenFilesUsed(t *testing.T) {
	used := map[string]bool{}
	for _, tc := range goldenCases {
		used[filepath.Join("testdata", tc.transcript+".jsonl")] = true
		used[filepath.Join("testdata", "golden", tc.name+".json")] = true
	}
	for _, pattern := range []string{"testdata/*.jsonl", "testdata/golden/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !used[f] {
				t.Errorf("%s is in no golden case", f)
			}
		}
	}
}

func readTranscript(t testing.TB, name string) []transcript.Entry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []transcript.Entry
	dec := transcript.NewDecoder(f)
	for {
		e, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entries = append(entries, e)
	}
}

func TestDefaultCap(t *testing.T) {
	var entries []transcript.Entry
	for i := range 150 {
		turn := fmt.Sprintf("T%03d", i)
		entries = append(entries,
			entry(turn, transcript.TypeUserMessage, "", transcript.UserMessage{Text: fmt.Sprintf("q%d", i)}),
			entry(turn, transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: fmt.Sprintf("a%d", i)}),
			entry(turn, transcript.TypeTurnEnd, transcript.StatusOK, nil))
	}
	got := Build(entries, Options{})
	if len(got) != DefaultMaxMessages || got[0].Content != "q50" || got[len(got)-1].Content != "a149" {
		t.Errorf("default cap: %d messages from %q to %q, want 200 from q50 to a149", len(got), got[0].Content, got[len(got)-1].Content)
	}
	for _, capN := range []int{NoLimit, -7} {
		if got := Build(entries, Options{MaxMessages: capN}); len(got) != 300 {
			t.Errorf("MaxMessages %d: %d messages, want all 300", capN, len(got))
		}
	}
	if got := Build(entries, Options{MaxMessages: 199}); len(got) != 198 || got[0].Content != "q51" {
		t.Errorf("cap 199: %d messages from %q, want 198 from q51", len(got), got[0].Content)
	}
	for _, opt := range []Options{{}, {MaxMessages: 1}, {MaxMessages: NoLimit, Budget: 50}} {
		if err := checkInvariants(entries, opt, Build(entries, opt)); err != nil {
			t.Errorf("%+v: %v", opt, err)
		}
	}
}

func TestPendingApprovals(t *testing.T) {
	tests := []struct {
		transcript string
		want       []string // approval ids
	}{
		{"approval_waiting", []string{"a1"}},
		{"approval_resolved", nil},
		{"approval_older", []string{"a1"}},
		{"interleaved", nil},
		{"plain", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range PendingApprovals(readTranscript(t, tt.transcript)) {
			got = append(got, r.ApprovalID)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: pending %v, want %v", tt.transcript, got, tt.want)
		}
	}
	reqs := PendingApprovals(readTranscript(t, "approval_waiting"))
	if r := reqs[0]; r.CallID != "c1" || r.Tool != "refund_order" || string(r.Arguments) != `{"order":1042}` {
		t.Errorf("request %+v", r)
	}

	// A request without an approvalId matches nothing and is not listed; a
	// decision names its request by approvalId alone.
	entries := []transcript.Entry{
		entry("T1", transcript.TypeApprovalRequest, "", map[string]any{"callId": "c0"}),
		entry("T1", transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "x", CallID: "c1"}),
		entry("T1", transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "y", CallID: "c2"}),
		entry("T1", transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "x", CallID: "c2", Decision: transcript.VerdictAllow}),
	}
	if got := PendingApprovals(entries); len(got) != 1 || got[0].ApprovalID != "y" {
		t.Errorf("pending %+v, want only y", got)
	}
}

// TestWaitingOnlyWhileOpen: a request left undecided in a turn that ended
// does not hold that turn in the window.
func TestWaitingOnlyWhileOpen(t *testing.T) {
	entries := readTranscript(t, "approval_older")
	// End T02 as cancelled: it is then left out, approval or not.
	var withEnd []transcript.Entry
	for _, e := range entries {
		withEnd = append(withEnd, e)
		if e.Type == transcript.TypeApprovalRequest {
			withEnd = append(withEnd, entry(e.TurnID, transcript.TypeTurnEnd, transcript.StatusCancelled, nil))
		}
	}
	for _, m := range Build(withEnd, Options{}) {
		if m.Content == "Refund order 1042." {
			t.Fatalf("a cancelled turn is sent because of its undecided approval")
		}
	}
	if len(PendingApprovals(withEnd)) != 1 {
		t.Errorf("PendingApprovals lists undecided requests whatever their turn became")
	}
}

func TestBadStatusAndData(t *testing.T) {
	entries := []transcript.Entry{
		entry("T1", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "kept"}),
		entry("T1", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: "yes"}),
		entry("T1", transcript.TypeTurnEnd, transcript.StatusOK, nil),
		entry("T2", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "status unknown"}),
		entry("T2", transcript.TypeTurnEnd, "great", nil),
		entry("T3", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "no status"}),
		entry("T3", transcript.TypeTurnEnd, "", nil),
		{ID: "x1", Type: transcript.TypeUserMessage, TurnID: "T4", Data: json.RawMessage(`{"text":42}`)},
		{ID: "x2", Type: transcript.TypeAssistantMessage, TurnID: "T4", Data: json.RawMessage(`not json`)},
		{ID: "x3", Type: transcript.TypeAssistantMessage, TurnID: "T4", Data: json.RawMessage(`{"text":"ok","toolCalls":"nope"}`)},
	}
	got := Build(entries, Options{})
	want := []model.Message{
		{Role: model.RoleUser, Content: "kept"},
		{Role: model.RoleAssistant, Content: "yes"},
		{Role: model.RoleUser},
		{Role: model.RoleAssistant},
		{Role: model.RoleAssistant, Content: "ok"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// entry makes an entry for tests that build transcripts in code.
func entry(turn string, typ transcript.Type, status transcript.Status, data any) transcript.Entry {
	raw, err := json.Marshal(data)
	if err != nil || data == nil {
		raw = json.RawMessage(`{}`)
	}
	return transcript.Entry{ID: turn + string(typ), TurnID: turn, Type: typ, Status: status, Data: raw}
}

// A session recorded with calls that have no id (an OpenAI-compatible
// server that streamed none, before the openai package named such calls)
// is sent with an id for each, the same at every request, and each
// result answers its call in order: providers refuse a call or a tool
// message without an id, and every later request of the session failed.
// A call that has an id keeps it.
func TestCallsWithoutIDs(t *testing.T) {
	entries := []transcript.Entry{
		entry("T1", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "weather and time in Oslo?"}),
		entry("T1", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
			{Name: "weather", Arguments: json.RawMessage(`{}`)},
			{ID: "c2", Name: "news", Arguments: json.RawMessage(`{}`)},
			{Name: "local_time", Arguments: json.RawMessage(`{}`)},
		}}),
		entry("T1", transcript.TypeToolResult, "", transcript.ToolResult{Tool: "weather", Result: "rain"}),
		{ID: "r2", TurnID: "T1", Type: transcript.TypeToolResult, Data: json.RawMessage(`{"callId":"c2","tool":"news","result":"none"}`)},
		{ID: "r3", TurnID: "T1", Type: transcript.TypeToolResult, Data: json.RawMessage(`{"tool":"local_time","result":"noon"}`)},
		entry("T1", transcript.TypeTurnEnd, transcript.StatusOK, nil),
		entry("T2", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "thanks"}),
	}
	id := func(n int) string { return namedCallID("T1"+string(transcript.TypeAssistantMessage), n) } // entry's id
	want := []model.Message{
		{Role: model.RoleUser, Content: "weather and time in Oslo?"},
		{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{
			{ID: id(0), Name: "weather", Arguments: json.RawMessage(`{}`)},
			{ID: "c2", Name: "news", Arguments: json.RawMessage(`{}`)},
			{ID: id(2), Name: "local_time", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: model.RoleTool, Content: "rain", ToolCallID: id(0)},
		{Role: model.RoleTool, Content: "none", ToolCallID: "c2"},
		{Role: model.RoleTool, Content: "noon", ToolCallID: id(2)},
		{Role: model.RoleUser, Content: "thanks"},
	}
	if got := Build(entries, Options{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Build\n got %+v\nwant %+v", got, want)
	}
	// Incrementally, rendering the turn twice from the parts it keeps:
	// the ids given are not written into them.
	b := NewBuilder(Options{})
	for _, e := range entries[:len(entries)-1] {
		b.Add(e)
	}
	if got := b.Messages(); !reflect.DeepEqual(got, want[:len(want)-1]) {
		t.Fatalf("Builder before the last entry\n got %+v\nwant %+v", got, want[:len(want)-1])
	}
	b.Add(entries[len(entries)-1])
	if got := b.Messages(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Builder\n got %+v\nwant %+v", got, want)
	}
}

// A call without an id that waited on an approval has its result
// recorded after those of the message's other calls, which ran at once:
// results without a callId answer the calls of their tool, in order, so
// that each call without an id gets its own tool's result, not the one
// recorded first.
func TestCallsWithoutIDsApproved(t *testing.T) {
	// As the agent records them: the call that needs no approval runs
	// while the other waits on its request.
	values := []any{
		transcript.UserMessage{Text: "save milk, and the time?"},
		transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
			{Name: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
			{Name: "local_time", Arguments: json.RawMessage(`{}`)},
		}},
		transcript.ApprovalRequest{ApprovalID: "a1", Tool: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
		transcript.ToolResult{Tool: "local_time", Result: "noon"},
		transcript.ApprovalDecision{ApprovalID: "a1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce},
		transcript.ToolResult{Tool: "save", Result: "saved milk"},
		nil,
		transcript.UserMessage{Text: "thanks"},
	}
	types := []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeApprovalRequest,
		transcript.TypeToolResult, transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeTurnEnd, transcript.TypeUserMessage}
	entries := twoTurns(values, types)
	id := func(n int) string { return namedCallID("T1"+string(transcript.TypeAssistantMessage), n) } // entry's id
	want := []model.Message{
		{Role: model.RoleUser, Content: "save milk, and the time?"},
		{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{
			{ID: id(0), Name: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
			{ID: id(1), Name: "local_time", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: model.RoleTool, Content: "saved milk", ToolCallID: id(0)},
		{Role: model.RoleTool, Content: "noon", ToolCallID: id(1)},
		{Role: model.RoleUser, Content: "thanks"},
	}
	sameEveryWay(t, entries, values, want)
}

// twoTurns makes the entries of values, of types: turn T1 but for the
// last, a turn T2, each entry after the first two with id "e" and its
// place, and the turn end's status ok.
func twoTurns(values []any, types []transcript.Type) []transcript.Entry {
	var entries []transcript.Entry
	for i, v := range values {
		turn, status := "T1", transcript.Status("")
		if i == len(values)-1 {
			turn = "T2"
		}
		if types[i] == transcript.TypeTurnEnd {
			status = transcript.StatusOK
		}
		e := entry(turn, types[i], status, v)
		if i > 1 {
			e.ID = fmt.Sprint("e", i)
		}
		entries = append(entries, e)
	}
	return entries
}

// sameEveryWay checks that Build, a Builder, and a Builder given the
// decoded values all make want of entries.
func sameEveryWay(t *testing.T, entries []transcript.Entry, values []any, want []model.Message) {
	t.Helper()
	if got := Build(entries, Options{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Build\n got %+v\nwant %+v", got, want)
	}
	b, decoded := NewBuilder(Options{}), NewBuilder(Options{})
	for i, e := range entries {
		b.Add(e)
		decoded.AddDecoded(e, values[i])
	}
	if got := b.Messages(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Builder\n got %+v\nwant %+v", got, want)
	}
	if got := decoded.Messages(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Builder given the decoded data\n got %+v\nwant %+v", got, want)
	}
}

// namedCallID is the id the history gives the n-th call of assistant
// message entry id when it was recorded without one (the package doc).
func namedCallID(id string, n int) string {
	sum := sha256.Sum256(fmt.Append(nil, id, "\x00", n))
	return fmt.Sprintf("call_%x", sum[:8])
}

// Two calls without an id of one tool both wait on an approval, and the
// user decides the second first: deny it, then allow the first. The
// agent records each decision followed by its call's result (the denial's
// or the run's), so the results are not in the order of the calls: each
// answers the call its approval request was for (the requests are made
// in the order of the calls), not the first call of its tool without a
// result. The model was told that the call it ran was denied, and the
// denied one's result was the other call's.
func TestCallsWithoutIDsDecidedOutOfOrder(t *testing.T) {
	values := []any{
		transcript.UserMessage{Text: "save milk and eggs"},
		transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
			{Name: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
			{Name: "save", Arguments: json.RawMessage(`{"Text":"eggs"}`)},
		}},
		transcript.ApprovalRequest{ApprovalID: "a1", Tool: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
		transcript.ApprovalRequest{ApprovalID: "a2", Tool: "save", Arguments: json.RawMessage(`{"Text":"eggs"}`)},
		transcript.ApprovalDecision{ApprovalID: "a2", Decision: transcript.VerdictDeny, Scope: transcript.ApprovalScopeOnce, Reason: "no eggs"},
		transcript.ToolResult{Tool: "save", Result: "the user denied this call: no eggs", IsError: true},
		transcript.ApprovalDecision{ApprovalID: "a1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce},
		transcript.ToolResult{Tool: "save", Result: "saved milk"},
		nil,
		transcript.UserMessage{Text: "thanks"},
	}
	types := []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage,
		transcript.TypeApprovalRequest, transcript.TypeApprovalRequest,
		transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeApprovalDecision, transcript.TypeToolResult,
		transcript.TypeTurnEnd, transcript.TypeUserMessage}
	entries := twoTurns(values, types)
	id := func(n int) string { return namedCallID("T1"+string(transcript.TypeAssistantMessage), n) } // entry's id
	want := []model.Message{
		{Role: model.RoleUser, Content: "save milk and eggs"},
		{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{
			{ID: id(0), Name: "save", Arguments: json.RawMessage(`{"Text":"milk"}`)},
			{ID: id(1), Name: "save", Arguments: json.RawMessage(`{"Text":"eggs"}`)},
		}},
		{Role: model.RoleTool, Content: "saved milk", ToolCallID: id(0)},
		{Role: model.RoleTool, Content: "error: the user denied this call: no eggs", ToolCallID: id(1)},
		{Role: model.RoleUser, Content: "thanks"},
	}
	sameEveryWay(t, entries, values, want)
	// Decided, its result not yet recorded (the process stopped): the
	// denial answers the call it was for, and the other still waits.
	b := NewBuilder(Options{})
	for _, e := range entries[:5] {
		b.Add(e)
	}
	wantOpen := []model.Message{want[0], want[1], {Role: model.RoleTool, Content: "error: the user denied this call: no eggs", ToolCallID: id(1)}}
	if got := b.Messages(); !reflect.DeepEqual(got, wantOpen) {
		t.Fatalf("Builder, decided without a result\n got %+v\nwant %+v", got, wantOpen)
	}
}

// TestCallCutByACrashWhileAnotherWaited: a step calls two tools, the first
// waits on a person and the process dies while the second runs, so the
// second has no result. After a restart the person allows the first, it
// runs, and the turn goes on: the request it makes must answer the cut
// call too (providers refuse a call without its result), while the
// calls that still wait or run, before the decision, stay unanswered.
func TestCallCutByACrashWhileAnotherWaited(t *testing.T) {
	call := func(id string) transcript.ToolCall {
		return transcript.ToolCall{ID: id, Name: "f", Arguments: json.RawMessage(`{}`)}
	}
	entries := []transcript.Entry{
		entry("T1", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "q"}),
		entry("T1", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{call("c1"), call("c2")}}),
		entry("T1", transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "a1", CallID: "c1", Tool: "f"}),
		// The process dies while c2 runs.
	}
	before := Build(entries, Options{})
	if len(before) != 2 {
		t.Fatalf("while c1 waits and c2 may run, the calls were answered:\n%s", dumpMessages(before))
	}
	entries = append(entries,
		entry("T1", transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "a1", CallID: "c1", Decision: transcript.VerdictAllow}),
	)
	if running := Build(entries, Options{}); len(running) != 3 || running[2].ToolCallID != "c2" {
		t.Fatalf("while the allowed c1 runs, want c2 answered and c1 not:\n%s", dumpMessages(running))
	}
	entries = append(entries,
		entry("T1", transcript.TypeToolResult, "", transcript.ToolResult{CallID: "c1", Tool: "f", Result: "done"}),
	)
	got := Build(entries, Options{})
	want := []model.Message{
		{Role: model.RoleUser, Content: "q"},
		{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{call("c1"), call("c2")}},
		{Role: model.RoleTool, Content: "done", ToolCallID: "c1"},
		{Role: model.RoleTool, Content: "error: no result was recorded for this call", ToolCallID: "c2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the turn goes on with the cut call unanswered:\n%s", dumpMessages(got))
	}
	if err := checkIncremental(entries, nil, Options{}, false, nil); err != nil {
		t.Fatal(err)
	}
}

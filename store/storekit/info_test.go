package storekit_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestInfo(t *testing.T) {
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if info := storekit.Info(key, nil); info != (store.SessionInfo{}) {
		t.Errorf("Info of no entries = %+v, want the zero info", info)
	}
	var es []transcript.Entry
	add := func(d time.Duration, typ transcript.Type, data any) {
		es = append(es, storetest.NewEntry("", at.Add(d), typ, data))
	}
	add(0, transcript.TypeApprovalDecision, transcript.ApprovalDecision{Decision: transcript.VerdictAllow}) // a decision without a request
	add(time.Second, transcript.TypeUserMessage, json.RawMessage(`{"text":5}`))                             // undecodable: no title
	add(2*time.Second, transcript.TypeUserMessage, transcript.UserMessage{Text: "  first\nquestion "})
	add(time.Hour, transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "answer"})
	add(time.Minute, transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "x"}) // clock went back
	add(2*time.Minute, transcript.TypeToolResult, transcript.ToolResult{CallID: "c"})
	add(3*time.Minute, transcript.TypeUserMessage, transcript.UserMessage{Text: "second"})
	add(4*time.Minute, "x.unknown", nil)
	got := storekit.Info(key, es)
	want := store.SessionInfo{
		ID: "s", Agent: "a", Owner: "o",
		Started:          at,
		LastActivity:     at.Add(time.Hour),
		Title:            "first question",
		MessageCount:     5,
		PendingApprovals: 1, // the early decision lowered nothing below zero
		Entries:          8,
	}
	if got != want {
		t.Errorf("Info =\n %+v\nwant\n %+v", got, want)
	}
}

func TestApplyAgreesWithInfo(t *testing.T) {
	types := []transcript.Type{
		transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeApprovalRequest,
		transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeGovernanceNotice,
		transcript.TypeSessionMode, transcript.TypeTurnEnd, "x.other",
	}
	rng := rand.New(rand.NewPCG(7, 8))
	key := store.Key{Agent: "a", ID: "s"}
	for run := range 200 {
		var (
			es   []transcript.Entry
			info store.SessionInfo
		)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for range rng.IntN(30) {
			at = at.Add(time.Duration(rng.IntN(2000)-500) * time.Millisecond)
			typ := types[rng.IntN(len(types))]
			var data any
			if typ == transcript.TypeUserMessage && rng.IntN(3) > 0 {
				data = transcript.UserMessage{Text: strings.Repeat("word ", rng.IntN(30))}
			}
			e := storetest.NewEntry("", at, typ, data)
			es = append(es, e)
			info.Apply(key, e)
			if ref := storekit.Info(key, es); info != ref {
				t.Fatalf("run %d, after %d entries: Apply kept %+v, Info gives %+v", run, len(es), info, ref)
			}
		}
	}
}

func TestCheckAppend(t *testing.T) {
	key := store.Key{Agent: "a", ID: "s"}
	at := time.Now()
	good := storetest.NewEntry("head", at, transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})
	tests := []struct {
		name string
		head string
		edit func(*transcript.Entry)
		want error
	}{
		{"valid child of the head", "head", nil, nil},
		{"valid first entry", "", func(e *transcript.Entry) { e.ParentID = "" }, nil},
		{"unknown type", "head", func(e *transcript.Entry) { e.Type = "x.y" }, nil},
		{"no data", "head", func(e *transcript.Entry) { e.Data = nil }, nil},
		{"stale parent", "newer", nil, store.ErrConflict},
		{"parent on a new session", "", nil, store.ErrConflict},
		{"no parent on an existing session", "head", func(e *transcript.Entry) { e.ParentID = "" }, store.ErrConflict},
		{"no id", "head", func(e *transcript.Entry) { e.ID = "" }, store.ErrInvalidEntry},
		{"no type", "head", func(e *transcript.Entry) { e.Type = "" }, store.ErrInvalidEntry},
		{"zero timestamp", "head", func(e *transcript.Entry) { e.Timestamp = time.Time{} }, store.ErrInvalidEntry},
		{"data an array", "head", func(e *transcript.Entry) { e.Data = json.RawMessage(`[]`) }, store.ErrInvalidEntry},
		{"data not JSON", "head", func(e *transcript.Entry) { e.Data = json.RawMessage(`{`) }, store.ErrInvalidEntry},
		{"invalid entry with a wrong parent too", "other", func(e *transcript.Entry) { e.ID = "" }, store.ErrInvalidEntry},
	}
	for _, tt := range tests {
		e := good
		if tt.edit != nil {
			tt.edit(&e)
		}
		err := storekit.CheckAppend(key, tt.head, e)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: CheckAppend = %v, want nil", tt.name, err)
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("%s: CheckAppend = %v, want %v", tt.name, err, tt.want)
		case err != nil && !strings.Contains(err.Error(), key.String()):
			t.Errorf("%s: error %q does not name the session", tt.name, err)
		}
	}
}

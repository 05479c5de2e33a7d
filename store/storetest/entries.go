package storetest

import (
	"fmt"
	"time"

	"github.com/spool-go/spool/transcript"
)

// NewEntry returns a valid entry of type typ for a test: a fresh ULID id,
// parent as its ParentID (empty for a session's first entry), at (in UTC, to
// the millisecond) as its Timestamp, a fresh turn id, and data marshaled
// from data (a data struct of package transcript, a map, json.RawMessage, or
// nil for {}). A TypeTurnEnd entry gets StatusOK. It panics when data does
// not marshal to a JSON object: that is a mistake in the test, not in the
// store.
func NewEntry(parent string, at time.Time, typ transcript.Type, data any) transcript.Entry {
	e, err := transcript.New(at, typ, transcript.NewID(at), data)
	if err != nil {
		panic(fmt.Sprintf("storetest.NewEntry: %v", err))
	}
	e.ParentID = parent
	if typ == transcript.TypeTurnEnd {
		e.Status = transcript.StatusOK
	}
	return e
}

// Chain returns n entries that continue a session whose last entry id is
// parent (empty for a new session), each the child of the one before:
// turns of a user message ("message 1", …), an assistant message ("answer
// 1", …) and an ok turn end, sharing a turn id. The first entry is at start
// and each next one a millisecond later. Append them in order.
func Chain(parent string, start time.Time, n int) []transcript.Entry {
	entries := make([]transcript.Entry, 0, n)
	turn := ""
	for i := range n {
		at := start.Add(time.Duration(i) * time.Millisecond)
		var e transcript.Entry
		switch step := i/3 + 1; i % 3 {
		case 0:
			e = NewEntry(parent, at, transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprintf("message %d", step)})
			turn = e.TurnID
		case 1:
			e = NewEntry(parent, at, transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: fmt.Sprintf("answer %d", step)})
		default:
			e = NewEntry(parent, at, transcript.TypeTurnEnd, transcript.TurnEnd{Usage: transcript.Usage{InputTokens: 10, OutputTokens: 5}})
		}
		e.TurnID = turn
		entries = append(entries, e)
		parent = e.ID
	}
	return entries
}

// Head returns the id of the last of entries, the ParentID the next entry
// of that session needs; empty when there are none.
func Head(entries []transcript.Entry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].ID
}

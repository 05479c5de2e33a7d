package benchdata

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// FillTurns appends n finished turns to session k directly, as a long
// history would leave them, an hour old.
func FillTurns(tb testing.TB, st store.Store, k store.Key, n int) {
	head := ""
	now := time.Now().Add(-time.Hour)
	for i := range n {
		head = AppendTurn(tb, st, k, head, transcript.NewID(now), now,
			fmt.Sprintf("question number %d about an order", i), fmt.Sprintf("answer number %d: it ships on Friday", i))
	}
}

// AppendTurn appends a finished turn (a question, its answer and the
// turn's end) of turn id turn to session k directly, as another writer
// would, after the entry head, and returns the id of its last entry.
func AppendTurn(tb testing.TB, st store.Store, k store.Key, head, turn string, at time.Time, question, answer string) string {
	tb.Helper()
	for _, step := range []struct {
		typ    transcript.Type
		status transcript.Status
		data   any
	}{
		{transcript.TypeUserMessage, "", transcript.UserMessage{Text: question}},
		{transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: answer, Model: "echo"}},
		{transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{Usage: transcript.Usage{InputTokens: 10, OutputTokens: 10}}},
	} {
		e, err := transcript.New(at, step.typ, turn, step.data)
		if err != nil {
			tb.Fatal(err)
		}
		e.ParentID, e.Status = head, step.status
		if err := st.Append(tb.Context(), k, e); err != nil {
			tb.Fatal(err)
		}
		head = e.ID
	}
	return head
}

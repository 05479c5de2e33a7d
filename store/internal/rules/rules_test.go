package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/transcript"
)

type hit struct {
	id string
	at time.Time
	n  int
}

func hitOrder(a, b hit) int { return NewestFirst(a.at, a.id, b.at, b.id) }

// TestTopKeepsTheFirstInOrder checks the bounded heap against sorting
// everything, over many random sets.
func TestTopKeepsTheFirstInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 200 {
		n, limit := rng.IntN(60), 1+rng.IntN(12)
		var all []hit
		top := NewTop(limit, hitOrder)
		for i := range n {
			h := hit{id: fmt.Sprintf("e%03d", rng.IntN(40)), at: base.Add(time.Duration(rng.IntN(10)) * time.Second), n: i}
			all = append(all, h)
			top.Add(h)
		}
		slices.SortFunc(all, hitOrder)
		want := all[:min(limit, len(all))]
		got := top.Sorted()
		if len(got) != len(want) {
			t.Fatalf("round %d: %d hits, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i].at != want[i].at || got[i].id != want[i].id {
				t.Fatalf("round %d: hit %d is %+v, want %+v", round, i, got[i], want[i])
			}
		}
	}
}

// TestHasText: EntryText finds text only in entries of the types HasText
// names, whatever data the others carry; a store that indexes by type
// alone (storekit.SearchableType) misses nothing.
func TestHasText(t *testing.T) {
	for _, typ := range []transcript.Type{
		transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeApprovalRequest,
		transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeGovernanceNotice,
		transcript.TypeSessionMode, transcript.TypeTurnEnd, transcript.TypeBranch, transcript.TypeFork,
		transcript.TypeCompaction, transcript.TypeSessionTitle, "some.future_type",
	} {
		e := transcript.Entry{Type: typ, Data: json.RawMessage(`{"text":"where is my order","message":"x","summary":"y","title":"z"}`)}
		if _, ok := EntryText(e); ok != HasText(typ) {
			t.Errorf("%s: EntryText finds text %v, HasText says %v", typ, ok, HasText(typ))
		}
	}
}

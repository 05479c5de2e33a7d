package redisstore_test

import (
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestCompactionsOfAnOlderHash removes the compactions field from a
// session hash, as one written before the field has it, and checks that
// Stat reads it as 0 and that the next append counts the list's
// compactions, and not a message that only names the type.
func TestCompactionsOfAnOlderHash(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	key := store.Key{Agent: "agent", ID: "older"}
	at := time.Now().UTC().Add(-time.Hour)
	var entries []transcript.Entry
	add := func(typ transcript.Type, data any) {
		t.Helper()
		e := storetest.NewEntry(storetest.Head(entries), at.Add(time.Duration(len(entries))*time.Second), typ, data)
		if err := s.Append(ctx, key, e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	compaction := transcript.Compaction{Summary: "so far", FirstTurn: "t", LastTurn: "t", Turns: 1}
	add(transcript.TypeUserMessage, transcript.UserMessage{Text: "what is " + string(transcript.TypeCompaction) + "?"})
	add(transcript.TypeCompaction, compaction)
	add(transcript.TypeCompaction, compaction)
	_, infoKey, _ := keyNames(s, key)
	if err := s.Client().HDel(ctx, infoKey, "compactions").Err(); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(ctx, key); err != nil || info.Compactions != 0 {
		t.Fatalf("Stat of a hash without the field: %d compactions, %v; want 0", info.Compactions, err)
	}
	add(transcript.TypeCompaction, compaction)
	info, err := s.Stat(ctx, key)
	if err != nil || info.Compactions != 3 {
		t.Fatalf("after the next append: %d compactions, %v; want 3", info.Compactions, err)
	}
}

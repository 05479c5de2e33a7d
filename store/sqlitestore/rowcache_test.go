package sqlitestore

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestRowCacheStale: a Store appends from the session row it cached only
// while the stored row is still that one. Here another Store on the file
// deletes the session and starts it again (under the same sid, the
// highest), so the first Store's cached head is no longer the session's:
// an append after it is a conflict, not an entry after the new one's
// first; and an append after the real head lands, with the counts right.
func TestRowCacheStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	a, b := openAt(t, path), openAt(t, path)
	key := store.Key{Agent: "a", ID: "s"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	old := storetest.Chain("", at, 2)
	appendAll(t, a, key, old...)
	sid := rawCount(t, a, `SELECT sid FROM sessions`)

	if err := b.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	fresh := storetest.Chain("", at.Add(time.Hour), 1)
	appendAll(t, b, key, fresh...)
	if got := rawCount(t, b, `SELECT sid FROM sessions`); got != sid {
		t.Fatalf("the new session has sid %d, not the old one's %d: the test needs it reused", got, sid)
	}

	stale := storetest.NewEntry(storetest.Head(old), at.Add(2*time.Hour), transcript.TypeUserMessage, transcript.UserMessage{Text: "after the old head"})
	if err := a.Append(t.Context(), key, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Append after the cached, deleted head: %v; want store.ErrConflict", err)
	}
	next := storetest.NewEntry(storetest.Head(fresh), at.Add(2*time.Hour), transcript.TypeUserMessage, transcript.UserMessage{Text: "after the new head"})
	appendAll(t, a, key, next)
	got, err := a.Read(t.Context(), key)
	if err != nil || !sameEntries(got, append(fresh, next)) {
		t.Fatalf("Read: %d entries, %v; want the new session's 2", len(got), err)
	}
	info, err := a.Stat(t.Context(), key)
	if err != nil || info.Entries != 2 || info.MessageCount != 2 || !info.Started.Equal(fresh[0].Timestamp) {
		t.Fatalf("Stat: %+v, %v; want 2 entries, 2 messages, started with the new session", info, err)
	}

	// Rows written by the other Store since: the cache is refreshed, not trusted.
	more := storetest.NewEntry(next.ID, at.Add(3*time.Hour), transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "from b"})
	appendAll(t, b, key, more)
	last := storetest.NewEntry(more.ID, at.Add(4*time.Hour), transcript.TypeUserMessage, transcript.UserMessage{Text: "from a"})
	appendAll(t, a, key, last)
	if info, err := b.Stat(t.Context(), key); err != nil || info.Entries != 4 || info.MessageCount != 4 {
		t.Fatalf("Stat after both: %+v, %v; want 4 entries", info, err)
	}
}

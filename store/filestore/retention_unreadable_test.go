package filestore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestRetentionSparesUnreadable: retention never deletes a session it
// cannot read (every line corrupt, or sealed with a key the Store lacks, as
// in a store encrypted before markers existed): its age is unknown, and a
// read reports it as corrupt rather than it vanishing.
func TestRetentionSparesUnreadable(t *testing.T) {
	root := t.TempDir()
	sealed, _ := sealedSession(t, root)
	os.Remove(filepath.Join(root, markerName))
	corrupt := filepath.Join(root, "a", "users", "u", "garbage.jsonl")
	writeRaw(t, corrupt, []byte("not json\nnor this\n"), os.O_TRUNC)

	s := open(t, root, WithRetention(store.Retention{MaxSessions: 1, MaxAge: time.Hour}))
	seed(t, s, store.Key{Agent: "a", Owner: "u", ID: "plain"}, "", time.Now(), 1)
	if _, err := s.Prune(t.Context(), sealed.Namespace(), store.Retention{MaxSessions: 1, MaxAge: time.Hour}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "a", "users", "u", "s.jsonl"), corrupt} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("retention deleted an unreadable session: %v", err)
		}
	}
}

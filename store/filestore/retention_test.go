package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

func ids(infos []store.SessionInfo) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.ID)
	}
	slices.Sort(out)
	return out
}

func TestRetentionNewest(t *testing.T) {
	root := t.TempDir()
	now := t0.Add(time.Hour)
	s := open(t, root, WithRetention(store.Retention{MaxSessions: 3}), WithClock(func() time.Time { return now }))
	ns := store.Namespace{Agent: "a", Owner: "u"}
	other := store.Namespace{Agent: "a"} // another namespace: its own count
	for i := range 6 {
		seed(t, s, ns.Key(fmt.Sprintf("s%d", i)), "", t0.Add(time.Duration(i)*time.Minute), 2)
		seed(t, s, other.Key(fmt.Sprintf("p%d", i)), "", t0.Add(time.Duration(i)*time.Minute), 1)
	}
	if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"s3", "s4", "s5"}) {
		t.Fatalf("kept %v, want the newest three", got)
	}
	if got := ids(listAll(t, s, other)); !slices.Equal(got, []string{"p3", "p4", "p5"}) {
		t.Fatalf("project scope kept %v", got)
	}
	// Appending to an existing session is not a creation.
	seed(t, s, ns.Key("s3"), storetest.Head(read(t, s, ns.Key("s3"))), t0.Add(time.Hour), 1)
	if got := ids(listAll(t, s, ns)); len(got) != 3 {
		t.Fatalf("append pruned: %v", got)
	}
	// Deleted means gone from disk.
	if _, err := os.Stat(filepath.Join(root, "a", "users", "u", "s0.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("pruned transcript still there: %v", err)
	}
	if read(t, s, ns.Key("s0")) != nil {
		t.Fatal("pruned session reads entries")
	}
}

func TestRetentionAge(t *testing.T) {
	now := t0.Add(100 * 24 * time.Hour)
	s := open(t, t.TempDir(), WithRetention(store.Retention{MaxAge: 90 * 24 * time.Hour}), WithClock(func() time.Time { return now }))
	ns := store.Namespace{Agent: "a"}
	seed(t, s, ns.Key("old"), "", t0, 1)                         // idle 100 days
	seed(t, s, ns.Key("recent"), "", t0.Add(20*24*time.Hour), 1) // idle 80 days
	// A session created with an old timestamp (an import) is not pruned by
	// its own creation.
	seed(t, s, ns.Key("imported"), "", t0.Add(-time.Hour), 1)
	if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"imported", "recent"}) {
		t.Fatalf("kept %v", got)
	}
}

func TestRetentionDefaultAndNone(t *testing.T) {
	now := t0.Add(time.Hour)
	def, err := New(t.Context(), t.TempDir(), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	none := open(t, t.TempDir(), WithClock(func() time.Time { return now }))
	ns := store.Namespace{Agent: "a"}
	for i := range 55 {
		for _, s := range []*Store{def, none} {
			seed(t, s, ns.Key(fmt.Sprintf("s%02d", i)), "", t0.Add(time.Duration(i)*time.Second), 1)
		}
	}
	if n := len(listAll(t, def, ns)); n != 50 {
		t.Fatalf("default retention kept %d, want 50", n)
	}
	if n := len(listAll(t, none, ns)); n != 55 {
		t.Fatalf("no retention kept %d, want 55", n)
	}
}

func TestPrune(t *testing.T) {
	s := open(t, t.TempDir())
	ns := store.Namespace{Agent: "a"}
	for i := range 10 {
		seed(t, s, ns.Key(fmt.Sprintf("s%d", i)), "", t0.Add(time.Duration(i)*24*time.Hour), 1)
	}
	n, err := s.Prune(t.Context(), ns, store.Retention{MaxSessions: 6, MaxAge: 5 * 24 * time.Hour}, t0.Add(10*24*time.Hour))
	if err != nil || n != 5 {
		t.Fatalf("Prune: %d %v, want 5", n, err)
	}
	if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"s5", "s6", "s7", "s8", "s9"}) {
		t.Fatalf("kept %v", got)
	}
}

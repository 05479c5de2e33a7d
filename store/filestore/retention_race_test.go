package filestore

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// setRetentionHook runs f each time retention or Prune has chosen its
// victims, until the test ends. Tests using it must not run in parallel.
func setRetentionHook(t *testing.T, f func(victims []rec)) {
	t.Helper()
	retentionHook = f
	t.Cleanup(func() { retentionHook = nil })
}

func victimIDs(victims []rec) []string {
	var out []string
	for _, v := range victims {
		out = append(out, v.info.ID)
	}
	return out
}

// appendBetween appends an entry to A, through w, the first time the hook
// sees A chosen, and returns the entries it appended (filled in once the
// hook has run).
func appendBetween(t *testing.T, w *Store, key store.Key, parent string, at time.Time) *[]transcript.Entry {
	t.Helper()
	var added []transcript.Entry
	setRetentionHook(t, func(victims []rec) {
		if added != nil {
			return
		}
		if got := victimIDs(victims); !slices.Equal(got, []string{key.ID}) {
			t.Errorf("victims %v, want [%s]", got, key.ID)
			return
		}
		added = seed(t, w, key, parent, at, 1)
	})
	return &added
}

func TestRetentionSparesSessionAppendedAfterDecision(t *testing.T) {
	// Retention chooses A, the oldest, when C is created; an append to A
	// is acknowledged before the deletion; A is now the newest but one and
	// must stay, through one Store or another on the same folder.
	for _, two := range []bool{false, true} {
		t.Run(fmt.Sprintf("twoStores=%v", two), func(t *testing.T) {
			root := t.TempDir()
			now := t0.Add(time.Hour)
			s := open(t, root, WithRetention(store.Retention{MaxSessions: 2}), WithClock(func() time.Time { return now }))
			w := s
			if two {
				w = open(t, root)
			}
			ns := store.Namespace{Agent: "a"}
			a := seed(t, s, ns.Key("A"), "", t0.Add(time.Second), 1)
			seed(t, s, ns.Key("B"), "", t0.Add(2*time.Second), 1)
			added := appendBetween(t, w, ns.Key("A"), a[0].ID, t0.Add(3*time.Second))
			seed(t, s, ns.Key("C"), "", t0.Add(4*time.Second), 1)
			if *added == nil {
				t.Fatal("retention did not choose A")
			}
			sameEntries(t, read(t, s, ns.Key("A")), append(a, *added...))
			// B was not chosen; it goes at the next creation.
			if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"A", "B", "C"}) {
				t.Fatalf("sessions %v, want A B C", got)
			}
			retentionHook = nil
			seed(t, s, ns.Key("D"), "", t0.Add(5*time.Second), 1)
			if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"C", "D"}) {
				t.Fatalf("after the next creation: %v, want C D", got)
			}
		})
	}
}

func TestPruneSparesSessionAppendedAfterDecision(t *testing.T) {
	for _, two := range []bool{false, true} {
		t.Run(fmt.Sprintf("twoStores=%v", two), func(t *testing.T) {
			root := t.TempDir()
			s := open(t, root)
			w := s
			if two {
				w = open(t, root)
			}
			ns := store.Namespace{Agent: "a"}
			a := seed(t, s, ns.Key("A"), "", t0.Add(time.Second), 1)
			seed(t, s, ns.Key("B"), "", t0.Add(2*time.Second), 1)
			seed(t, s, ns.Key("C"), "", t0.Add(4*time.Second), 1)
			added := appendBetween(t, w, ns.Key("A"), a[0].ID, t0.Add(3*time.Second))
			r := store.Retention{MaxSessions: 2}
			n, err := s.Prune(t.Context(), ns, r, t0.Add(time.Hour))
			if err != nil || n != 0 {
				t.Fatalf("Prune: %d, %v; want 0 deleted", n, err)
			}
			sameEntries(t, read(t, s, ns.Key("A")), append(a, *added...))
			retentionHook = nil
			n, err = s.Prune(t.Context(), ns, r, t0.Add(time.Hour))
			if err != nil || n != 1 {
				t.Fatalf("second Prune: %d, %v; want 1 deleted", n, err)
			}
			if got := ids(listAll(t, s, ns)); !slices.Equal(got, []string{"A", "C"}) {
				t.Fatalf("sessions %v, want A C", got)
			}
		})
	}
}

func TestRetentionRacingAppend(t *testing.T) {
	// The race itself, without a hook: an append to the oldest session and
	// the creation of a new one at the same time. Whichever wins, an
	// acknowledged append is never followed by its session's deletion.
	iterations := 60
	if testing.Short() {
		iterations = 10
	}
	for _, mode := range []string{"oneStore", "twoStores", "prune"} {
		t.Run(mode, func(t *testing.T) {
			acked, lost := 0, 0
			for i := range iterations {
				root := t.TempDir()
				now := t0.Add(time.Hour)
				r := store.Retention{MaxSessions: 2}
				if mode == "prune" {
					r = store.Retention{}
				}
				s := open(t, root, WithRetention(r), WithClock(func() time.Time { return now }))
				w := s
				if mode == "twoStores" {
					w = open(t, root)
				}
				ns := store.Namespace{Agent: "a"}
				a := seed(t, s, ns.Key("A"), "", t0.Add(time.Second), 1)
				seed(t, s, ns.Key("B"), "", t0.Add(2*time.Second), 1)
				if mode == "prune" {
					seed(t, s, ns.Key("C"), "", t0.Add(4*time.Second), 1)
				}
				next := storetest.Chain(a[0].ID, t0.Add(3*time.Second), 1)
				var wg sync.WaitGroup
				var appendErr error
				start := make(chan struct{})
				wg.Add(2)
				go func() {
					defer wg.Done()
					<-start
					appendErr = w.Append(t.Context(), ns.Key("A"), next[0])
				}()
				go func() {
					defer wg.Done()
					<-start
					if mode == "prune" {
						if _, err := s.Prune(t.Context(), ns, store.Retention{MaxSessions: 2}, now); err != nil {
							t.Errorf("Prune: %v", err)
						}
						return
					}
					if err := s.Append(t.Context(), ns.Key("C"), storetest.Chain("", t0.Add(4*time.Second), 1)[0]); err != nil {
						t.Errorf("creating C: %v", err)
					}
				}()
				close(start)
				wg.Wait()
				if appendErr != nil {
					if !errors.Is(appendErr, store.ErrConflict) {
						t.Fatalf("iteration %d: append to A: %v", i, appendErr)
					}
					lost++ // A went first; the append found it gone
					continue
				}
				acked++
				if got := read(t, s, ns.Key("A")); len(got) != 2 {
					t.Fatalf("iteration %d: the append to A was acknowledged, then A read %d entries", i, len(got))
				}
			}
			t.Logf("%d appends acknowledged, %d found A deleted", acked, lost)
		})
	}
}

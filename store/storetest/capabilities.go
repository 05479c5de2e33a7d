package storetest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var capabilityChecks = []check{
	{"BatchAppender/AppendsInOrder", testBatchOrder},
	{"BatchAppender/ConflictAppendsNothing", testBatchConflict},
	{"BatchAppender/InvalidAppendsNothing", testBatchInvalid},
	{"BatchAppender/Fallback", testBatchFallback},
	{"BulkAppender", testBulk},
	{"BulkAppender/StoppedBulkResumes", testBulkResume},
	{"RangeReader", testRangeReader},
	{"TailReader", testTailReader},
	{"Stater", testStater},
	{"Pruner", testPruner},
	{"NamespaceLister", testNamespaceLister},
	{"Searcher", testSearcher},
	{"Locker/MutualExclusion", testLockExclusion},
	{"Locker/OtherKeysDoNotBlock", testLockOtherKeys},
	{"Locker/CancelWhileWaiting", testLockCancel},
}

func skipUnless[T any](t *testing.T, s store.Store) T {
	t.Helper()
	c, ok := s.(T)
	if !ok {
		t.Skipf("the store does not implement %s", reflect.TypeFor[T]())
	}
	return c
}

func clamped(all []transcript.Entry, start, end int) []transcript.Entry {
	start = min(max(start, 0), len(all))
	end = min(max(end, start), len(all))
	return all[start:end]
}

func testRangeReader(t *testing.T, s store.Store) {
	rr := skipUnless[store.RangeReader](t, s)
	ns := newNamespace()
	key := ns.Key(name("sess"))
	all := seed(t, s, key, base(), 7)
	for _, k := range []store.Key{key, ns.Key(name("unknown"))} {
		want := all
		if k != key {
			want = nil
		}
		bounds := []int{-2, -1, 0, 1, 2, 3, 5, 6, 7, 8, 9, math.MaxInt}
		for _, start := range bounds {
			for _, end := range bounds {
				got, total, err := rr.ReadRange(t.Context(), k, start, end)
				if err != nil {
					t.Fatalf("ReadRange(%s, %d, %d): %v", k, start, end, err)
				}
				if total != len(want) {
					t.Errorf("ReadRange(%d, %d) of a session of %d entries reports a total of %d", start, end, len(want), total)
				}
				if d := sameEntries(got, clamped(want, start, end)); d != "" {
					t.Errorf("ReadRange(%d, %d) of a session of %d entries must agree with Read, clamped to the transcript: %s", start, end, len(want), d)
				}
			}
		}
	}
}

func testTailReader(t *testing.T, s store.Store) {
	tr := skipUnless[store.TailReader](t, s)
	ns := newNamespace()
	key := ns.Key(name("sess"))
	all := seed(t, s, key, base(), 7)
	for _, k := range []store.Key{key, ns.Key(name("unknown"))} {
		want := all
		if k != key {
			want = nil
		}
		for _, n := range []int{-1, 0, 1, 2, 6, 7, 8, 100, math.MaxInt} {
			got, total, err := tr.ReadTail(t.Context(), k, n)
			if err != nil {
				t.Fatalf("ReadTail(%s, %d): %v", k, n, err)
			}
			if total != len(want) {
				t.Errorf("ReadTail(%d) of a session of %d entries reports a total of %d", n, len(want), total)
			}
			start := len(want)
			if n > 0 && n < len(want) {
				start = len(want) - n
			} else if n >= len(want) {
				start = 0
			}
			if d := sameEntries(got, want[start:]); d != "" {
				t.Errorf("ReadTail(%d) of a session of %d entries must be the newest n entries of Read, in append order (none for n <= 0): %s", n, len(want), d)
			}
		}
	}
}

func testStater(t *testing.T, s store.Store) {
	st := skipUnless[store.Stater](t, s)
	ns := store.Namespace{Agent: name("agent"), Owner: name("owner")}
	key := ns.Key(name("sess"))
	entries := seed(t, s, key, base(), 5)
	info, err := st.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat %s: %v", key, err)
	}
	if d := diffInfo(info, storekit.Info(key, entries)); d != "" {
		t.Errorf("Stat must agree with storekit.Info over the transcript: %s", d)
	}
	for _, k := range []store.Key{ns.Key(name("unknown")), {Agent: ns.Agent, ID: key.ID}, {Agent: ns.Agent, Owner: name("other"), ID: key.ID}} {
		if _, err := st.Stat(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Stat of a session the store does not have (%s) must fail with ErrNotFound (errors.Is); got %v", k, err)
		}
	}
}

// testPruner checks Prune against storekit.Victims for several policies, with
// a now ten days ahead of the sessions so that a store using its own clock
// instead of the now argument deletes the wrong ones.
func testPruner(t *testing.T, s store.Store) {
	p := skipUnless[store.Pruner](t, s)
	start := base()
	now := start.Add(10 * 24 * time.Hour)
	day := 24 * time.Hour
	policies := []store.Retention{
		{MaxSessions: 3},
		{MaxAge: 14*day + day/2},
		{MaxSessions: 6, MaxAge: 12*day + day/2},
		{MaxSessions: 8, MaxAge: 17*day + day/2},
		{MaxSessions: 100},
		{MaxAge: 1000 * day},
		{},
	}
	for _, r := range policies {
		t.Run(fmt.Sprintf("MaxSessions=%d,MaxAge=%v", r.MaxSessions, r.MaxAge), func(t *testing.T) {
			ns := newNamespace()
			neighbour := store.Namespace{Agent: ns.Agent, Owner: name("owner")}
			// Ten sessions, one a day apart, the newest at start.
			for i := range 10 {
				seed(t, s, ns.Key(fmt.Sprintf("s%d", i)), start.Add(-time.Duration(i)*day), 2)
				seed(t, s, neighbour.Key(fmt.Sprintf("s%d", i)), start.Add(-time.Duration(i)*day), 1)
			}
			before := listAll(t, s, ns, 0)
			victims, err := storekit.Victims(t.Context(), s, ns, r, now)
			if err != nil {
				t.Fatalf("storekit.Victims: %v", err)
			}
			deleted, err := p.Prune(t.Context(), ns, r, now)
			if err != nil {
				t.Fatalf("Prune(%+v): %v", r, err)
			}
			if deleted != len(victims) {
				t.Errorf("Prune(%+v) reports %d deleted, want %d (the sessions storekit.Victims names)", r, deleted, len(victims))
			}
			var want []string
			for _, info := range before {
				if _, n := find(victims, info.ID); n == 0 {
					want = append(want, info.ID)
				}
			}
			if got := infoIDs(listAll(t, s, ns, 0)); !slices.Equal(got, want) {
				t.Errorf("after Prune(%+v) as of now = %s, List shows %v, want %v (exactly the sessions storekit.Victims keeps)", r, now.Format(time.DateOnly), got, want)
			}
			for _, v := range victims {
				checkRead(t, s, v.Key(), nil, "a pruned session reads empty")
			}
			if got := listAll(t, s, neighbour, 0); len(got) != 10 {
				t.Errorf("Prune of %s deleted sessions of %s: %d of 10 left", ns, neighbour, len(got))
			}
		})
	}
}

func testNamespaceLister(t *testing.T, s store.Store) {
	sl := skipUnless[store.NamespaceLister](t, s)
	a, b := name("agent"), name("agent")
	want := []store.Namespace{{Agent: a}, {Agent: a, Owner: name("owner")}, {Agent: b, Owner: name("owner")}}
	for _, ns := range want {
		seed(t, s, ns.Key(name("sess")), base(), 1)
		seed(t, s, ns.Key(name("sess")), base(), 1)
	}
	namespaces, err := sl.Namespaces(t.Context())
	if err != nil {
		t.Fatalf("Namespaces: %v", err)
	}
	for _, w := range want {
		if n := countNamespace(namespaces, w); n != 1 {
			t.Errorf("Namespaces lists %s %d times; every namespace with sessions appears exactly once", w, n)
		}
	}
	if n := countNamespace(namespaces, store.Namespace{Agent: b}); n != 0 {
		t.Errorf("Namespaces lists %s, which has no sessions (only a user scope of that agent has)", store.Namespace{Agent: b})
	}
}

func countNamespace(namespaces []store.Namespace, s store.Namespace) int {
	n := 0
	for _, sc := range namespaces {
		if sc == s {
			n++
		}
	}
	return n
}

package filestore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestUpdateKeepsListingOrder: records whose last activity moves forwards
// or backwards (or ties another's) keep the listing in order, as sorting
// it again would give.
func TestUpdateKeepsListingOrder(t *testing.T) {
	s := open(t, t.TempDir())
	ix := newIndex(s, store.Namespace{Agent: "a"}, t.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	at := func() time.Time { return t0.Add(time.Duration(rng.IntN(50)) * time.Second) }
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i := range 40 {
		ix.putLocked(&rec{info: store.SessionInfo{ID: fmt.Sprint("s", i), LastActivity: at()}})
	}
	ix.listingLocked()
	for n := range 2000 {
		id := fmt.Sprint("s", rng.IntN(40))
		r := *ix.recs[id]
		switch rng.IntN(4) {
		case 0:
			r.info.LastActivity = r.info.LastActivity.Add(time.Duration(rng.IntN(20)) * time.Second)
		case 1:
			r.info.LastActivity = r.info.LastActivity.Add(-time.Duration(rng.IntN(20)) * time.Second)
		case 2:
			r.info.LastActivity = ix.sorted[rng.IntN(len(ix.sorted))].info.LastActivity // a tie
		default:
			r.info.LastActivity = at()
		}
		ix.putCopyLocked(&r)
		if !slices.IsSortedFunc(ix.sorted, cmpRec) || len(ix.sorted) != 40 {
			t.Fatalf("update %d (%s): listing out of order or %d long", n, id, len(ix.sorted))
		}
		for _, x := range ix.sorted {
			if ix.recs[x.info.ID] != x {
				t.Fatalf("update %d: the listing holds a record the index does not", n)
			}
		}
	}
}

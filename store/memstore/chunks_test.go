package memstore

import (
	"fmt"
	"testing"

	"github.com/spool-go/spool/transcript"
)

// TestChunksClones reads every range of transcripts whose lengths cross
// chunk boundaries and holds each to the same range of a plain slice.
func TestChunksClones(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 11, 12, 13, 60, 1021, 2049, 3100} {
		var c chunks
		var want []transcript.Entry
		for i := range n {
			e := transcript.Entry{ID: fmt.Sprint(i), Data: []byte(`{}`)}
			c.add(e)
			want = append(want, e)
		}
		if c.n != n {
			t.Fatalf("n = %d after %d adds", c.n, n)
		}
		if n > 0 && c.last().ID != want[n-1].ID {
			t.Fatalf("last = %s, want %s", c.last().ID, want[n-1].ID)
		}
		for _, r := range [][2]int{{0, n}, {0, 0}, {n, n}, {0, n / 2}, {n / 3, n}, {n / 4, 3 * n / 4}, {max(n-1, 0), n}, {max(n-50, 0), n}} {
			got := c.clones(r[0], r[1])
			if len(got) != r[1]-r[0] {
				t.Fatalf("n=%d clones(%d, %d): %d entries", n, r[0], r[1], len(got))
			}
			for i, e := range got {
				if e.ID != want[r[0]+i].ID {
					t.Fatalf("n=%d clones(%d, %d)[%d] = %s, want %s", n, r[0], r[1], i, e.ID, want[r[0]+i].ID)
				}
				if &e.Data[0] == &want[r[0]+i].Data[0] {
					t.Fatalf("n=%d: a clone shares its data", n)
				}
			}
		}
	}
}

package spool_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
)

func pageAll(t *testing.T, s *spool.Session, limit int, order spool.Order, all bool) []string {
	t.Helper()
	var out []string
	cur := ""
	for {
		p, err := s.Page(t.Context(), spool.PageOptions{Limit: limit, Order: order, Cursor: cur, AllBranches: all})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			out = append(out, fmt.Sprintf("%s/%s/%s/%v/%v", m.ID, m.Role, m.Text, m.Superseded, m.Branch))
		}
		if p.NextCursor == "" {
			break
		}
		cur = p.NextCursor
	}
	if order == spool.OrderDesc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// TestAttackPagesAcrossBranches: after random sends, regenerates, edits
// and switches, every page size and order (and a second agent, with its
// own record of markers) pages exactly the messages of one whole read.
func TestAttackPagesAcrossBranches(t *testing.T) {
	ctx := t.Context()
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		st := memstore.New()
		a := newAgent(t, spool.Config{Store: st})
		s := session(t, a, ctx, "p")
		reader := newAgent(t, spool.Config{Store: st}) // keeps its own record of markers
		rs := session(t, reader, ctx, "p")
		for step := range 25 {
			ids := turnIDs(t, s)
			switch k := rng.IntN(6); {
			case k <= 1 || len(ids) == 0:
				if _, err := s.Send(ctx, fmt.Sprintf("q%d", step)); err != nil {
					t.Fatal(err)
				}
			case k == 2:
				if _, err := s.Regenerate(ctx); err != nil {
					t.Fatal(err)
				}
			case k == 3:
				msgs, _ := s.Messages(ctx, 1000)
				var act []string
				for _, m := range msgs {
					if m.Role == "user" {
						act = append(act, m.TurnID)
					}
				}
				if _, err := s.Edit(ctx, act[rng.IntN(len(act))], fmt.Sprintf("e%d", step)); err != nil {
					t.Fatal(err)
				}
			default:
				msgs, _ := s.Messages(ctx, 1000)
				var alts []string
				for _, m := range msgs {
					if m.Branch != nil && m.Role == "user" {
						alts = append(alts, m.Branch.Turns...)
					}
				}
				if len(alts) > 0 {
					if err := s.SwitchBranch(ctx, alts[rng.IntN(len(alts))]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, all := range []bool{false, true} {
				want := pageAll(t, s, 1000, spool.OrderAsc, all)
				for _, lim := range []int{1, 2, 3, 5} {
					for _, o := range []spool.Order{spool.OrderAsc, spool.OrderDesc} {
						for _, ss := range []*spool.Session{s, rs} {
							got := pageAll(t, ss, lim, o, all)
							if fmt.Sprint(got) != fmt.Sprint(want) {
								t.Fatalf("seed %d step %d limit %d %s all %v:\n got %v\nwant %v", seed, step, lim, o, all, got, want)
							}
						}
					}
				}
			}
		}
	}
}

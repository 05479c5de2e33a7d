package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// race has writers, each with its store, append an entry with the same
// parent at once, steps times over, and checks that each step exactly one
// wins, the others get ErrConflict, and the transcript is one chain of the
// winners.
func race(t *testing.T, stores []*Store, writers, steps int) {
	key := store.Key{Agent: "a", Owner: "o", ID: "hot"}
	var (
		head    string
		winners []transcript.Entry
		now     = t0
	)
	for step := range steps {
		entries := make([]transcript.Entry, writers)
		for w := range entries {
			now = now.Add(time.Millisecond)
			e, err := transcript.New(now, transcript.TypeUserMessage, "t", transcript.UserMessage{Text: fmt.Sprint("step ", step, " writer ", w)})
			if err != nil {
				t.Fatal(err)
			}
			e.ParentID = head
			entries[w] = e
		}
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				<-start
				errs[w] = stores[w%len(stores)].Append(bg, key, entries[w])
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for w, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("step %d: writers %d and %d both appended after %q", step, won, w, head)
			case err == nil:
				won = w
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("step %d: writer %d: %v, want ErrConflict", step, w, err)
			}
		}
		if won < 0 {
			t.Fatalf("step %d: no writer won", step)
		}
		head = entries[won].ID
		winners = append(winners, entries[won])
	}
	for _, s := range stores {
		got, err := s.Read(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		equalEntries(t, got, winners)
		info, err := s.Stat(bg, key)
		if err != nil || info.Entries != steps || info.MessageCount != steps {
			t.Fatalf("Stat after the race: %+v, %v", info, err)
		}
	}
}

func TestRacingWriters(t *testing.T) {
	race(t, []*Store{newStore(t)}, 8, 20)
}

// Two pools are two replicas: nothing is shared but the database.
func TestRacingWritersTwoPools(t *testing.T) {
	schema := newSchema(t)
	race(t, []*Store{openIn(t, schema), openIn(t, schema)}, 8, 20)
}

func TestRacingDeleteAndAppend(t *testing.T) {
	// A delete racing appends never leaves an entry of the old session
	// behind for a new session of the same id to meet.
	schema := newSchema(t)
	a, b := openIn(t, schema), openIn(t, schema)
	key := store.Key{Agent: "a", ID: "s"}
	for round := range 20 {
		c := newChain(t, a, key, t0.Add(time.Duration(round)*time.Hour))
		c.user("first")
		ctx, cancel := context.WithCancel(bg)
		var wg sync.WaitGroup
		wg.Go(func() {
			for ctx.Err() == nil {
				e := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "more"})
				if a.Append(bg, key, e) != nil {
					return
				}
				c.head = e.ID
			}
		})
		time.Sleep(2 * time.Millisecond)
		if err := b.Delete(bg, key); err != nil {
			t.Fatal(err)
		}
		cancel()
		wg.Wait()
		if err := b.Delete(bg, key); err != nil {
			t.Fatal(err)
		}
		fresh := newChain(t, b, key, t0)
		fresh.user("fresh")
		got, err := a.Read(bg, key)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		equalEntries(t, got, fresh.all)
		if err := b.Delete(bg, key); err != nil {
			t.Fatal(err)
		}
	}
}

package spool_test

import (
	"crypto/rand"
	"reflect"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// TestTurnIDsSortAfterAClockAhead: on a session whose last turn another
// replica ran with a clock an hour ahead of this one's, the turns, titles
// and modes this process writes get turn ids that sort after it. The
// history's Builder tells new turns from old by their ids sorting so, and
// forgets old turns only while they do.
func TestTurnIDsSortAfterAClockAhead(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	k := store.Key{Agent: "default", ID: "skewed"}
	// Made as the other replica would: its entries' ids are this
	// process's (NewID never goes back, so an id made here for the later
	// time would move this process's clock), its turn id is an hour ahead.
	turn := ulid.MustNew(ulid.Timestamp(time.Now().Add(time.Hour)), rand.Reader).String()
	benchdata.AppendTurn(t, st, k, "", turn, time.Now(), "asked on the other replica", "answered there")
	a, err := spool.New(spool.Config{Model: echo.New(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, a, ctx, k.ID)
	if _, err := s.Send(ctx, "and here"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(ctx, "skewed clocks"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeAuto); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "and again"); err != nil {
		t.Fatal(err)
	}
	entries, err := st.Read(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, e := range entries {
		if e.TurnID == last {
			continue
		}
		if e.TurnID < last {
			t.Fatalf("%s entry of turn %s after turn %s: it sorts before it", e.Type, e.TurnID, last)
		}
		last = e.TurnID
	}
	if last == turn {
		t.Fatal("no turn after the other replica's")
	}
}

// TestForkedHistoryForgets: a fork starts with its session.fork entry,
// made now, and the copied turns keep their older ids after it. The
// history's Builder takes the fork entry out of the order of turn ids, so
// a long fork's history forgets the turns its window no longer needs as
// the source's does, instead of indexing every turn for good.
func TestForkedHistoryForgets(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a, err := spool.New(spool.Config{Model: echo.New(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	src := session(t, a, ctx, "src")
	benchdata.FillTurns(t, st, store.Key{Agent: "default", ID: "src"}, 1000)
	r, err := src.Send(ctx, "last")
	if err != nil {
		t.Fatal(err)
	}
	dst, err := a.Fork(ctx, "src", r.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Send(ctx, "and on the fork"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*spool.Session{"source": src, "fork": dst} {
		entries, err := s.Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := history.NewBuilder(history.Options{MaxMessages: 20})
		for _, e := range entries {
			b.Add(e)
		}
		want, _ := b.Window()
		b.Forget()
		if b.Base() == 0 {
			t.Errorf("%s (%d entries): the Builder forgot nothing", name, len(entries))
		}
		if got, _ := b.Window(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the window changed when the Builder forgot", name)
		}
	}
}

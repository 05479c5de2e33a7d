package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// A session's list changed behind the store's back (an element replaced by
// a valid entry of another chain, or removed) fails every read that can
// see it with a CorruptError naming the session and position; slices of
// the transcript that do not meet the damage still read.
func TestReadBrokenChain(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	other := storetest.Chain("", time.Now().UTC().Add(-2*time.Hour), 5)
	line := func(e transcript.Entry) string {
		b, err := transcript.AppendJSON(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type read struct {
		what string
		do   func(store.Key) error
		pos  int // position of the CorruptError, -1 for one without, -2 for success
	}
	readAll := func(k store.Key) error { _, err := s.Read(ctx, k); return err }
	readRange := func(a, b int) func(store.Key) error {
		return func(k store.Key) error {
			got, _, err := s.ReadRange(ctx, k, a, b)
			if err == nil && len(got) != b-a {
				return fmt.Errorf("%d entries", len(got))
			}
			return err
		}
	}
	readTail := func(n int) func(store.Key) error {
		return func(k store.Key) error {
			got, _, err := s.ReadTail(ctx, k, n)
			if err == nil && len(got) != n {
				return fmt.Errorf("%d entries", len(got))
			}
			return err
		}
	}
	cases := []struct {
		name   string
		damage func(c redis.UniversalClient, log, info string, entries []transcript.Entry) error
		reads  []read
	}{
		{"replaced in the middle", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.LSet(ctx, log, 5, line(other[2])).Err()
		}, []read{
			{"Read", readAll, 5},
			{"ReadRange(3, 8)", readRange(3, 8), 5},
			{"ReadTail(6)", readTail(6), 5},
			{"ReadRange(5, 7)", readRange(5, 7), 6}, // the replaced one first: its successor breaks
			{"ReadRange(0, 5)", readRange(0, 5), -2},
			{"ReadRange(6, 10)", readRange(6, 10), -2},
			{"ReadTail(4)", readTail(4), -2},
		}},
		{"replaced by another chain's first entry", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.LSet(ctx, log, 5, line(other[0])).Err() // no parent, which is allowed
		}, []read{
			{"Read", readAll, 6},
		}},
		{"replaced at the end", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.LSet(ctx, log, 9, line(other[2])).Err()
		}, []read{
			{"Read", readAll, 9},
			{"ReadTail(1)", readTail(1), 9}, // only the hash's head can tell
			{"ReadRange(9, 10)", readRange(9, 10), 9},
			{"ReadRange(0, 9)", readRange(0, 9), -2},
		}},
		{"deleted in the middle", func(c redis.UniversalClient, log, _ string, entries []transcript.Entry) error {
			return c.LRem(ctx, log, 1, line(entries[4])).Err()
		}, []read{
			{"Read", readAll, 4},
			{"ReadTail(7)", readTail(7), 4},
			{"ReadRange(0, 3)", readRange(0, 3), -1}, // the count is off
		}},
		{"deleted at the start", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.LPop(ctx, log).Err()
		}, []read{
			{"Read", readAll, 0},
		}},
		{"deleted at the end", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.RPop(ctx, log).Err()
		}, []read{
			{"Read", readAll, -1},
			{"ReadTail(1)", readTail(1), -1},
		}},
		{"list gone", func(c redis.UniversalClient, log, _ string, _ []transcript.Entry) error {
			return c.Del(ctx, log).Err()
		}, []read{
			{"Read", readAll, -1},
			{"ReadTail(0)", func(k store.Key) error { _, _, err := s.ReadTail(ctx, k, 0); return err }, -1},
		}},
		{"hash gone", func(c redis.UniversalClient, _, info string, _ []transcript.Entry) error {
			return c.Del(ctx, info).Err()
		}, []read{
			{"Read", readAll, -1},
			{"ReadRange(0, 2)", readRange(0, 2), -1},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := store.Key{Agent: "agent", Owner: "u1", ID: fmt.Sprint("damaged-", i)}
			entries := storetestAppend(t, s, key, 10)
			logKey, infoKey, _ := keyNames(s, key)
			if err := tc.damage(s.Client(), logKey, infoKey, entries); err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.reads {
				err := r.do(key)
				if r.pos == -2 {
					if err != nil {
						t.Errorf("%s: %v, want it to read", r.what, err)
					}
					continue
				}
				var ce *store.CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("%s: %v, want a *store.CorruptError", r.what, err)
					continue
				}
				if ce.Key != key || ce.Position != r.pos || ce.Where == "" {
					t.Errorf("%s: %v (key %v, position %d, where %q), want session %v at %d", r.what, err, ce.Key, ce.Position, ce.Where, key, r.pos)
				}
			}
		})
	}
}

// Intact sessions of every length read through the checks, whole, in
// ranges and by their tails.
func TestReadChecksIntact(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for n := range 4 {
		key := store.Key{Agent: "agent", ID: fmt.Sprint("intact-", n)}
		entries := storetestAppend(t, s, key, n)
		if got, err := s.Read(ctx, key); err != nil || len(got) != n {
			t.Fatalf("Read of %d: %d entries, %v", n, len(got), err)
		}
		for a := 0; a <= n+1; a++ {
			for b := a; b <= n+1; b++ {
				got, total, err := s.ReadRange(ctx, key, a, b)
				if want := max(0, min(b, n)-a); err != nil || len(got) != want || total != n {
					t.Fatalf("ReadRange(%d, %d) of %d: %d entries of %d, %v", a, b, n, len(got), total, err)
				}
			}
			got, total, err := s.ReadTail(ctx, key, a)
			if err != nil || len(got) != min(a, n) || total != n {
				t.Fatalf("ReadTail(%d) of %d: %d entries of %d, %v", a, n, len(got), total, err)
			}
			if len(got) > 0 && got[len(got)-1].ID != entries[n-1].ID {
				t.Fatalf("ReadTail(%d) of %d ends at %q", a, n, got[len(got)-1].ID)
			}
		}
	}
}

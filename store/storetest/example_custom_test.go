// This example is a complete custom store: a map under a mutex, in a few
// dozen lines, that passes the whole conformance suite. Packages store and
// storekit do the hard parts: store.ValidateKey and ValidateNamespace check
// keys, storekit.CheckAppend checks an entry and its parent,
// SessionInfo.Apply keeps the listing info current on every append,
// storekit.SortSessions orders a listing, and storekit.EncodeListCursor and
// DecodeListCursor make cursors bound to their namespace.
//
// Prove that a store keeps the contract by running the suite in its own
// package:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return mystore.New() })
//	}
//
// (this example's store runs it in example_custom_store_test.go).
package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// mapStore keeps sessions in a map. It is safe for concurrent use.
type mapStore struct {
	mu       sync.Mutex
	sessions map[store.Key]*mapSession
}

type mapSession struct {
	entries []transcript.Entry
	info    store.SessionInfo // kept with Apply, so List reads no entries
}

func newMapStore() *mapStore {
	return &mapStore{sessions: map[store.Key]*mapSession{}}
}

func (s *mapStore) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[key]
	head := ""
	if sess != nil {
		head = sess.entries[len(sess.entries)-1].ID
	}
	// Invalid entries and a parent that is not the head are refused here.
	if err := storekit.CheckAppend(key, head, e); err != nil {
		return err
	}
	if sess == nil {
		sess = &mapSession{}
		s.sessions[key] = sess
	}
	e.Data = slices.Clone(e.Data) // the caller may reuse its slice
	sess.entries = append(sess.entries, e)
	sess.info.Apply(key, e)
	return nil
}

func (s *mapStore) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []transcript.Entry
	if sess := s.sessions[key]; sess != nil {
		for _, e := range sess.entries {
			e.Data = slices.Clone(e.Data)
			out = append(out, e)
		}
	}
	return out, ctx.Err()
}

func (s *mapStore) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	var after *storekit.ListPosition
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		after = &p
	}
	s.mu.Lock()
	var infos []store.SessionInfo
	for key, sess := range s.sessions { // every namespace's: fine for an example
		if key.Namespace() == ns && (after == nil || after.Before(sess.info.LastActivity, key.ID)) {
			infos = append(infos, sess.info)
		}
	}
	s.mu.Unlock()
	storekit.SortSessions(infos)
	page := store.SessionPage{Sessions: infos}
	if n := opt.PageSize(); len(infos) > n {
		page.Sessions = infos[:n]
		last := infos[n-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, ctx.Err()
}

func (s *mapStore) Delete(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, key)
	return nil
}

// Example_customStore uses the custom store above through the Store
// contract.
func Example_customStore() {
	var s store.Store = newMapStore()
	ctx := context.Background()
	key := store.Key{Agent: "support", ID: "s1"}

	// A user message, the answer and the turn's end, each the child of the
	// one before.
	entries := storetest.Chain("", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), 3)
	for _, e := range entries {
		if err := s.Append(ctx, key, e); err != nil {
			fmt.Println(err)
			return
		}
	}
	// A second writer that has not seen the last two entries is refused.
	stale := storetest.NewEntry(entries[0].ID, time.Date(2026, 11, 29, 10, 0, 1, 0, time.UTC), transcript.TypeUserMessage, transcript.UserMessage{Text: "late"})
	err := s.Append(ctx, key, stale)
	fmt.Println("stale append refused:", errors.Is(err, store.ErrConflict))

	page, err := s.List(ctx, key.Namespace(), store.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, info := range page.Sessions {
		fmt.Printf("%s %q: %d messages, %d entries\n", info.ID, info.Title, info.MessageCount, info.Entries)
	}
	// Output:
	// stale append refused: true
	// s1 "message 1": 2 messages, 3 entries
}

package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

func TestCopiesInAndOut(t *testing.T) {
	s := memstore.New()
	key := store.Key{Agent: "a", ID: "s"}
	e := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "original"})
	data := e.Data
	want := e
	want.Data = slices.Clone(e.Data)
	if err := s.Append(t.Context(), key, e); err != nil {
		t.Fatal(err)
	}
	copy(data, `{"text":"CHANGED!"}`) // the caller reuses its buffer
	got, _ := s.Read(t.Context(), key)
	copy(got[0].Data, `{"text":"changed!"}`) // a reader scribbles on its copy
	for _, read := range []func() ([]transcript.Entry, error){
		func() ([]transcript.Entry, error) { return s.Read(t.Context(), key) },
		func() ([]transcript.Entry, error) { es, _, err := s.ReadRange(t.Context(), key, 0, 1); return es, err },
		func() ([]transcript.Entry, error) { es, _, err := s.ReadTail(t.Context(), key, 1); return es, err },
	} {
		again, err := read()
		if err != nil || len(again) != 1 || !again[0].Equal(want) || string(again[0].Data) != `{"text":"original"}` {
			t.Fatalf("stored data changed through a caller's slice: %s, %v", again[0].Data, err)
		}
	}
}

func TestLocksAreDropped(t *testing.T) {
	s := memstore.New()
	for i := range 1000 {
		unlock, err := s.Lock(t.Context(), store.Key{Agent: "a", ID: fmt.Sprint("s", i)})
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		unlock() // a second call is harmless
	}
	if n := memstore.LockCount(s); n != 0 {
		t.Errorf("%d locks kept after every one was released", n)
	}
	unlock, _ := s.Lock(t.Context(), store.Key{Agent: "a", ID: "held"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Lock(ctx, store.Key{Agent: "a", ID: "held"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock of a held lock with a cancelled context = %v, want context.Canceled", err)
	}
	unlock()
	if n := memstore.LockCount(s); n != 0 {
		t.Errorf("%d locks kept after a waiter gave up and the holder released", n)
	}
}

func TestOpenMemory(t *testing.T) {
	for _, u := range []string{"memory:", "memory://", "memory:///"} {
		s, err := store.Open(t.Context(), u)
		if err != nil {
			t.Errorf("Open(%q): %v", u, err)
			continue
		}
		if page, err := s.List(t.Context(), store.Namespace{Agent: "a"}, store.ListOptions{}); err != nil || len(page.Sessions) != 0 {
			t.Errorf("Open(%q) did not give an empty store", u)
		}
	}
	for _, u := range []string{"memory:x", "memory://host", "memory:/path", "memory:?max=3"} {
		if _, err := store.Open(t.Context(), u); err == nil {
			t.Errorf("Open(%q) succeeded; a memory store takes no path or options", u)
		}
	}
}

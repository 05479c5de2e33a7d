package store_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// closer is a store that records Close.
type closer struct {
	*memstore.Store
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

var (
	registerOnce sync.Once
	openedURL    *url.URL // the URL the spooltest opener was last given
)

func TestOpen(t *testing.T) {
	registerOnce.Do(func() {
		store.Register("Spooltest", func(ctx context.Context, u *url.URL) (store.Store, error) {
			openedURL = u
			return &closer{Store: memstore.New()}, nil
		})
	})
	s, err := store.Open(t.Context(), "spooltest://host/path?x=1")
	if err != nil {
		t.Fatalf("Open of a registered scheme: %v", err)
	}
	if u := openedURL; u == nil || u.Host != "host" || u.Path != "/path" || u.Query().Get("x") != "1" {
		t.Errorf("the opener got URL %v", u)
	}
	if err := store.Close(s); err != nil || !s.(*closer).closed {
		t.Errorf("Close did not close a store that has Close: %v", err)
	}
	if err := store.Close(memstore.New()); err != nil {
		t.Errorf("Close of a store without Close: %v", err)
	}
	if !slices.Contains(store.Schemes(), "spooltest") || !slices.IsSorted(store.Schemes()) {
		t.Errorf("Schemes() = %v: want it sorted, with the scheme registered in lower case", store.Schemes())
	}

	m1, err := store.Open(t.Context(), "memory:")
	if err != nil {
		t.Fatalf("Open memory: %v", err)
	}
	m2, _ := store.Open(t.Context(), "MEMORY:")
	if m1 == m2 || m2 == nil {
		t.Error("each Open of memory: must give a new store")
	}
	if _, err := store.Open(t.Context(), "memory:/some/path"); err == nil {
		t.Error("Open of memory: with a path succeeded; a memory store takes none")
	}

	for _, tt := range []struct{ url, mentions string }{
		{"nosuch://x", `unknown scheme "nosuch"`},
		{"/just/a/path", "has no scheme"},
		{"", "has no scheme"},
		{"postgres://user:secret@host:5432/db\x7f", "bad store URL"},
	} {
		_, err := store.Open(t.Context(), tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("Open(%q) = %v, want an error mentioning %q", tt.url, err, tt.mentions)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error %q shows the password", tt.url, err)
		}
	}
	_, err = store.Open(t.Context(), "nosuch:")
	if err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("an unknown scheme's error must list the known ones: %v", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering the memory scheme a second time did not panic")
		}
	}()
	store.Register("memory", func(context.Context, *url.URL) (store.Store, error) { return nil, errors.New("no") })
}

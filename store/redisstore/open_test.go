package redisstore_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// withQuery returns the test URL with extra query parameters.
func withQuery(t *testing.T, extra string) string {
	t.Helper()
	u, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += extra
	return u.String()
}

// store.Open knows the schemes, and the store's query parameters reach it
// while go-redis's own still work.
func TestOpenURL(t *testing.T) {
	prefix := randomPrefix()
	st, err := store.Open(t.Context(), withQuery(t, "prefix="+prefix+"&ttl=90m&pendingttl=0&locklease=2s&dial_timeout=3s"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st.(*redisstore.Store)
	if !ok {
		t.Fatalf("store.Open returned %T", st)
	}
	cleaner := newStore(t) // its client outlives s's, to remove s's keys
	t.Cleanup(func() { removePrefix(t, cleaner.Client(), prefix) })
	defer store.Close(s)
	if s.Prefix() != prefix || s.TTL() != 90*time.Minute {
		t.Fatalf("prefix %q, TTL %v; want %q, 90m", s.Prefix(), s.TTL(), prefix)
	}
	key := store.Key{Agent: "agent", ID: "via-url"}
	if err := s.Append(t.Context(), key, storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})); err != nil {
		t.Fatal(err)
	}
	logKey, _, _ := keyNames(s, key)
	if d := s.Client().PTTL(t.Context(), logKey).Val(); d <= 0 || d > 90*time.Minute {
		t.Fatalf("ttl=90m from the URL: the session expires in %v", d)
	}
	if err := store.Close(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Ping(context.Background()).Err(); err == nil {
		t.Fatal("Close left the client that Open made open")
	}
}

func TestOpenRejects(t *testing.T) {
	for _, q := range []string{"prefix=a:b", "prefix={x}", "prefix=", "ttl=soon", "ttl=-1h", "locklease=1ms", "wait=x", "waittimeout=1s", "pendingttl=1m&ttl=1h", "bogus=1", "ttl=24h&ttl=1s", "prefix=a&prefix=b"} {
		if s, err := redisstore.Open(t.Context(), withQuery(t, q)); err == nil {
			s.Close()
			t.Errorf("Open with ?%s succeeded", q)
		}
	}
	// A password never shows in an error.
	for _, u := range []string{"redis://:s3cret@127.0.0.1:1/0", "redis://:s3cret@127.0.0.1:1/0?bogus=1", "redis://:s3cret@127.0.0.1:1/x", "redis://:s3cret@[::1"} {
		_, err := redisstore.Open(t.Context(), u)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
}

// New leaves the caller's client open.
func TestNewDoesNotOwnClient(t *testing.T) {
	s := newStore(t)
	o, err := redisstore.New(t.Context(), s.Client(), redisstore.WithPrefix(s.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatalf("closing a store from New closed its client: %v", err)
	}
	if _, err := redisstore.New(t.Context(), nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

// With WAIT configured, an append that no replica confirms (this server
// has none) is reported as ErrNotDurable, and the entry is in the session
// nevertheless. WAITAOF needs Redis 7.2 with appendonly; where it fails,
// the append reports that too.
func TestWaitNotConfirmed(t *testing.T) {
	base := newStore(t)
	for _, opt := range []redisstore.Option{
		redisstore.WithWait(1, 50*time.Millisecond),
		redisstore.WithWaitAOF(1, 0, 50*time.Millisecond),
	} {
		s := sameStore(t, base, opt)
		key := store.Key{Agent: "agent", ID: transcript.NewID(time.Now())}
		e := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})
		err := s.Append(t.Context(), key, e)
		if !errors.Is(err, redisstore.ErrNotDurable) {
			// A server with appendonly on and WAITAOF confirms it.
			if err == nil && base.Client().ConfigGet(t.Context(), "appendonly").Val()["appendonly"] == "yes" {
				continue
			}
			t.Fatalf("append without the confirmation asked for: %v, want ErrNotDurable", err)
		}
		t.Logf("reported: %v", err)
		if got := readAll(t, s, key); len(got) != 1 || got[0].ID != e.ID {
			t.Fatalf("an append reported not durable is not in the session (%d entries)", len(got))
		}
		// A conflict is a conflict, and waits for nothing.
		if err := s.Append(t.Context(), key, storetest.NewEntry("", time.Now(), "x.note", nil)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale append with WAIT: %v, want ErrConflict", err)
		}
	}
	if _, err := redisstore.New(t.Context(), base.Client(), redisstore.WithWait(0, time.Second)); err == nil {
		t.Fatal("WithWait(0, …) accepted")
	}
}

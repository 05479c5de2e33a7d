package redisstore

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// errOptionsTaken stops New after the options are applied: nothing is
// sent to a server.
var errOptionsTaken = errors.New("options taken")

// FuzzOpenURLOptions gives Open arbitrary redis URLs and stops it once
// their options are applied, so no connection is made. What it accepts
// is within the options' documented bounds (a valid prefix, a TTL of 0 or
// at least 1ms, a lock lease of at least 100ms, a WAIT with a replica or
// a WAITAOF with a positive timeout) and the durations are what
// time.ParseDuration makes of the URL's. What it refuses gets an error
// starting "redisstore: " that never shows the URL's password and, when
// only the query is at fault, names a parameter of it.
func FuzzOpenURLOptions(f *testing.F) {
	for _, u := range []string{
		"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0?prefix=p&ttl=90m&pendingttl=0&locklease=2s&dial_timeout=3s",
		"redis://h/0?prefix=a:b", "redis://h/0?prefix=", "redis://h/0?ttl=soon", "redis://h/0?ttl=-1h", "redis://h/0?ttl=0",
		"redis://h/0?locklease=1ms", "redis://h/0?wait=x", "redis://h/0?wait=1&waittimeout=2s", "redis://h/0?waitaof=1&wait=0",
		"redis://h/0?waittimeout=1s", "redis://h/0?pendingttl=1m&ttl=1h", "redis://h/0?bogus=1", "redis://h/0?ttl=24h&ttl=1s",
		"redis://:s3cret@127.0.0.1:1/0", "redis://:s3cret@127.0.0.1:1/0?bogus=1", "redis://:s3cret@127.0.0.1:1/x",
		"redis://:s3cret@[::1", "rediss://user:s3cret@h:6380/2?ttl=1h", "unix:///tmp/redis.sock?db=1", "redis://h/0?%zz",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var got config
		take := func(c *config) error {
			got = *c
			return errOptionsTaken
		}
		s, err := Open(t.Context(), raw, take)
		if s != nil {
			s.Close()
			t.Fatalf("Open(%q) returned a store past an option's error", raw)
		}
		u, perr := url.Parse(raw)
		if errors.Is(err, errOptionsTaken) {
			checkTaken(t, raw, u.Query(), got)
			return
		}
		if err == nil {
			t.Fatalf("Open(%q) got past its options", raw)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "redisstore: ") {
			t.Fatalf("Open(%q): error %q does not start with the package", raw, msg)
		}
		storetest.NoPassword(t, raw, msg, "redisstore: bad URL: URL parameter given times not a number connecting to")
		if perr != nil {
			return
		}
		bare := *u
		bare.RawQuery = ""
		if _, err := redis.ParseURL(bare.String()); err != nil {
			return
		}
		norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "") }
		for k := range u.Query() {
			if strings.Contains(norm(msg), norm(k)) || (strings.HasPrefix(k, "wait") && strings.Contains(norm(msg), "wait")) {
				return
			}
		}
		t.Fatalf("Open(%q): error %q names no parameter of the URL", raw, msg)
	})
}

// checkTaken checks the options Open took from the query q against their
// bounds and the values q gives.
func checkTaken(t *testing.T, raw string, q url.Values, got config) {
	t.Helper()
	for k, v := range q {
		if len(v) > 1 && (k == "prefix" || k == "ttl" || k == "pendingttl" || k == "locklease" || k == "wait" || k == "waitaof" || k == "waittimeout") {
			t.Fatalf("Open(%q) accepted %s given %d times", raw, k, len(v))
		}
	}
	if !store.ValidID(got.prefix) {
		t.Fatalf("Open(%q) took prefix %q", raw, got.prefix)
	}
	if q.Has("prefix") && got.prefix != q.Get("prefix") {
		t.Fatalf("Open(%q) took prefix %q", raw, got.prefix)
	}
	if got.ttl < 0 || (got.ttl > 0 && got.ttl < time.Millisecond) || got.pendingTTL > 0 && got.pendingTTL < time.Millisecond {
		t.Fatalf("Open(%q) took TTL %v, pending TTL %v", raw, got.ttl, got.pendingTTL)
	}
	if got.lease != 0 && got.lease < 100*time.Millisecond {
		t.Fatalf("Open(%q) took lock lease %v", raw, got.lease)
	}
	for name, d := range map[string]time.Duration{"ttl": got.ttl, "pendingttl": got.pendingTTL, "locklease": got.lease} {
		if !q.Has(name) {
			continue
		}
		want, err := time.ParseDuration(q.Get(name))
		if q.Get(name) == "0" {
			want, err = 0, nil
		}
		if err != nil || d != want {
			t.Fatalf("Open(%q) took %s %v from %q", raw, name, d, q.Get(name))
		}
	}
	if w := got.wait; w != nil {
		if w.timeout <= 0 || (!w.aof && w.replicas < 1) || (w.aof && (w.local < 0 || w.local > 1 || w.replicas < 0 || w.local+w.replicas == 0)) {
			t.Fatalf("Open(%q) took wait %+v", raw, *w)
		}
	} else if q.Has("wait") || q.Has("waitaof") {
		t.Fatalf("Open(%q) took no wait", raw)
	}
}

package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// redisURL returns SPOOL_TEST_REDIS, or skips the test without it (fails
// it under CI=true, where Redis must be there).
func redisURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("SPOOL_TEST_REDIS")
	if u == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("SPOOL_TEST_REDIS is not set and CI=true: the Redis store must be tested (e.g. SPOOL_TEST_REDIS=redis://127.0.0.1:6379/0)")
		}
		tb.Skip("SPOOL_TEST_REDIS is not set (e.g. redis://127.0.0.1:6379/0); skipping the Redis store tests")
	}
	return u
}

// randomPrefix returns a key prefix no other test uses.
func randomPrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "spooltest-" + hex.EncodeToString(b[:])
}

// newStore opens a store on SPOOL_TEST_REDIS under a key prefix of its
// own and removes every key with that prefix when the test ends. It never
// touches other keys: other tests and other engineers share the database.
func newStore(tb testing.TB, opts ...redisstore.Option) *redisstore.Store {
	tb.Helper()
	u := redisURL(tb)
	prefix := randomPrefix()
	s, err := redisstore.Open(context.Background(), u, append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("Redis at SPOOL_TEST_REDIS: %v", err)
		}
		tb.Fatalf("Redis at SPOOL_TEST_REDIS: %v (unset the variable to skip)", err)
	}
	tb.Cleanup(func() {
		removePrefix(tb, s.Client(), prefix)
		s.Close()
	})
	return s
}

// removePrefix unlinks every key of prefix (they all start with "{prefix:").
func removePrefix(tb testing.TB, c redis.UniversalClient, prefix string) {
	if err := unlinkPrefix(c, prefix); err != nil {
		tb.Errorf("cleanup of keys %q: %v", "{"+prefix+":*", err)
	}
}

func unlinkPrefix(c redis.UniversalClient, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	it := c.Scan(ctx, 0, "{"+prefix+":*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// One key per UNLINK: on a cluster node, keys of several slots in
		// one command are refused.
		pipe := c.Pipeline()
		for _, k := range batch {
			pipe.Unlink(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		batch = batch[:0]
		return err
	}
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return it.Err()
}

func TestConformance(t *testing.T) {
	redisURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

package redisstore

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
)

// Lock takes the session's lock: a key set with SET NX PX GET to a random
// token, so only the holder can renew or release it. While it is held, a
// goroutine renews the lease every third of it; if the holder's process
// dies, the lock is free once the lease runs out (WithLockLease). Lock
// waits, polling with a growing interval up to 50ms, until the lock is
// free or ctx is done. The returned unlock releases it (only if it still
// holds the token) and may be called more than once.
//
// A holder that cannot reach Redis for a whole lease loses the lock, and
// another process may take it; the conditional append still keeps every
// transcript one chain.
func (s *Store) Lock(ctx context.Context, key store.Key) (func(), error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	lockKey := s.keys(key.Namespace()).lock(key.ID)
	var b [16]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b[:])

	delay := time.Millisecond
	for {
		// With GET, a SET that go-redis sends again after a lost reply
		// finds its own token instead of waiting out its own lease.
		prev, err := s.c.SetArgs(ctx, lockKey, token, redis.SetArgs{Mode: "NX", TTL: s.lease, Get: true}).Result()
		if errors.Is(err, redis.Nil) || (err == nil && prev == token) {
			break
		}
		if err != nil {
			// The SET may have run with its reply lost (ctx cancelled in
			// flight): free the lock if it is ours, rather than leave it
			// held for a lease by nobody.
			s.release(lockKey, token)
			return nil, fmt.Errorf("redisstore: lock session %s: %w", key, err)
		}
		// Jitter keeps waiters from stepping in line with one another.
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("redisstore: lock session %s: %w", key, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	go s.renew(lockKey, token, stop, done)
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			close(stop)
			<-done
			s.release(lockKey, token)
		})
	}
	return unlock, nil
}

// renew extends the lease every third of it until stop is closed or the
// lock is no longer the holder's.
func (s *Store) renew(lockKey, token string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(s.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.lease/3)
		n, err := renewScript().Run(ctx, s.c, []string{lockKey}, token, s.lease.Milliseconds()).Int()
		cancel()
		if err == nil && n == 0 {
			return // lost: the lease ran out and the key is gone or another's
		}
	}
}

// release deletes the lock if it still holds token. An error leaves the
// lock to run out its lease.
func (s *Store) release(lockKey, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = releaseScript().Run(ctx, s.c, []string{lockKey}, token).Err()
}

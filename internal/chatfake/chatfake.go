// Package chatfake holds local fakes of the chat platforms' APIs (Slack's
// Web API, Telegram's Bot API, Discord's interaction webhooks) for the
// channel drivers' tests: each speaks the platform's documented wire
// format (paths, authentication, payload and error shapes, 429 with
// Retry-After) and records what a driver posted, and each can be told to
// fail the next calls. The signing helpers make requests as the platforms
// sign them.
package chatfake

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// faults is a queue of HTTP statuses to answer the next calls with.
type faults struct {
	mu   sync.Mutex
	next []int
}

// FailNext makes the next n calls answer status (429 with Retry-After: 1).
func (f *faults) FailNext(status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.next = append(f.next, status)
	}
}

func (f *faults) take() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.next) == 0 {
		return 0
	}
	s := f.next[0]
	f.next = f.next[1:]
	return s
}

// retryAfter is what a fake's 429 asks for, in seconds.
const retryAfter = 1

func setRetryAfter(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
}

// Eventually polls cond until it holds, failing t after d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

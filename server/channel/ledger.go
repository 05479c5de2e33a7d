package channel

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Where deliveries are recorded: sessions of the agent named
// LedgerAgent, owned by the agent whose deliveries they are, in the
// agent's own store. One session (a bucket) holds the deliveries of one
// hour of event time and one of ledgerShards shards, so every retry of a
// delivery lands in the same bucket, however late it comes, and a bucket
// stays small enough to read whole.
const (
	// LedgerAgent is the agent name under which dispatchers record the
	// deliveries they took (spool sessions ls --agent spool.deliveries
	// --user AGENT lists the buckets).
	LedgerAgent = "spool.deliveries"
	// TypeDelivery is the entry type of one recorded delivery, data
	// {"delivery": id}.
	TypeDelivery transcript.Type = "channel.delivery"

	ledgerShards = 8
	// ledgerKeep is how long a bucket is kept after its last delivery:
	// longer than any platform retries (Slack within minutes, Telegram
	// up to a day while the webhook fails).
	ledgerKeep = 48 * time.Hour
	// ledgerRecent is how long a claim is also remembered in memory, so
	// that the usual retry (seconds later, same process) reads nothing.
	ledgerRecent = 10 * time.Minute
)

// ledger claims deliveries, durably, on top of the Store contract alone:
// a claim reads its bucket and appends to it conditionally on the last
// entry, so two processes sharing a store never both claim one delivery
// (the loser's append fails with ErrConflict, and its reread finds the
// winner's entry).
type ledger struct {
	st store.Store
	ns store.Namespace

	mu     sync.Mutex
	recent map[string]time.Time // delivery id → when claimed here
	swept  time.Time
}

func newLedger(st store.Store, agent string) *ledger {
	return &ledger{st: st, ns: store.Namespace{Agent: LedgerAgent, Owner: agent}, recent: map[string]time.Time{}}
}

// errBadDelivery: a delivery id that cannot be recorded.
var errBadDelivery = errors.New("channel: a delivery id is 1 to 200 bytes of printable ASCII")

func validDelivery(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

type deliveryData struct {
	Delivery string `json:"delivery"`
}

// claim records dv and reports whether it was new. It is durable when it
// returns true.
func (l *ledger) claim(ctx context.Context, dv Delivery) (bool, error) {
	if !validDelivery(dv.ID) {
		return false, errBadDelivery
	}
	now := time.Now()
	l.mu.Lock()
	if at, ok := l.recent[dv.ID]; ok && now.Sub(at) < ledgerRecent {
		l.mu.Unlock()
		return false, nil
	}
	// Held across the store calls: claims of one process are one at a
	// time, which keeps appends to a bucket from conflicting with each
	// other (another process's still can, and are retried).
	defer l.mu.Unlock()
	key := l.bucket(dv)
	for attempt := 0; ; attempt++ {
		entries, err := l.st.Read(ctx, key)
		if err != nil {
			return false, fmt.Errorf("channel: deliveries %s: %w", key, err)
		}
		for _, e := range entries {
			var d deliveryData
			if e.Type == TypeDelivery && e.DecodeData(&d) == nil && d.Delivery == dv.ID {
				l.remember(dv.ID, now)
				return false, nil
			}
		}
		e, err := transcript.New(now, TypeDelivery, "", deliveryData{Delivery: dv.ID})
		if err != nil {
			return false, err
		}
		if n := len(entries); n > 0 {
			e.ParentID = entries[n-1].ID
		}
		err = l.st.Append(ctx, key, e)
		if err == nil {
			l.remember(dv.ID, now)
			if len(entries) == 0 {
				l.sweep(ctx, now)
			}
			return true, nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt == 4 {
			return false, fmt.Errorf("channel: deliveries %s: %w", key, err)
		}
	}
}

// bucket returns the session that records dv.
func (l *ledger) bucket(dv Delivery) store.Key {
	h := fnv.New32a()
	h.Write([]byte(dv.ID))
	at := dv.Time
	if at.IsZero() {
		at = time.Now()
	}
	return l.ns.Key(fmt.Sprintf("h%s.s%d", at.UTC().Format("2006010215"), h.Sum32()%ledgerShards))
}

func (l *ledger) remember(id string, now time.Time) {
	l.recent[id] = now
	if len(l.recent) > 4096 {
		for k, at := range l.recent {
			if now.Sub(at) >= ledgerRecent {
				delete(l.recent, k)
			}
		}
	}
}

// sweep deletes buckets idle longer than ledgerKeep, at most once an hour
// per process, when a claim has just started a bucket. Stores with
// retention of their own (the file store keeps the newest 50 sessions of
// a namespace) may drop buckets sooner; a bucket lives at least as long as
// the newest 50 hours-and-shards with deliveries.
func (l *ledger) sweep(ctx context.Context, now time.Time) {
	if now.Sub(l.swept) < time.Hour {
		return
	}
	l.swept = now
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := l.st.List(ctx, l.ns, opt)
		if err != nil {
			return // the next bucket's sweep tries again
		}
		for _, info := range page.Sessions {
			if now.Sub(info.LastActivity) > ledgerKeep {
				l.st.Delete(ctx, info.Key())
			}
		}
		if page.NextCursor == "" {
			return
		}
		opt.Cursor = page.NextCursor
	}
}

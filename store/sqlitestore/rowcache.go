package sqlitestore

import (
	"sync"

	"github.com/spool-go/spool/store"
)

// rowCache keeps the session rows this Store's appends last committed, so
// that the next append to such a session need not read its row first:
// the UPDATE that follows (updateSessionSQL) changes the row only if it is
// still the one cached, the same session with the same head and count,
// which is all the row is made of (SessionInfo.Apply over the entries), so
// a row written since by another Store or process, deleted, expired or
// replaced under the same sid is never taken for the cached one; an
// append whose cached row proves stale reads it and starts over.
type rowCache struct {
	mu sync.Mutex
	m  map[store.Key]sessionRow
}

// rowCacheMax bounds the rows cached; the cache starts empty again when it
// is full.
const rowCacheMax = 4096

func (c *rowCache) get(k store.Key) (sessionRow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r, ok
}

// keep caches rows, committed.
func (c *rowCache) keep(rows map[store.Key]sessionRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(rows) > rowCacheMax {
		c.m = make(map[store.Key]sessionRow, min(len(rows), rowCacheMax))
	}
	for k, r := range rows {
		if len(c.m) < rowCacheMax {
			c.m[k] = r
		}
	}
}

// forget drops the rows of keys, whose transaction failed.
func (c *rowCache) forget(keys map[store.Key]sessionRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range keys {
		delete(c.m, k)
	}
}

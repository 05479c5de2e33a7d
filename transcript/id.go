package transcript

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

var (
	idMu      sync.Mutex
	idEntropy = ulid.Monotonic(rand.Reader, 0)
	// idBuf is where NewID makes each id, under idMu: made in a local
	// ULID, its entropy half goes through an interface (ulid.New) and the
	// ULID escapes, an allocation per id besides its string.
	idBuf ulid.ULID
	// idLast is the millisecond of the last id: NewID never goes back
	// before it (see NewID).
	idLast uint64
)

// NewID returns a new ULID for the time t: 26 characters, sortable by
// creation: the ids this process makes sort in the order they were made.
//
// An id's time is t's millisecond, or the last id's when t is earlier: a
// caller that read the clock just before another made an id may come
// second, and a fresh id in the earlier millisecond would sort first, as
// would one in the later millisecond after it (its entropy drawn anew,
// below the id before). Those are turns of one session out of order.
func NewID(t time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	ms := max(idTime(t), idLast)
	idLast = ms
	if idBuf.SetTime(ms) == nil && idEntropy.MonotonicRead(ms, idBuf[6:]) == nil {
		return idBuf.String()
	}
	// The monotonic entropy overflows only after 2^80 ids in one
	// millisecond: fall back to fresh entropy, which cannot fail for a
	// time a ULID holds.
	return ulid.MustNew(ms, rand.Reader).String()
}

// idTime is t's millisecond as a ULID holds it: a time before 1970 is
// 1970's first (ulid.Timestamp would wrap it around to one past every
// ULID's, and every id after it would be refused), and one after 10889
// the last a ULID holds.
func idTime(t time.Time) uint64 {
	switch {
	case t.Before(time.UnixMilli(0)):
		return 0
	case ulid.Timestamp(t) > ulid.MaxTime():
		return ulid.MaxTime()
	}
	return ulid.Timestamp(t)
}

// NewIDAfter is NewID for an id that must also sort after the id after,
// which another process may have made with a clock ahead of this one's:
// the turns of a session, whichever replica runs them. When after is a
// ULID whose millisecond is t's or later, the id is made in after's
// millisecond, or in the next one when that does not sort after it (after
// came from another process, whose entropy in that millisecond was
// higher); any other after (empty, or not a ULID) changes nothing.
//
// Only as far ahead as needed: an id in the next millisecond each time
// would carry every id this process makes (NewID never goes back) ahead
// of the clock by a millisecond for each turn a session runs within one,
// without bound.
func NewIDAfter(t time.Time, after string) string {
	u, err := ulid.ParseStrict(after)
	if err != nil || u.Time() < idTime(t) || u.Time() >= ulid.MaxTime() {
		return NewID(t)
	}
	if id := NewID(ulid.Time(u.Time())); id > u.String() {
		return id
	}
	return NewID(ulid.Time(u.Time() + 1))
}

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
)

// NewID returns a new ULID for the time t: 26 characters, sortable by
// creation. Ids made in the same millisecond by this process sort in the
// order they were made.
func NewID(t time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	ms := ulid.Timestamp(t)
	if idBuf.SetTime(ms) == nil && idEntropy.MonotonicRead(ms, idBuf[6:]) == nil {
		return idBuf.String()
	}
	// The monotonic entropy overflows only after 2^80 ids in one
	// millisecond, or t is before 1970 or after 10889; fall back to
	// fresh entropy, which cannot fail for a valid time.
	return ulid.MustNew(ms, rand.Reader).String()
}

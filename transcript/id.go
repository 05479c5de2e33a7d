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
)

// NewID returns a new ULID for the time t: 26 characters, sortable by
// creation. Ids made in the same millisecond by this process sort in the
// order they were made.
func NewID(t time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), idEntropy)
	if err != nil {
		// The monotonic entropy overflows only after 2^80 ids in one
		// millisecond, or t is before 1970 or after 10889; fall back to
		// fresh entropy, which cannot fail for a valid time.
		id = ulid.MustNew(ulid.Timestamp(t), rand.Reader)
	}
	return id.String()
}

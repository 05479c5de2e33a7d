package seal

import (
	"encoding/binary"
	"errors"
)

// Protector seals and opens transcript lines. Implementations must be safe
// for concurrent use.
type Protector interface {
	// Seal returns plaintext sealed and bound to ad.
	Seal(plaintext, ad []byte) ([]byte, error)
	// Open returns the plaintext of sealed. It fails with ErrWrongKey when
	// sealed was made with a key this protector does not hold, and with
	// ErrTampered when it was changed or bound to other associated data.
	Open(sealed, ad []byte) ([]byte, error)
}

// Errors of Open.
var (
	ErrWrongKey = errors.New("seal: sealed with a key this protector does not have")
	ErrTampered = errors.New("seal: sealed data was changed or belongs elsewhere")
)

// AssociatedData returns the bytes that bind a line to session
// (agent, owner, id) at position. Each part is length-prefixed, so no two
// different places share associated data.
func AssociatedData(agent, owner, id string, position int) []byte {
	b := make([]byte, 0, 16+len(agent)+len(owner)+len(id)+8)
	b = append(b, "spool/v1"...)
	for _, s := range []string{agent, owner, id} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return binary.BigEndian.AppendUint64(b, uint64(position))
}

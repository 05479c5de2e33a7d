package seal

import (
	"errors"
	"fmt"
)

// Keyring seals with a current protector and opens with whichever of its
// protectors holds the key a value was sealed with, so data sealed before
// and after a key change reads alike. It is safe for concurrent use.
//
// # Rotation
//
// A store rotates keys (spool keys rotate) like this:
//
//  1. Make the new key durable first (key file written and synced, or the
//     new SPOOL_ENCRYPTION_KEY recorded), keeping the old key: a crash must
//     never leave data sealed under a key that is nowhere.
//  2. Read and write through NewKeyring(newProtector, oldProtector), so
//     every line opens whichever key sealed it.
//  3. Rewrite each session on its own: open every line, seal it again with
//     the keyring (which seals under the new key) bound to the same
//     AssociatedData, write the whole session to a temporary file in the
//     same folder, sync it, rename it over the old file, sync the folder
//     (a database: one transaction per session). Hold the session's lock
//     meanwhile, so no append lands in the old file after it was read.
//     A crash half-way thus leaves every session wholly under the old key
//     or wholly under the new one, and both are readable through the
//     keyring; running the rotation again finishes the job (a session
//     already under the new key is rewritten unchanged in meaning).
//  4. Only when every session is done, drop the old key. Until then, every
//     reader needs the keyring with both keys.
type Keyring struct {
	all []Protector // all[0] is the current protector
}

// NewKeyring returns a keyring that seals with current and opens with
// current or any of previous, tried in that order.
func NewKeyring(current Protector, previous ...Protector) (*Keyring, error) {
	all := append([]Protector{current}, previous...)
	for i, p := range all {
		if p == nil {
			return nil, fmt.Errorf("seal: NewKeyring: protector %d is nil", i)
		}
	}
	return &Keyring{all: all}, nil
}

// Current returns the protector the keyring seals with. A value that
// Current().Open opens is already under the current key.
func (k *Keyring) Current() Protector { return k.all[0] }

// Seal seals with the current protector.
func (k *Keyring) Seal(plaintext, ad []byte) ([]byte, error) {
	return k.all[0].Seal(plaintext, ad)
}

// Open opens sealed with the first protector that does not report
// ErrWrongKey. It fails with ErrWrongKey when none holds the key, and with
// that protector's error (ErrTampered) when the one holding the key finds
// the value changed or bound elsewhere.
func (k *Keyring) Open(sealed, ad []byte) ([]byte, error) {
	var first error
	for _, p := range k.all {
		pt, err := p.Open(sealed, ad)
		if !errors.Is(err, ErrWrongKey) {
			return pt, err
		}
		if first == nil {
			first = err
		}
	}
	if len(k.all) == 1 {
		return nil, first
	}
	return nil, fmt.Errorf("%w (none of the keyring's %d keys)", first, len(k.all))
}

//go:build !windows

package seal

import "fmt"

// DPAPI is the Windows Data Protection API protector. Outside Windows it
// cannot be made (NewDPAPI fails with ErrUnavailable); the type exists so
// code naming it compiles on every OS.
type DPAPI struct{}

// NewDPAPI fails with ErrUnavailable outside Windows.
func NewDPAPI() (*DPAPI, error) { return nil, ErrUnavailable }

// Default returns the platform's protector that needs no key to be kept:
// nil outside Windows. Stores do not apply it by themselves; lines are
// stored plain unless a protector is passed (an AEAD key from
// SPOOL_ENCRYPTION_KEY or a key file, with WithProtector).
func Default() Protector { return nil }

// Seal fails with ErrUnavailable.
func (*DPAPI) Seal(plaintext, ad []byte) ([]byte, error) { return nil, ErrUnavailable }

// Open fails with an error matching both ErrWrongKey (as the Protector
// contract asks of a protector without the key) and ErrUnavailable.
func (*DPAPI) Open(sealed, ad []byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: %w", ErrWrongKey, ErrUnavailable)
}

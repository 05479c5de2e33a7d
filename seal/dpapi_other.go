//go:build !windows

package seal

import "fmt"

// DPAPI is the Windows Data Protection API protector. Outside Windows it
// cannot be made (NewDPAPI fails with ErrUnavailable); the type exists so
// code naming it compiles on every OS.
type DPAPI struct{}

// NewDPAPI fails with ErrUnavailable outside Windows.
func NewDPAPI() (*DPAPI, error) { return nil, ErrUnavailable }

// Default returns the protector stores use when none is configured: nil
// outside Windows, meaning lines are stored plain unless an AEAD key is
// switched on (SPOOL_ENCRYPTION_KEY or a key file).
func Default() Protector { return nil }

// Seal fails with ErrUnavailable.
func (*DPAPI) Seal(plaintext, ad []byte) ([]byte, error) { return nil, ErrUnavailable }

// Open fails with an error matching both ErrWrongKey (as the Protector
// contract asks of a protector without the key) and ErrUnavailable.
func (*DPAPI) Open(sealed, ad []byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: %w", ErrWrongKey, ErrUnavailable)
}

//go:build windows

package seal

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/windows"
)

// DPAPI seals with the Windows Data Protection API under the current user's
// master key (CryptProtectData without CRYPTPROTECT_LOCAL_MACHINE), so only
// the same user, on this machine or one roaming the profile, can open what
// it seals. The associated data is passed as DPAPI's optional entropy, which
// binds it like an AEAD's associated data. It is safe for concurrent use.
//
// DPAPI blobs carry no key id this package can check, so Open tells the
// failures apart as well as Windows reports them: NTE_BAD_KEY_STATE (the
// blob's master key is not the user's: another user or machine) becomes
// ErrWrongKey, and every other failure, wrong entropy included, ErrTampered.
type DPAPI struct{}

// NewDPAPI returns the protector for the current user. It does not fail on
// Windows; the error is for the other OSes.
func NewDPAPI() (*DPAPI, error) { return &DPAPI{}, nil }

// Default returns the platform's protector that needs no key to be kept:
// on Windows, DPAPI for the current user. Stores do not apply it by
// themselves; pass it with their WithProtector option.
func Default() Protector { return &DPAPI{} }

// Seal returns 0x02 followed by the DPAPI blob of plaintext with ad as
// entropy.
func (*DPAPI) Seal(plaintext, ad []byte) ([]byte, error) {
	if uint64(len(plaintext)) > math.MaxUint32 || uint64(len(ad)) > math.MaxUint32 {
		return nil, errors.New("seal: DPAPI: value too large")
	}
	var out windows.DataBlob
	err := windows.CryptProtectData(dataBlob(plaintext), nil, entropy(ad), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out)
	if err != nil {
		return nil, fmt.Errorf("seal: DPAPI CryptProtectData: %w", err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	sealed := make([]byte, 1+int(out.Size))
	sealed[0] = formatDPAPI
	copy(sealed[1:], unsafe.Slice(out.Data, out.Size))
	return sealed, nil
}

// Open returns the plaintext of a value Seal returned for ad.
func (*DPAPI) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrTampered)
	}
	switch sealed[0] {
	case formatDPAPI:
	case formatAEAD:
		return nil, fmt.Errorf("%w: sealed with an AEAD key, not DPAPI", ErrWrongKey)
	default:
		return nil, fmt.Errorf("%w: unknown format byte 0x%02x", ErrTampered, sealed[0])
	}
	if len(sealed) < 2 || uint64(len(sealed)-1) > math.MaxUint32 || uint64(len(ad)) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: DPAPI blob of %d bytes", ErrTampered, len(sealed)-1)
	}
	var out windows.DataBlob
	err := windows.CryptUnprotectData(dataBlob(sealed[1:]), nil, entropy(ad), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out)
	if err != nil {
		var errno windows.Errno
		if errors.As(err, &errno) && errno == windows.Errno(windows.NTE_BAD_KEY_STATE) {
			return nil, fmt.Errorf("%w: DPAPI: the blob's master key is not this user's (%v)", ErrWrongKey, err)
		}
		return nil, fmt.Errorf("%w: DPAPI CryptUnprotectData: %v", ErrTampered, err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	pt := make([]byte, int(out.Size))
	copy(pt, unsafe.Slice(out.Data, out.Size))
	return pt, nil
}

// dataBlob points DPAPI at b; an empty b still gets a valid pointer, since
// DPAPI rejects a NULL pbData for input.
func dataBlob(b []byte) *windows.DataBlob {
	if len(b) == 0 {
		var zero byte
		return &windows.DataBlob{Data: &zero}
	}
	return &windows.DataBlob{Size: uint32(len(b)), Data: &b[0]}
}

// entropy returns nil for empty ad, so sealing and opening agree on "no
// entropy" however the caller spells empty.
func entropy(ad []byte) *windows.DataBlob {
	if len(ad) == 0 {
		return nil
	}
	return dataBlob(ad)
}

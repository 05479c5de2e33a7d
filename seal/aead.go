package seal

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Format bytes: the first byte of every sealed value.
const (
	formatAEAD  byte = 0x01
	formatDPAPI byte = 0x02
)

// KeySize is the length of an AEAD key in bytes.
const KeySize = 32

const (
	keyIDSize  = 8
	headerSize = 1 + keyIDSize
	aeadPrefix = headerSize + chacha20poly1305.NonceSizeX
	aeadMin    = aeadPrefix + chacha20poly1305.Overhead
)

// HKDF info strings; changing them changes every key id and cipher key.
const (
	infoKeyID  = "spool/seal/v1 key id"
	infoCipher = "spool/seal/v1 xchacha20poly1305"
)

// AEAD seals with XChaCha20-Poly1305 under one 32-byte key. It is safe for
// concurrent use. See the package documentation for the format.
type AEAD struct {
	aead cipher.AEAD
	id   [keyIDSize]byte
}

// NewAEAD returns a protector for key, which must be KeySize random bytes
// (GenerateKey, KeyFromEnv, LoadOrCreateKeyFile). The key is not kept: only
// keys derived from it are.
func NewAEAD(key []byte) (*AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key is %d bytes, want %d", len(key), KeySize)
	}
	id, err := hkdf.Key(sha256.New, key, nil, infoKeyID, keyIDSize)
	if err != nil {
		return nil, fmt.Errorf("seal: deriving key id: %w", err)
	}
	ck, err := hkdf.Key(sha256.New, key, nil, infoCipher, chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("seal: deriving cipher key: %w", err)
	}
	c, err := chacha20poly1305.NewX(ck)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	a := &AEAD{aead: c}
	copy(a.id[:], id)
	return a, nil
}

// KeyID returns the key's fingerprint in hex (16 characters), as stored in
// every value it seals. It is safe to show: it reveals nothing usable about
// the key, and tells users which key a store was sealed with.
func (a *AEAD) KeyID() string { return hex.EncodeToString(a.id[:]) }

// Seal returns plaintext sealed and bound to ad, in the format described in
// the package documentation. Each call draws a fresh random nonce.
func (a *AEAD) Seal(plaintext, ad []byte) ([]byte, error) {
	out := make([]byte, aeadPrefix, aeadMin+len(plaintext))
	out[0] = formatAEAD
	copy(out[1:headerSize], a.id[:])
	nonce := out[headerSize:aeadPrefix]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: reading random nonce: %w", err)
	}
	return a.aead.Seal(out, nonce, plaintext, a.fullAD(out[:headerSize], ad)), nil
}

// Open returns the plaintext of sealed. It fails with ErrWrongKey when sealed
// carries another key id or another format's byte, and with ErrTampered when
// it is too short, of an unknown format, changed, or bound to other ad.
func (a *AEAD) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrTampered)
	}
	switch sealed[0] {
	case formatAEAD:
	case formatDPAPI:
		return nil, fmt.Errorf("%w: sealed with Windows DPAPI, not an AEAD key", ErrWrongKey)
	default:
		return nil, fmt.Errorf("%w: unknown format byte 0x%02x", ErrTampered, sealed[0])
	}
	if len(sealed) < aeadMin {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d of an empty sealed value", ErrTampered, len(sealed), aeadMin)
	}
	if subtle.ConstantTimeCompare(sealed[1:headerSize], a.id[:]) != 1 {
		return nil, fmt.Errorf("%w: sealed with key id %x, this key is %s", ErrWrongKey, sealed[1:headerSize], a.KeyID())
	}
	pt, err := a.aead.Open(nil, sealed[headerSize:aeadPrefix], sealed[aeadPrefix:], a.fullAD(sealed[:headerSize], ad))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrTampered)
	}
	return pt, nil
}

// fullAD binds the header (format and key id) along with the caller's ad.
func (a *AEAD) fullAD(header, ad []byte) []byte {
	b := make([]byte, 0, len(header)+len(ad))
	return append(append(b, header...), ad...)
}

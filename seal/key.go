package seal

import "crypto/rand"

// GenerateKey returns KeySize fresh random bytes for NewAEAD. It cannot
// fail: crypto/rand.Read never returns an error since Go 1.24.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

package seal_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/spool-go/spool/seal"
)

// A store seals each line bound to its session and position, and writes the
// sealed line followed by a newline.
func Example() {
	// In a program: seal.KeyFromEnv(), or seal.LoadOrCreateKeyFile(path).
	p, err := seal.NewAEAD(seal.GenerateKey())
	if err != nil {
		log.Fatal(err)
	}
	plain := []byte(`{"type":"message","text":"hi"}`)
	line, err := seal.SealLine(p, plain, seal.AssociatedData("agent", "alice", "s1", 0))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sealed:", seal.IsSealedLine(line))

	got, err := seal.OpenLine(p, line, seal.AssociatedData("agent", "alice", "s1", 0))
	fmt.Println(string(got), err)

	// The same line read back at another position does not open.
	_, err = seal.OpenLine(p, line, seal.AssociatedData("agent", "alice", "s1", 1))
	fmt.Println(errors.Is(err, seal.ErrTampered))
	// Output:
	// sealed: true
	// {"type":"message","text":"hi"} <nil>
	// true
}

// During a key rotation, a keyring reads lines under the old and new keys
// and seals under the new one.
func ExampleNewKeyring() {
	oldKey, _ := seal.NewAEAD(seal.GenerateKey())
	newKey, _ := seal.NewAEAD(seal.GenerateKey())
	ad := seal.AssociatedData("agent", "alice", "s1", 0)
	before, _ := seal.SealLine(oldKey, []byte(`{"n":1}`), ad)

	ring, _ := seal.NewKeyring(newKey, oldKey)
	plain, _ := seal.OpenLine(ring, before, ad)
	after, _ := seal.SealLine(ring, plain, ad)

	_, err := seal.OpenLine(oldKey, after, ad)
	fmt.Println(string(plain), errors.Is(err, seal.ErrWrongKey))
	// Output: {"n":1} true
}

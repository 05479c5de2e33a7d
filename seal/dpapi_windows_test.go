//go:build windows

package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestDPAPIRoundTrip(t *testing.T) {
	d, err := NewDPAPI()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Default().(*DPAPI); !ok {
		t.Fatalf("Default() = %T, want *DPAPI on Windows", Default())
	}
	ad := AssociatedData("a", "o", "s", 0)
	for _, plain := range [][]byte{nil, []byte(`{"text":"secret"}`)} {
		line, err := SealLine(d, plain, ad)
		if err != nil {
			t.Fatal(err)
		}
		got, err := OpenLine(d, line, ad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		if _, err := OpenLine(d, line, AssociatedData("a", "o", "s", 1)); !errors.Is(err, ErrTampered) {
			t.Fatalf("other position: err = %v, want ErrTampered", err)
		}
	}
}

func TestDPAPIErrors(t *testing.T) {
	d, _ := NewDPAPI()
	ad := AssociatedData("a", "o", "s", 0)
	sealed, err := d.Seal([]byte("secret"), ad)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(sealed)
	bad[len(bad)-1] ^= 1
	if _, err := d.Open(bad, ad); !errors.Is(err, ErrTampered) {
		t.Errorf("flipped byte: err = %v, want ErrTampered", err)
	}
	aead, _ := NewAEAD(GenerateKey())
	fromAEAD, _ := aead.Seal([]byte("x"), ad)
	if _, err := d.Open(fromAEAD, ad); !errors.Is(err, ErrWrongKey) {
		t.Errorf("AEAD value: err = %v, want ErrWrongKey", err)
	}
	if _, err := aead.Open(sealed, ad); !errors.Is(err, ErrWrongKey) {
		t.Errorf("AEAD opening DPAPI value: err = %v, want ErrWrongKey", err)
	}
	// A keyring migrating from DPAPI to an AEAD key reads both.
	k, _ := NewKeyring(aead, d)
	if got, err := k.Open(sealed, ad); err != nil || string(got) != "secret" {
		t.Errorf("keyring: %q, %v", got, err)
	}
}

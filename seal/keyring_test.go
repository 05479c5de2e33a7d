package seal

import (
	"errors"
	"testing"
)

func TestKeyringOpensOldAndNew(t *testing.T) {
	oldP, newP := testAEAD(t), testAEAD(t)
	ad := AssociatedData("a", "o", "s", 0)
	oldLine, _ := SealLine(oldP, []byte("old"), ad)

	k, err := NewKeyring(newP, oldP)
	if err != nil {
		t.Fatal(err)
	}
	newLine, err := SealLine(k, []byte("new"), ad)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{string(oldLine): "old", string(newLine): "new"} {
		got, err := OpenLine(k, []byte(line), ad)
		if err != nil || string(got) != want {
			t.Fatalf("keyring opened %q, %v; want %q", got, err, want)
		}
	}
	// The keyring seals under the current key only.
	if _, err := OpenLine(oldP, newLine, ad); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("old key opened a line the keyring sealed: %v", err)
	}
	if _, err := OpenLine(k.Current(), newLine, ad); err != nil {
		t.Fatalf("Current() cannot open what the keyring sealed: %v", err)
	}
}

func TestKeyringErrors(t *testing.T) {
	oldP, newP, stranger := testAEAD(t), testAEAD(t), testAEAD(t)
	k, _ := NewKeyring(newP, oldP)
	ad := AssociatedData("a", "o", "s", 0)

	foreign, _ := SealLine(stranger, []byte("x"), ad)
	if _, err := OpenLine(k, foreign, ad); !errors.Is(err, ErrWrongKey) {
		t.Errorf("foreign key: err = %v, want ErrWrongKey", err)
	}
	moved, _ := SealLine(oldP, []byte("x"), AssociatedData("a", "o", "s", 1))
	if _, err := OpenLine(k, moved, ad); !errors.Is(err, ErrTampered) {
		t.Errorf("moved line under previous key: err = %v, want ErrTampered", err)
	}
	if _, err := NewKeyring(nil); err == nil {
		t.Error("NewKeyring(nil) succeeded")
	}
	if _, err := NewKeyring(newP, oldP, nil); err == nil {
		t.Error("NewKeyring with a nil previous succeeded")
	}
}

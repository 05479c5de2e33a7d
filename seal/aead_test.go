package seal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// goldenLine was sealed by this package under key 0x00..0x1f and checked
// against an independent implementation of the documented format
// (HKDF-SHA256, HChaCha20 and ChaCha20-Poly1305 from another library). Data
// at rest must stay readable: if this test breaks, the format changed.
const goldenLine = "!AXyL45YSASLvnOG7Ev5IiOiSaFGVGYr1ed78O+V7gI9mKtA/etaZbI0a4Nl3Tjpyr0J5zoH61ug57nmhFQOaxG/ks4QrPqE2UzJUT00jhxtHPBU"

func goldenKey() []byte {
	k := make([]byte, KeySize)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func TestGoldenFormat(t *testing.T) {
	a, err := NewAEAD(goldenKey())
	if err != nil {
		t.Fatal(err)
	}
	if got := a.KeyID(); got != "7c8be396120122ef" {
		t.Fatalf("KeyID = %s", got)
	}
	got, err := OpenLine(a, []byte(goldenLine), AssociatedData("agent", "owner", "s1", 7))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"message","text":"golden"}`; string(got) != want {
		t.Fatalf("opened %q, want %q", got, want)
	}
}

func TestAEADRoundTripAndLayout(t *testing.T) {
	a := testAEAD(t)
	ad := []byte("ad")
	pt := []byte("hello")
	s1, err := a.Seal(pt, ad)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1) != aeadMin+len(pt) {
		t.Fatalf("len = %d, want %d", len(s1), aeadMin+len(pt))
	}
	if s1[0] != formatAEAD || hex.EncodeToString(s1[1:9]) != a.KeyID() {
		t.Fatalf("header % x does not carry format and key id %s", s1[:9], a.KeyID())
	}
	s2, _ := a.Seal(pt, ad)
	if bytes.Equal(s1[9:33], s2[9:33]) {
		t.Fatal("two seals share a nonce")
	}
	got, err := a.Open(s1, ad)
	if err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

func TestAEADFlippedBytes(t *testing.T) {
	a := testAEAD(t)
	ad := AssociatedData("a", "o", "s", 0)
	sealed, err := a.Seal([]byte(`{"text":"secret"}`), ad)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		_, err := a.Open(bad, ad)
		want := ErrTampered
		if i >= 1 && i < headerSize {
			want = ErrWrongKey // a changed key id looks like another key
		}
		if !errors.Is(err, want) {
			t.Fatalf("byte %d flipped: err = %v, want %v", i, err, want)
		}
	}
}

func TestAEADOpenErrors(t *testing.T) {
	a := testAEAD(t)
	sealed, _ := a.Seal([]byte("x"), nil)
	other := testAEAD(t)
	dpapiLike := append([]byte{formatDPAPI}, sealed[1:]...)
	cases := []struct {
		name   string
		p      Protector
		sealed []byte
		want   error
	}{
		{"other key", other, sealed, ErrWrongKey},
		{"dpapi format", a, dpapiLike, ErrWrongKey},
		{"unknown format", a, append([]byte{0x7f}, sealed[1:]...), ErrTampered},
		{"empty", a, nil, ErrTampered},
		{"header only", a, sealed[:headerSize], ErrTampered},
		{"no tag", a, sealed[:aeadPrefix], ErrTampered},
		{"appended byte", a, append(bytes.Clone(sealed), 0), ErrTampered},
	}
	for _, c := range cases {
		if _, err := c.p.Open(c.sealed, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestNewAEADKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := NewAEAD(make([]byte, n)); err == nil {
			t.Errorf("NewAEAD accepted a %d-byte key", n)
		}
	}
}

func TestKeyIDStableAndDistinct(t *testing.T) {
	k := GenerateKey()
	a1, _ := NewAEAD(k)
	a2, _ := NewAEAD(bytes.Clone(k))
	if a1.KeyID() != a2.KeyID() {
		t.Fatal("same key, different key ids")
	}
	if a1.KeyID() == testAEAD(t).KeyID() {
		t.Fatal("different keys, same key id")
	}
	if bytes.Contains([]byte(a1.KeyID()), []byte(hex.EncodeToString(k[:8]))) {
		t.Fatal("key id shows key bytes")
	}
}

func TestAEADConcurrent(t *testing.T) {
	a := testAEAD(t)
	done := make(chan error)
	for g := range 8 {
		go func() {
			ad := AssociatedData("a", "o", "s", g)
			for range 100 {
				s, err := a.Seal([]byte("payload"), ad)
				if err == nil {
					_, err = a.Open(s, ad)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

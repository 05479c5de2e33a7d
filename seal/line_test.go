package seal

import (
	"bytes"
	"errors"
	"testing"
)

func testAEAD(t testing.TB) *AEAD {
	t.Helper()
	a, err := NewAEAD(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLineRoundTrip(t *testing.T) {
	a := testAEAD(t)
	ad := AssociatedData("agent", "owner", "s1", 3)
	for _, plain := range []string{``, `{}`, `{"type":"message","text":"hello\nworld"}`} {
		line, err := SealLine(a, []byte(plain), ad)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealedLine(line) {
			t.Fatalf("IsSealedLine(%q) = false", line)
		}
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("sealed line holds a newline: %q", line)
		}
		if bytes.Contains(line, []byte(plain)) && len(plain) > 2 {
			t.Fatalf("sealed line shows the plaintext: %q", line)
		}
		for _, in := range [][]byte{line, append(bytes.Clone(line), '\n'), append(bytes.Clone(line), "\r\n"...)} {
			got, err := OpenLine(a, in, ad)
			if err != nil {
				t.Fatalf("OpenLine: %v", err)
			}
			if string(got) != plain {
				t.Fatalf("OpenLine = %q, want %q", got, plain)
			}
		}
	}
}

func TestLineBoundToPlace(t *testing.T) {
	a := testAEAD(t)
	line, err := SealLine(a, []byte(`{"n":1}`), AssociatedData("agent", "owner", "s1", 0))
	if err != nil {
		t.Fatal(err)
	}
	for name, ad := range map[string][]byte{
		"other position": AssociatedData("agent", "owner", "s1", 1),
		"other session":  AssociatedData("agent", "owner", "s2", 0),
		"other owner":    AssociatedData("agent", "owner2", "s1", 0),
		"other agent":    AssociatedData("agent2", "owner", "s1", 0),
		"no ad":          nil,
	} {
		if _, err := OpenLine(a, line, ad); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: err = %v, want ErrTampered", name, err)
		}
	}
}

func TestOpenLineErrors(t *testing.T) {
	a := testAEAD(t)
	ad := AssociatedData("a", "o", "s", 0)
	line, err := SealLine(a, []byte(`{"n":1}`), ad)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		line []byte
		p    Protector
		want error
	}{
		{"plain json", []byte(`{"n":1}`), a, ErrNotSealed},
		{"empty", nil, a, ErrNotSealed},
		{"marker only", []byte("!"), a, ErrTampered},
		{"bad base64", []byte("!abc*def"), a, ErrTampered},
		{"padded base64", append(bytes.Clone(line), '='), a, ErrTampered},
		{"truncated", line[:len(line)-4], a, ErrTampered},
		{"other key", line, testAEAD(t), ErrWrongKey},
		{"nil protector", line, nil, ErrWrongKey},
	}
	for _, c := range cases {
		if _, err := OpenLine(c.p, c.line, ad); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestSealLineNilProtector(t *testing.T) {
	if _, err := SealLine(nil, []byte("{}"), nil); err == nil {
		t.Fatal("SealLine(nil) succeeded")
	}
}

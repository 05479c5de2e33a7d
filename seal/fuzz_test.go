package seal

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzOpenLine feeds arbitrary lines to OpenLine through a keyring of two
// keys: it must never panic, and must fail only with the package's errors.
func FuzzOpenLine(f *testing.F) {
	a, _ := NewAEAD(goldenKey())
	b, _ := NewAEAD(bytes.Repeat([]byte{7}, KeySize))
	k, _ := NewKeyring(b, a)
	ad := AssociatedData("agent", "owner", "s1", 7)
	other, _ := SealLine(b, []byte(`{"x":1}`), ad)
	for _, seed := range []string{goldenLine, string(other), "", "!", "!AQ", "{}", "!" + goldenLine, goldenLine + "\r\n", goldenLine[:60]} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		pt, err := OpenLine(k, line, ad)
		if err == nil {
			// Only lines sealed for ad open, and only two plaintexts were
			// ever sealed (the worker processes' "other" lines differ in
			// nonce, so compare plaintexts, not lines).
			if string(pt) != `{"type":"message","text":"golden"}` && string(pt) != `{"x":1}` {
				t.Fatalf("opened a line nobody sealed: %q -> %q", line, pt)
			}
			return
		}
		if !errors.Is(err, ErrTampered) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrNotSealed) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		if pt != nil {
			t.Fatal("plaintext returned with an error")
		}
	})
}

// FuzzRoundTrip seals arbitrary content for arbitrary places and checks it
// opens exactly there.
func FuzzRoundTrip(f *testing.F) {
	a, _ := NewAEAD(goldenKey())
	f.Add([]byte(`{"type":"message"}`), "agent", "owner", "id", 0)
	f.Add([]byte{}, "", "", "", -1)
	f.Add([]byte("line\nwith\rbreaks\x00"), "a/b", "ö", "../x", 1<<40)
	f.Fuzz(func(t *testing.T, plain []byte, agent, owner, id string, pos int) {
		ad := AssociatedData(agent, owner, id, pos)
		line, err := SealLine(a, plain, ad)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealedLine(line) || bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("not a single sealed line: %q", line)
		}
		got, err := OpenLine(a, line, ad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		if _, err := OpenLine(a, line, AssociatedData(agent, owner, id, pos+1)); !errors.Is(err, ErrTampered) {
			t.Fatalf("opened at the next position: %v", err)
		}
		if _, err := OpenLine(a, line, AssociatedData(agent, owner, id+"x", pos)); !errors.Is(err, ErrTampered) {
			t.Fatalf("opened in another session: %v", err)
		}
	})
}

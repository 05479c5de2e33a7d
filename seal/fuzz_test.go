package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
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

// FuzzParseKey gives ParseKey arbitrary text, as SPOOL_ENCRYPTION_KEY or a
// key file holds it: it never panics, accepts only KeySize bytes, reads
// back every key EncodeKey writes (padding optional, whitespace around
// ignored), and fails only with ErrInvalidKey, never quoting the text.
func FuzzParseKey(f *testing.F) {
	golden := EncodeKey(goldenKey())
	for _, seed := range []string{
		golden, golden + "\n", " \t" + golden + "\r\n", strings.TrimRight(golden, "="), golden + "=",
		golden[:40], golden + golden, "", " ", "not base64 at all!", strings.Repeat("A", 43) + "B",
		base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, KeySize)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) || key != nil {
				t.Fatalf("ParseKey: %v with %d bytes, want ErrInvalidKey and no key", err, len(key))
			}
			if v := strings.TrimSpace(s); len(v) >= 12 && strings.Contains(err.Error(), v) {
				t.Fatalf("ParseKey's error quotes the text: %v", err)
			}
			return
		}
		if len(key) != KeySize {
			t.Fatalf("ParseKey accepted %d bytes, want %d", len(key), KeySize)
		}
		enc := EncodeKey(key)
		for _, form := range []string{enc, strings.TrimRight(enc, "="), "\n" + enc + " \n"} {
			if back, err := ParseKey(form); err != nil || !bytes.Equal(back, key) {
				t.Fatalf("ParseKey(%q) = %x, %v; want %x", form, back, err, key)
			}
		}
	})
}

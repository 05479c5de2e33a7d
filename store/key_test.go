package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
)

func TestValidID(t *testing.T) {
	valid := []string{
		"a", "Z", "0",
		strings.Repeat("a", store.MaxIDLength),
		"a.b", "a_b", "a@b", "a-b", "._@-", "...", ".hidden", "trailing.", "-", "@", "_",
		"user@example.com", "01JF0000000000000000000000", "AbC-09_x.y@z",
	}
	for _, id := range valid {
		if !store.ValidID(id) {
			t.Errorf("ValidID(%q) = false, want true", id)
		}
	}
	invalid := []string{
		"", ".", "..",
		strings.Repeat("a", store.MaxIDLength+1),
		"../x", "a/b", `a\b`, "a:b", "a b", "a\x00b", "a\nb", "a\tb", "s\u0430ss", "é", "a*", "a?", "a%2F",
		"a#b", "a+b", "a=b", "a,b", "a;b", "a'b", `a"b`, "a<b", "a>b", "a|b", "a~b", "a!b", "a$b", "a&b", "(a)", "[a]", "{a}",
		"\xff", "a\u200bb", // invalid UTF-8, a zero-width space
	}
	for _, id := range invalid {
		if store.ValidID(id) {
			t.Errorf("ValidID(%q) = true, want false", id)
		}
	}
	// Every byte: exactly the documented set is allowed.
	for c := range 256 {
		want := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("._@-", rune(c))
		if got := store.ValidID("x" + string(byte(c)) + "x"); got != want {
			t.Errorf("ValidID with byte %#x = %v, want %v", c, got, want)
		}
	}
}

func TestValidateKey(t *testing.T) {
	long := strings.Repeat("k", 200)
	tests := []struct {
		key      store.Key
		ok       bool
		mentions string // a part of the error message
	}{
		{store.Key{Agent: "a", ID: "s"}, true, ""},
		{store.Key{Agent: "a", Owner: "o", ID: "s"}, true, ""},
		{store.Key{Agent: strings.Repeat("a", 128), Owner: strings.Repeat("o", 128), ID: strings.Repeat("s", 128)}, true, ""},
		{store.Key{Agent: "", ID: "s"}, false, "empty agent"},
		{store.Key{Agent: "a", ID: ""}, false, "empty session id"},
		{store.Key{Agent: "a/b", ID: "s"}, false, `agent "a/b"`},
		{store.Key{Agent: "a", Owner: "..", ID: "s"}, false, `owner ".."`},
		{store.Key{Agent: "a", Owner: "o", ID: "../x"}, false, `session id "../x"`},
		{store.Key{Agent: "a", ID: long}, false, "of 200 bytes (at most 128)"},
		{store.Key{Agent: strings.Repeat("a", 129), ID: "s"}, false, "of 129 bytes"},
	}
	for _, tt := range tests {
		err := store.ValidateKey(tt.key)
		if tt.ok {
			if err != nil {
				t.Errorf("ValidateKey(%+v) = %v, want nil", tt.key, err)
			}
			continue
		}
		if !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("ValidateKey(%+v) = %v, want ErrInvalidKey", tt.key, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("ValidateKey(%+v) = %q, want it to mention %q", tt.key, err, tt.mentions)
		}
		if len(err.Error()) > 200 {
			t.Errorf("ValidateKey error is %d bytes long; a long id must be cut short in it", len(err.Error()))
		}
	}
	if err := store.ValidateNamespace(store.Namespace{Agent: "a"}); err != nil {
		t.Errorf("ValidateNamespace of the project scope: %v", err)
	}
	if err := store.ValidateNamespace(store.Namespace{Agent: "a", Owner: "a:b"}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("ValidateNamespace with owner a:b = %v, want ErrInvalidKey", err)
	}
}

func TestKeyAndNamespaceStrings(t *testing.T) {
	k := store.Key{Agent: "a", Owner: "o", ID: "s"}
	if k.String() != "a/o/s" || k.Namespace().String() != "a/o" {
		t.Errorf("user key renders as %q in the namespace %q", k, k.Namespace())
	}
	p := store.Key{Agent: "a", ID: "s"}
	if p.String() != "a/s" || p.Namespace().String() != "a" {
		t.Errorf("project key renders as %q in the namespace %q", p, p.Namespace())
	}
	if k.Namespace().Key("s") != k {
		t.Errorf("Namespace.Key does not give the key back")
	}
	info := store.SessionInfo{ID: "s", Agent: "a", Owner: "o"}
	if info.Key() != k {
		t.Errorf("SessionInfo.Key = %+v, want %+v", info.Key(), k)
	}
}

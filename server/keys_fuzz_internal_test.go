package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadAPIKeys gives LoadAPIKeys an arbitrary keys file and the server
// an arbitrary Authorization header. Loading never panics; its error is
// the package's ("server: …" or ErrKeysFileMode) and shows none of the
// file's keys; a file it loads has as many keys as entries, and each key
// that a header can carry authenticates as its entry; and a header
// authenticates only with a key (or a key whose digest) the file lists.
func FuzzLoadAPIKeys(f *testing.F) {
	const alice, project = "alice-key-0123456789", "project-key-0123456789"
	sum := sha256.Sum256([]byte(project))
	for _, seed := range []struct{ file, auth string }{
		{`{"keys":[{"name":"a","key":"` + alice + `","user":"alice"},{"key":"` + project + `","project":true}]}`, "Bearer " + alice},
		{`{"keys":[{"name":"backend","sha256":"` + hex.EncodeToString(sum[:]) + `","project":true}]}`, "bearer  " + project + " "},
		{`{"keys":[{"key":"` + alice + `","usr":"alice"}]}`, "Basic " + alice},
		{`{"keys":[{"key":"short","project":true}]}`, "Bearer"},
		{`{"keys":[{"key":"` + alice + `","user":"a/b"}]}`, "Bearer short"},
		{`{"keys":[{"key":"` + alice + `","project":true},{"key":"` + alice + `","user":"a"}]}`, ""},
		{`{"keys":[{"key":"` + alice + `","project":true}]} ,`, "Bearer " + alice},
		{`{"keys":[{"key":"` + alice + `","project":true}]}` + "\n" + `{"keys":[]}`, "Bearer " + alice},
		{`{"keys":[{"key":"` + alice + `"`, "Bearer " + alice},
		{`{"keys":[{"sha256":"` + strings.Repeat("G", 64) + `","project":true}]}`, "Bearer " + alice},
		{`keys:`, "Bearer \x00"},
	} {
		f.Add(seed.file, seed.auth)
	}
	f.Fuzz(func(t *testing.T, file, auth string) {
		path := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		var listed struct{ Keys []APIKey }
		json.Unmarshal([]byte(file), &listed)
		k, err := LoadAPIKeys(path)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "server: ") && !errors.Is(err, ErrKeysFileMode) {
				t.Fatalf("error %q is not the package's", err)
			}
			for _, e := range listed.Keys {
				if len(e.Key) >= minKeyLen && strings.Contains(err.Error(), e.Key) {
					t.Fatalf("error %q shows the key %q", err, e.Key)
				}
			}
			return
		}
		if k.Len() != len(listed.Keys) {
			t.Fatalf("%d keys loaded from %d entries", k.Len(), len(listed.Keys))
		}
		s := &Server{opts: Options{Keys: k}}
		for _, e := range listed.Keys {
			if e.Key == "" || e.Key != strings.TrimSpace(e.Key) {
				continue // authenticate trims the key it is given: this one never matches
			}
			id, aerr := s.authenticate(http.Header{"Authorization": {"Bearer " + e.Key}})
			if aerr != nil || id.User != e.User || id.Project != e.Project {
				t.Fatalf("key %q of entry %+v authenticates as %+v, %v", e.Key, e, id, aerr)
			}
		}
		id, aerr := s.authenticate(http.Header{"Authorization": {auth}})
		if aerr != nil {
			if aerr.Status != http.StatusUnauthorized {
				t.Fatalf("Authorization %q: status %d, want 401", auth, aerr.Status)
			}
			return
		}
		_, tok, _ := strings.Cut(auth, " ")
		tok = strings.TrimSpace(tok)
		d := sha256.Sum256([]byte(tok))
		for _, e := range listed.Keys {
			if (e.Key == tok || strings.EqualFold(e.SHA256, hex.EncodeToString(d[:]))) && e.User == id.User && e.Project == id.Project {
				return
			}
		}
		t.Fatalf("Authorization %q authenticates as %+v, which no entry of %q is", auth, id, file)
	})
}

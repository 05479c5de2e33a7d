package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"runtime"
	"strings"

	"github.com/spool-go/spool/store"
)

// APIKeys maps bearer keys to identities. Make one with NewAPIKeys or LoadAPIKeys.
// APIKeys are kept only as SHA-256 digests and compared in constant time, so
// neither a key's content nor its length leaks through timing.
type APIKeys struct {
	entries []keyEntry
}

type keyEntry struct {
	digest [sha256.Size]byte
	id     Identity
}

// APIKey is one entry of a keys file:
//
//	{"keys": [
//	  {"name": "alice-laptop", "key": "…", "user": "alice"},
//	  {"name": "backend", "sha256": "9f86d0…", "project": true}
//	]}
//
// Each entry has the key itself (APIKey) or its SHA-256 digest in hex
// (SHA256, so the file need not hold the secret), and exactly one of User
// (the key acts for that user) or Project (project access). Name labels the
// key in logs; the key never appears there.
type APIKey struct {
	Name    string `json:"name,omitempty"`
	Key     string `json:"key,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	User    string `json:"user,omitempty"`
	Project bool   `json:"project,omitempty"`
}

// Identity is who a request acts as.
type Identity struct {
	// Name labels the key that authenticated the request ("" when the
	// server has no keys).
	Name string
	// User is the user a user key acts for.
	User string
	// Project is true for project access: a project key, or any request
	// to a server without keys.
	Project bool
}

// minKeyLen is the shortest key accepted: shorter ones can be guessed.
const minKeyLen = 16

// NewAPIKeys returns the keys of entries, or an error naming the first bad
// entry.
func NewAPIKeys(entries ...APIKey) (*APIKeys, error) {
	k := &APIKeys{}
	seen := map[[sha256.Size]byte]bool{}
	for i, e := range entries {
		where := fmt.Sprintf("key %d", i+1)
		if e.Name != "" {
			where += fmt.Sprintf(" (%q)", e.Name)
		}
		var d [sha256.Size]byte
		switch {
		case e.Key != "" && e.SHA256 != "":
			return nil, fmt.Errorf("server: %s: has both key and sha256; give one", where)
		case e.Key != "":
			if len(e.Key) < minKeyLen {
				return nil, fmt.Errorf("server: %s: shorter than %d characters", where, minKeyLen)
			}
			d = sha256.Sum256([]byte(e.Key))
		case e.SHA256 != "":
			b, err := hex.DecodeString(e.SHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("server: %s: sha256 must be 64 hex digits", where)
			}
			copy(d[:], b)
		default:
			return nil, fmt.Errorf("server: %s: needs key or sha256", where)
		}
		switch {
		case e.User != "" && e.Project:
			return nil, fmt.Errorf("server: %s: has both user and project; give one", where)
		case e.User == "" && !e.Project:
			return nil, fmt.Errorf("server: %s: needs user or \"project\": true", where)
		case e.User != "":
			if err := store.ValidateNamespace(store.Namespace{Agent: "a", Owner: e.User}); err != nil {
				return nil, fmt.Errorf("server: %s: user %q: %w", where, e.User, err)
			}
		}
		if seen[d] {
			return nil, fmt.Errorf("server: %s: the same key is listed twice", where)
		}
		seen[d] = true
		name := e.Name
		if name == "" {
			name = fmt.Sprintf("key%d", i+1)
		}
		k.entries = append(k.entries, keyEntry{digest: d, id: Identity{Name: name, User: e.User, Project: e.Project}})
	}
	if len(k.entries) == 0 {
		return nil, errors.New("server: no keys")
	}
	return k, nil
}

// ErrKeysFileMode is returned by LoadAPIKeys for a keys file that other
// users of the machine can read or write, or that its group can write
// (one who can write it can give themselves a key). A file its group can
// only read is taken: a service reading it through its group is a
// common setup, and the CLI warns about it.
var ErrKeysFileMode = errors.New("server: the keys file is readable or writable by other users, or writable by its group; chmod 600 it")

// LoadAPIKeys reads a keys file (see Key for its format). It refuses a file
// that other users can read or write, or its group write (ErrKeysFileMode; not checked on Windows,
// whose permissions are ACLs) and unknown fields, so a typo does not
// silently widen access.
func LoadAPIKeys(path string) (*APIKeys, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("server: keys file: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o026 != 0 {
		return nil, fmt.Errorf("%w (%s has mode %v)", ErrKeysFileMode, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("server: keys file: %w", err)
	}
	var f struct {
		Keys []APIKey `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		// The decoder's message names fields and offsets, not values.
		return nil, fmt.Errorf("server: keys file %s: %v", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// A second object (two files pasted together) would otherwise be
		// dropped without a word, and its keys with it.
		return nil, fmt.Errorf("server: keys file %s: more after the first JSON object (offset %d); put every key in one \"keys\" list", path, dec.InputOffset())
	}
	k, err := NewAPIKeys(f.Keys...)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return k, nil
}

// GroupReadable reports whether the file at path can be read by its group,
// for a warning: LoadAPIKeys accepts such a file.
func GroupReadable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o040 != 0 && fi.Mode()&fs.ModeType == 0
}

// Merge returns the keys of k and o together (either may be nil), or an
// error when a key of o is also one of k's, as NewAPIKeys refuses a key
// listed twice: a key has one identity. (A request is authenticated as
// the last entry its key matches, so a user's key that is also given as
// the project key would act for any user through X-Spool-User.)
func (k *APIKeys) Merge(o *APIKeys) (*APIKeys, error) {
	switch {
	case k == nil:
		return o, nil
	case o == nil:
		return k, nil
	}
	for _, oe := range o.entries {
		for _, ke := range k.entries {
			if subtle.ConstantTimeCompare(oe.digest[:], ke.digest[:]) == 1 {
				return nil, fmt.Errorf("server: key %q is also key %q; give each key once", oe.id.Name, ke.id.Name)
			}
		}
	}
	return &APIKeys{entries: append(append([]keyEntry(nil), k.entries...), o.entries...)}, nil
}

// Len returns the number of keys.
func (k *APIKeys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.entries)
}

// lookup returns the identity of a presented key. Every entry is compared,
// in constant time over digests, whatever matches.
func (k *APIKeys) lookup(presented string) (Identity, bool) {
	d := sha256.Sum256([]byte(presented))
	found := -1
	for i := range k.entries {
		if subtle.ConstantTimeCompare(d[:], k.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, false
	}
	return k.entries[found].id, true
}

// UserHeader names the user a project key (or a server without keys)
// acts for on a user-scoped agent: a trusted backend that signs its own
// users in passes their id here.
const UserHeader = "X-Spool-User"

// authenticate returns who r acts as, or a 401 error.
func (s *Server) authenticate(h http.Header) (Identity, *apiError) {
	if s.opts.Keys.Len() == 0 {
		return Identity{Project: true}, nil
	}
	auth := h.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return Identity{}, errf(http.StatusUnauthorized, CodeUnauthorized, "this server needs a bearer key: Authorization: Bearer <key>")
	}
	id, ok := s.opts.Keys.lookup(strings.TrimSpace(tok))
	if !ok {
		return Identity{}, errf(http.StatusUnauthorized, CodeUnauthorized, "the bearer key is not valid")
	}
	return id, nil
}

// actor returns the user a request with identity id acts as on the
// agent: "" for a project-scoped agent, else the key's user or, for
// project access, the X-Spool-User header.
func (s *Server) actor(id Identity, h http.Header) (string, *apiError) {
	hdr := strings.TrimSpace(h.Get(UserHeader))
	if !s.userScoped {
		return "", nil
	}
	if id.User != "" {
		if hdr != "" && hdr != id.User {
			return "", errf(http.StatusForbidden, CodeForbidden, "this key acts for its own user only")
		}
		return id.User, nil
	}
	if hdr == "" {
		return "", errf(http.StatusForbidden, CodeUserRequired, "this agent is user-scoped: a project key must name the user in the "+UserHeader+" header")
	}
	if err := store.ValidateNamespace(store.Namespace{Agent: "a", Owner: hdr}); err != nil {
		return "", errf(http.StatusBadRequest, CodeBadRequest, "the "+UserHeader+" header is not a valid user id")
	}
	return hdr, nil
}

// IdentityFromContext returns the identity the server authenticated a request
// as, for handlers mounted behind it.
func IdentityFromContext(ctx context.Context) (Identity, bool) {
	if c := requestOf(ctx); c != nil && c.authenticated {
		return c.ident, true
	}
	return Identity{}, false
}

package store

import "fmt"

// MaxIDLength is the longest agent name, owner or session id.
const MaxIDLength = 128

// ValidID reports whether s may be an agent name, owner or session id:
// 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', '@' and '-', and not "."
// or "..". The set is safe as a file name on every OS (no ':' or '\'), in
// a URL path, and in a Redis key.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateNamespace checks the agent and, when set, the owner of s.
func ValidateNamespace(ns Namespace) error {
	if !ValidID(ns.Agent) {
		return invalid("agent", ns.Agent)
	}
	if ns.Owner != "" && !ValidID(ns.Owner) {
		return invalid("owner", ns.Owner)
	}
	return nil
}

// ValidateKey checks every part of k; the owner may be empty (project
// namespace). Every store calls it before touching anything.
func ValidateKey(k Key) error {
	if err := ValidateNamespace(k.Namespace()); err != nil {
		return err
	}
	if !ValidID(k.ID) {
		return invalid("session id", k.ID)
	}
	return nil
}

func invalid(what, s string) error {
	return fmt.Errorf("%w: %s", ErrInvalidKey, IDProblem(what, s))
}

// IDProblem says, for a person, why s is not a valid what (an agent name,
// an owner, a session id, or a flag that takes one), and "" when it is
// (ValidID). The stores' ErrInvalidKey errors carry its words, so a
// program that checks ids before calling a store can name the field
// (the CLI names the flag) in the same words.
func IDProblem(what, s string) string {
	switch {
	case ValidID(s):
		return ""
	case s == "":
		return "empty " + what
	case len(s) > MaxIDLength:
		return fmt.Sprintf("%s of %d bytes (at most %d): %.24q…", what, len(s), MaxIDLength, s)
	}
	return fmt.Sprintf("%s %q: use 1-%d of A-Z a-z 0-9 . _ @ - (but not \".\" or \"..\")", what, s, MaxIDLength)
}

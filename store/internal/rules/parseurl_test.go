package rules

import (
	"net/url"
	"strings"
	"testing"
)

// urlWording is the text of url.Parse's errors without what they quote:
// a password that is part of it proves nothing when an error holds it.
const urlWording = "net/url: invalid userinfo; invalid port after host; invalid URL escape; " +
	"invalid character in host name; missing protocol scheme; first path segment in URL cannot contain colon; " +
	"net/url: invalid control character in URL; invalid IPv6 host; missing ']' in host; empty url"

// FuzzParseURL gives ParseURL store URLs with a password (one that may hold
// a '/', '?' or '#', which ends the userinfo where url.Parse sees it): it
// never panics, parses what url.Parse parses to the same URL, and its
// error never holds the password, as its doc promises of a store URL.
func FuzzParseURL(f *testing.F) {
	for _, seed := range []struct{ scheme, password, rest string }{
		{"postgres", "s3cr3t", "@db:5432/app?sslmode=disable"},
		{"postgres", "s3cr3t#x", "@db/app"},
		{"postgres", "s3cr3t/x", "@db/app"},
		{"redis", "hunter2?", "@localhost:6379/0"},
		{"redis", "p%zzword", "@h"},
		{"postgres", "pass word", "@h/db"},
		{"postgres", "pw", "@h:12x/db"},
		{"sqlite", "x", "@/var/lib/spool.db"},
		{"file", "", "/tmp/spool?maxAge=24h"},
		{"postgres", "a]b[c", "@[::1/db"},
	} {
		f.Add(seed.scheme, seed.password, seed.rest)
	}
	f.Fuzz(func(t *testing.T, scheme, password, rest string) {
		raw := scheme + "://user:" + password + rest
		u, err := ParseURL(raw)
		want, werr := url.Parse(raw)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseURL(%q): %v; url.Parse: %v", raw, err, werr)
		}
		if err == nil {
			if u.String() != want.String() {
				t.Fatalf("ParseURL(%q) = %q, url.Parse gives %q", raw, u, want)
			}
			return
		}
		if piece := leaked(err.Error(), password); piece != "" {
			t.Fatalf("ParseURL(%q): the error %q holds %q of the password %q", raw, err, piece, password)
		}
	})
}

// leaked returns the longest piece of password, of 4 bytes or more, that
// msg holds and url.Parse's own wording does not, or "".
func leaked(msg, password string) string {
	if len(password) > 64 {
		password = password[:64]
	}
	for n := len(password); n >= 4; n-- {
		for i := 0; i+n <= len(password); i++ {
			if p := password[i : i+n]; strings.Contains(msg, p) && !strings.Contains(urlWording, p) {
				return p
			}
		}
	}
	return ""
}

package storetest

import (
	"net/url"
	"strings"
	"testing"
)

// NoPassword fails t when msg, an error of a store's Open given the URL
// raw, shows the password of raw's user info, as written or unescaped. A
// password shorter than 6 bytes, one raw shows elsewhere, or one the
// error's own wording holds cannot be told from other text, and is not
// looked for.
func NoPassword(t testing.TB, raw, msg, wording string) {
	t.Helper()
	rest, ok := strings.CutPrefix(raw[strings.Index(raw, ":")+1:], "//")
	if !ok {
		return
	}
	rest, _, _ = strings.Cut(rest, "/")
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return
	}
	unescaped := pw
	if u, err := url.PathUnescape(pw); err == nil {
		unescaped = u
	}
	for _, p := range []string{pw, unescaped} {
		if len(p) < 6 || strings.Count(raw, p) > 1 || strings.Contains(wording, p) {
			continue
		}
		if strings.Contains(msg, p) {
			t.Fatalf("the error of %q shows its password: %v", raw, msg)
		}
	}
}

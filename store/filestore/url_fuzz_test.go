package filestore

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// FuzzURLOptions gives a file URL's folder and retention parameters
// arbitrary text: it never panics, a retention it accepts is never
// negative, and maxAge means what it says: N days are N×24h (a number too
// large for a Duration is refused, not wrapped), a Go duration is that
// duration.
func FuzzURLOptions(f *testing.F) {
	for _, seed := range []string{
		"file:", "file:/var/spool", "file:///tmp/x?maxSessions=10", "file:rel/dir?maxAge=90d",
		"file:/x?maxAge=720h", "file:/x?retention=none", "file:/x?retention=none&maxAge=1h",
		"file://localhost/x", "file://host/x", "file:%zz", "file:/x?maxSessions=-1",
		"file:/x?maxAge=9999999h",
		"file:/x?maxAge=1d&maxAge=2d", "file:/x?nope=1", "FILE:/x", "http://x/y",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if _, err := urlRoot(u); err != nil && u.Host == "" && u.Opaque == "" {
			t.Fatalf("urlRoot(%q): %v, want the path", raw, err)
		}
		q := u.Query()
		r, err := urlRetention(q)
		if err != nil {
			return
		}
		if r.MaxSessions < 0 || r.MaxAge < 0 {
			t.Fatalf("urlRetention(%q) = %+v, want no negative bound", raw, r)
		}
		if q.Get("retention") == "none" && r != (store.Retention{}) {
			t.Fatalf("retention=none gives %+v, want no bound", r)
		}
		v := q.Get("maxAge")
		if !q.Has("maxAge") {
			return
		}
		if days, ok := strings.CutSuffix(v, "d"); ok {
			n, _ := strconv.ParseInt(days, 10, 64)
			if r.MaxAge/(24*time.Hour) != time.Duration(n) || r.MaxAge%(24*time.Hour) != 0 {
				t.Fatalf("maxAge=%s gives %v, want %d days", v, r.MaxAge, n)
			}
		} else if d, _ := time.ParseDuration(v); r.MaxAge != d {
			t.Fatalf("maxAge=%s gives %v, want %v", v, r.MaxAge, d)
		}
	})
}

package sqlitestore

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store/storetest"
)

// errOptionsTaken stops New after the options are applied, before it
// touches a file.
var errOptionsTaken = errors.New("options taken")

// FuzzOpenURLOptions gives Open arbitrary sqlite: URLs and stops it once
// their options are applied, so no database is opened. A URL it accepts
// names a file, has no host or user, and sets only ttl, once, to what
// time.ParseDuration makes of it (never negative). A URL it refuses gets
// an error starting "sqlitestore: " that names the query parameter at
// fault when the rest of the URL is good, and never shows a password the
// URL holds.
func FuzzOpenURLOptions(f *testing.F) {
	for _, u := range []string{
		"sqlite:/tmp/spool.db", "sqlite:rel.db?ttl=720h", "sqlite:///abs/x.db?ttl=0", "sqlite:/x.db?ttl=-1h",
		"sqlite:/x.db?ttl=soon", "sqlite:/x.db?ttl=1h&ttl=2h", "sqlite:/x.db?bogus=1", "sqlite:/x.db?TTL=1h",
		"sqlite://user:s3cret@host/x.db", "sqlite://:s3cret@[::1", "sqlite:", "/tmp/x.db", "SQLite:with%20space.db?ttl=1.5s",
		"sqlite:/x.db?ttl=9223372036854775807ns", "sqlite:%zz.db", "sqlite:/x.db?%zz=1", "postgres://u:s3cret@h/db",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var got config
		take := func(c *config) error {
			got = *c
			return errOptionsTaken
		}
		s, err := Open(t.Context(), raw, take)
		if s != nil {
			s.Close()
			t.Fatalf("Open(%q) opened a store past an option's error", raw)
		}
		u, perr := url.Parse(raw)
		if errors.Is(err, errOptionsTaken) {
			if perr != nil || !strings.EqualFold(u.Scheme, "sqlite") || u.Host != "" || u.User != nil || (u.Path == "" && u.Opaque == "") {
				t.Fatalf("Open(%q) accepted a URL naming no file, or a host", raw)
			}
			q := u.Query()
			var want time.Duration
			for k, v := range q {
				if k != "ttl" || len(v) != 1 {
					t.Fatalf("Open(%q) accepted parameter %q %d times", raw, k, len(v))
				}
				d, err := time.ParseDuration(v[0])
				if err != nil || d < 0 {
					t.Fatalf("Open(%q) accepted ttl %q", raw, v[0])
				}
				want = d
			}
			if got.ttl != want {
				t.Fatalf("Open(%q): TTL %v, want %v", raw, got.ttl, want)
			}
			return
		}
		if err == nil {
			t.Fatalf("Open(%q) got past its options", raw)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "sqlitestore: ") {
			t.Fatalf("Open(%q): error %q does not start with the package", raw, msg)
		}
		storetest.NoPassword(t, raw, msg, "sqlitestore: bad sqlite URL: unknown URL parameter")
		if perr != nil || !strings.EqualFold(u.Scheme, "sqlite") || u.Host != "" || u.User != nil || (u.Path == "" && u.Opaque == "") {
			return
		}
		if _, err := url.PathUnescape(u.Opaque); err != nil {
			return
		}
		for k := range u.Query() {
			if strings.Contains(msg, k) || strings.Contains(msg, strconv.Quote(k)) {
				return
			}
		}
		t.Fatalf("Open(%q): error %q names no parameter of the URL", raw, msg)
	})
}

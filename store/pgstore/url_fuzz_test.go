package pgstore

import (
	"net/url"
	"testing"
)

// FuzzSplitURL gives splitURL arbitrary store URLs: it never panics; what
// it passes on to pgx is the same URL (user, host, database and every
// other parameter) without the store's own parameters, and splitting that
// again changes nothing.
func FuzzSplitURL(f *testing.F) {
	for _, seed := range []string{
		"postgres://u:p@localhost:5432/db", "postgresql://u@h/db?sslmode=disable&schema=spool",
		"postgres://h/db?ttl=24h&lock_conns=4&pool_max_conns=8", "postgres://h/db?ttl=soon",
		"postgres://h/db?lock_conns=0x10", "postgres://u:p%40ss@h1:5432,h2:5433/db?target_session_attrs=read-write",
		"postgres:///db?host=/var/run/postgresql", "postgres://h/db?schema=a&schema=b", "postgres://h/d%2Fb?x=%zz",
		"mysql://h/db", "postgres://[::1]:5432/db", "postgres://h/db#frag", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		conn, opts, err := splitURL(raw)
		if err != nil {
			return
		}
		u, _ := url.Parse(raw)
		c, err := url.Parse(conn)
		if err != nil {
			t.Fatalf("splitURL(%q) passes on %q, which does not parse: %v", raw, conn, err)
		}
		if c.Scheme != u.Scheme || c.User.String() != u.User.String() || c.Host != u.Host || c.Path != u.Path {
			t.Fatalf("splitURL(%q) passes on %q, another URL", raw, conn)
		}
		q, cq := u.Query(), c.Query()
		for _, own := range []string{"schema", "ttl", "lock_conns"} {
			if cq.Has(own) {
				t.Fatalf("splitURL(%q) passes %s on to the server: %q", raw, own, conn)
			}
			q.Del(own)
		}
		if q.Encode() != cq.Encode() {
			t.Fatalf("splitURL(%q) passes on the parameters %q, want %q", raw, cq.Encode(), q.Encode())
		}
		again, more, err := splitURL(conn)
		if err != nil || again != conn || len(more) != 0 {
			t.Fatalf("splitURL(%q) = %q; split again: %q, %d options, %v", raw, conn, again, len(more), err)
		}
		_ = opts
	})
}

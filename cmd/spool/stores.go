package main

import (
	"context"
	"net/url"
	"strings"

	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/filestore"   // file:
	_ "github.com/spool-go/spool/store/memstore"    // memory:
	_ "github.com/spool-go/spool/store/pgstore"     // postgres:, postgresql:
	_ "github.com/spool-go/spool/store/redisstore"  // redis:, rediss:
	_ "github.com/spool-go/spool/store/sqlitestore" // sqlite:
)

// openStore opens the store a URL names.
func openStore(ctx context.Context, env *environ, rawURL string, encrypt bool) (store.Store, error) {
	return store.Open(ctx, rawURL)
}

// openTarget opens the store an import or migration writes to. A file
// store there keeps everything: its retention would otherwise delete
// imported sessions beyond the newest 50 as they arrive. Retention set in
// the URL still applies.
func openTarget(ctx context.Context, env *environ, c *common) (store.Store, error) {
	u, err := url.Parse(c.storeURL)
	if err == nil && strings.EqualFold(u.Scheme, "file") {
		q := u.Query()
		if !q.Has("maxSessions") && !q.Has("maxAge") && !q.Has("retention") {
			q.Set("retention", "none")
			u.RawQuery = q.Encode()
			return openStore(ctx, env, u.String(), c.encrypt)
		}
	}
	return c.open(ctx, env)
}

package storekit

import (
	"context"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/rules"
	"github.com/spool-go/spool/transcript"
)

// Victims lists the sessions of ns that r does not keep as of now, walking
// the whole listing: the expired ones (Expired) and those beyond the
// newest r.MaxSessions kept. Stores that enforce retention themselves use
// it; store.Prune does the same for stores that do not.
func Victims(ctx context.Context, s store.Store, ns store.Namespace, r store.Retention, now time.Time) ([]store.SessionInfo, error) {
	next := func(ctx context.Context, cursor string) ([]store.SessionInfo, string, error) {
		page, err := s.List(ctx, ns, store.ListOptions{Limit: store.MaxListLimit, Cursor: cursor})
		return page.Sessions, page.NextCursor, err
	}
	return rules.Victims(ctx, next, func(i store.SessionInfo) time.Time { return i.LastActivity }, r.MaxSessions, r.MaxAge, now)
}

// Expired reports whether r's MaxAge has passed for info as of now.
func Expired(info store.SessionInfo, r store.Retention, now time.Time) bool {
	return rules.Expired(info.LastActivity, r.MaxAge, now)
}

// Info builds the SessionInfo of a whole transcript: what a store that
// maintains it with SessionInfo.Apply on every append holds after the
// last one.
func Info(key store.Key, entries []transcript.Entry) store.SessionInfo {
	var i store.SessionInfo
	for _, e := range entries {
		i.Apply(key, e)
	}
	return i
}

package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// List returns one page of the namespace's sessions, newest activity first and
// then id descending (storekit.Less), from the namespace's index and the
// sessions' hashes in one script: O(log n + page), no transcript read.
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	bound := "-"
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		bound = "(" + member(p.LastActivity, p.ID)
	}
	page, err := s.listPage(ctx, ns, bound, opt.PageSize())
	if err != nil {
		return store.SessionPage{}, err
	}
	out := store.SessionPage{Sessions: page.sessions}
	if page.more && len(page.members) > 0 {
		out.NextCursor = storekit.EncodeListCursor(ns, page.last)
	}
	return out, nil
}

type listed struct {
	sessions []store.SessionInfo
	members  []string
	last     storekit.ListPosition // the position of the last session
	more     bool                  // members follow the page
}

// listPage runs listScript for up to limit sessions after bound.
func (s *Store) listPage(ctx context.Context, ns store.Namespace, bound string, limit int) (listed, error) {
	k := s.keys(ns)
	res, err := listScript().Run(ctx, s.c, []string{k.index()}, k.sessionPrefix(), bound, limit).Slice()
	if err != nil {
		return listed{}, fmt.Errorf("redisstore: list %s: %w", ns, err)
	}
	bad := func(what string) error {
		return &store.CorruptError{Key: ns.Key(""), Position: -1, Where: "redis index " + k.index(),
			Err: fmt.Errorf("unexpected listing reply: %s", what)}
	}
	if len(res) == 0 || len(res)%2 != 1 {
		return listed{}, bad("wrong length")
	}
	var page listed
	page.more = res[0] == int64(1)
	for i := 1; i < len(res); i += 2 {
		m, ok := res[i].(string)
		fields, ok2 := res[i+1].([]any)
		if !ok || !ok2 || len(fields)%2 != 0 {
			return listed{}, bad("not a member and its hash")
		}
		pos, err := parseMember(m)
		if err != nil {
			return listed{}, &store.CorruptError{Key: ns.Key(""), Position: -1, Where: "redis index " + k.index(), Err: err}
		}
		h := make(map[string]string, len(fields)/2)
		for j := 0; j < len(fields); j += 2 {
			f, _ := fields[j].(string)
			v, _ := fields[j+1].(string)
			h[f] = v
		}
		info, err := parseInfo(ns.Key(pos.ID), k.info(pos.ID), h)
		if err != nil {
			return listed{}, err
		}
		page.sessions = append(page.sessions, info)
		page.members = append(page.members, m)
		page.last = pos
	}
	return page, nil
}

// Delete removes the session's entries, hash and index member in one
// script. Deleting a session the store does not have is not an error. The
// session's lock, if held, is left to its holder.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	k := s.keys(key.Namespace())
	err := deleteScript().Run(ctx, s.c, []string{k.log(key.ID), k.info(key.ID), k.index()}, "").Err()
	if err != nil {
		return fmt.Errorf("redisstore: delete session %s: %w", key, err)
	}
	return nil
}

// Prune deletes the sessions of namespace that r does not keep as of now,
// walking the index in listing order. A session that gets new activity
// while Prune runs is not deleted on the strength of its old place.
func (s *Store) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return 0, err
	}
	if r.Unlimited() {
		return 0, nil
	}
	k := s.keys(ns)
	kept, deleted := 0, 0
	bound := "-"
	for {
		page, err := s.listPage(ctx, ns, bound, store.MaxListLimit)
		if err != nil {
			return deleted, err
		}
		for i, info := range page.sessions {
			if !storekit.Expired(info, r, now) && (r.MaxSessions <= 0 || kept < r.MaxSessions) {
				kept++
				continue
			}
			id := info.ID
			n, err := deleteScript().Run(ctx, s.c, []string{k.log(id), k.info(id), k.index()}, page.members[i]).Int()
			if err != nil {
				return deleted, fmt.Errorf("redisstore: prune %s: delete session %s: %w", ns, id, err)
			}
			if n > 0 {
				deleted++
			}
		}
		if !page.more || len(page.members) == 0 {
			return deleted, nil
		}
		bound = "(" + page.members[len(page.members)-1]
	}
}

// Namespaces returns every namespace with an index under the store's prefix, found
// with SCAN (on every primary of a cluster), sorted by agent then owner.
// An index left holding only expired sessions is cleaned and left out.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	seen := map[store.Namespace]bool{}
	err := s.scan(ctx, indexPattern(s.prefix), "zset", func(k string) {
		if sc, ok := namespaceOfIndex(s.prefix, k); ok {
			seen[sc] = true
		}
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: list namespaces: %w", err)
	}
	var namespaces []store.Namespace
	for sc := range seen {
		page, err := s.listPage(ctx, sc, "-", 1)
		if err != nil {
			return nil, err
		}
		if len(page.sessions) > 0 {
			namespaces = append(namespaces, sc)
		}
	}
	slices.SortFunc(namespaces, func(a, b store.Namespace) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Owner, b.Owner))
	})
	return namespaces, nil
}

// scan calls fn for every key matching pattern of type typ, on every
// primary when the client is a cluster or ring. fn may see a key twice.
func (s *Store) scan(ctx context.Context, pattern, typ string, fn func(string)) error {
	var mu sync.Mutex // nodes are scanned concurrently; fn is not safe for that
	one := func(ctx context.Context, c redis.Cmdable) error {
		it := c.ScanType(ctx, 0, pattern, 1000, typ).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			fn(it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	node := func(ctx context.Context, c *redis.Client) error { return one(ctx, c) }
	switch c := s.c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, node)
	case *redis.Ring:
		return c.ForEachShard(ctx, node)
	}
	return one(ctx, s.c)
}

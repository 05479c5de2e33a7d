package redisstore

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// The index's byte order of members must be exactly storekit.Less: that is
// what makes lexical paging agree with the cursors.
func TestMemberOrderIsListingOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ABCZabcz019.-_@"
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	times := []time.Time{
		base, base.Add(1), base.Add(-1), base.Add(255), base.Add(256), base.Add(time.Millisecond),
		time.Unix(0, 0), time.Unix(0, -1), time.Unix(-1, 0), time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	ids := []string{"a", "a-", "a.", "aa", "ab", "a@", "A", "z", "zz", "z-", "-", "--", "_", "@", "0", "9"}
	for range 200 {
		n := 1 + r.IntN(6)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		if store.ValidID(b.String()) {
			ids = append(ids, b.String())
		}
	}
	ids = append(ids, strings.Repeat("z", store.MaxIDLength), strings.Repeat("-", store.MaxIDLength))
	var infos []store.SessionInfo
	for _, id := range ids {
		for _, ts := range times {
			if r.IntN(3) == 0 {
				infos = append(infos, store.SessionInfo{ID: id, LastActivity: ts})
			}
		}
		infos = append(infos, store.SessionInfo{ID: id, LastActivity: base})
	}
	slices.SortFunc(infos, func(a, b store.SessionInfo) int {
		return strings.Compare(member(a.LastActivity, a.ID), member(b.LastActivity, b.ID))
	})
	for i := 1; i < len(infos); i++ {
		a, b := infos[i-1], infos[i]
		if a.ID == b.ID && a.LastActivity.Equal(b.LastActivity) {
			continue
		}
		if !storekit.Less(a, b) {
			t.Fatalf("member order puts (%v, %q) before (%v, %q), storekit.Less does not",
				a.LastActivity, a.ID, b.LastActivity, b.ID)
		}
	}
	for _, info := range infos {
		m := member(info.LastActivity, info.ID)
		p, err := parseMember(m)
		if err != nil || p.ID != info.ID || !p.LastActivity.Equal(info.LastActivity) {
			t.Fatalf("parseMember(member(%v, %q)) = %+v, %v", info.LastActivity, info.ID, p, err)
		}
	}
}

func TestParseMemberRejects(t *testing.T) {
	good := member(time.Now(), "abc")
	for _, m := range []string{"", "~", good[:len(good)-1], "zz" + good[2:], good[:tsHexLen] + "~", good[:tsHexLen] + "\x01~a",
		good[:tsHexLen] + "FF~ab", good[:tsHexLen] + "F~b", good[:tsHexLen] + "F~a:"} {
		if _, err := parseMember(m); err == nil {
			t.Errorf("parseMember(%q) accepted", m)
		}
	}
}

// No two namespaces or sessions share a key, the empty owner of project scope
// included, and index keys give their namespace back.
func TestKeysAreInjective(t *testing.T) {
	names := []string{"a", "b", "ab", "a.b", "a-b", "x@y", "_"}
	owners := append([]string{""}, names...)
	seen := map[string]string{}
	add := func(k, what string) {
		if prev, dup := seen[k]; dup {
			t.Fatalf("key %q is both %s and %s", k, prev, what)
		}
		seen[k] = what
	}
	for _, prefix := range []string{"spool", "spool.x"} {
		for _, agent := range names {
			for _, owner := range owners {
				sc := store.Namespace{Agent: agent, Owner: owner}
				k := keysFor(prefix, sc)
				add(k.index(), prefix+" index "+sc.String())
				if got, ok := namespaceOfIndex(prefix, k.index()); !ok || got != sc {
					t.Fatalf("namespaceOfIndex(%q) = %v, %v; want %v", k.index(), got, ok, sc)
				}
				for _, id := range append(names, "idx", "s", "log", "info") {
					what := prefix + " session " + sc.Key(id).String()
					add(k.log(id), what+" log")
					add(k.info(id), what+" info")
					add(k.lock(id), what+" lock")
				}
			}
		}
	}
	for _, k := range []string{"{spool:a:}:s:x:log", "{spool:a:b:c}:idx", "{spool:a}:idx", "{other:a:}:idx", "{spool:..:}:idx"} {
		if sc, ok := namespaceOfIndex("spool", k); ok {
			t.Errorf("namespaceOfIndex(%q) = %v, want not an index", k, sc)
		}
	}
}

package redisstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// Key layout. Every key of a namespace shares the hash tag {P:agent:owner}, so
// one namespace lives in one cluster slot:
//
//	{P:agent:owner}:idx          sorted set, the namespace's listing index
//	{P:agent:owner}:s:ID:log     list, the session's entries as wire lines
//	{P:agent:owner}:s:ID:info    hash, the session's SessionInfo and head
//	{P:agent:owner}:s:ID:lock    string, the session's Locker token
//	{P:agent:owner}:s:ID:fence   set, nonces of Append calls given up on
//
// P, agent, owner and ID are all store.ValidID strings (or, for owner,
// empty), and ':', '{' and '}' are not in that alphabet, so the parts are
// found again by splitting on ':' and no two keys ever share a name: the
// empty owner of project scope gives "{P:agent:}", which no owner can.

// nsKeys holds the key names of one namespace.
type nsKeys struct {
	tag string // {P:agent:owner}
}

func keysFor(prefix string, s store.Namespace) nsKeys {
	return nsKeys{tag: "{" + prefix + ":" + s.Agent + ":" + s.Owner + "}"}
}

func (k nsKeys) index() string { return k.tag + ":idx" }

// sessionPrefix is what a session's keys start with before the id; the
// Lua scripts that walk the index append id and ":info" to it.
func (k nsKeys) sessionPrefix() string { return k.tag + ":s:" }

func (k nsKeys) log(id string) string  { return k.sessionPrefix() + id + ":log" }
func (k nsKeys) info(id string) string { return k.sessionPrefix() + id + ":info" }
func (k nsKeys) lock(id string) string { return k.sessionPrefix() + id + ":lock" }

func (k nsKeys) fence(id string) string { return k.sessionPrefix() + id + ":fence" }

// indexPattern is the SCAN pattern that matches every namespace index of
// prefix. The ID alphabet holds none of the glob characters * ? [ ] \.
func indexPattern(prefix string) string { return "{" + prefix + ":*}:idx" }

// namespaceOfIndex returns the namespace whose index key is k, or false when k is
// not an index key of prefix.
func namespaceOfIndex(prefix, k string) (store.Namespace, bool) {
	rest, ok := strings.CutPrefix(k, "{"+prefix+":")
	if !ok {
		return store.Namespace{}, false
	}
	rest, ok = strings.CutSuffix(rest, "}:idx")
	if !ok {
		return store.Namespace{}, false
	}
	agent, owner, ok := strings.Cut(rest, ":")
	if !ok {
		return store.Namespace{}, false
	}
	s := store.Namespace{Agent: agent, Owner: owner}
	if store.ValidateNamespace(s) != nil {
		return store.Namespace{}, false
	}
	return s, true
}

// Index members. The index has every member at score 0, so Redis orders
// them by their bytes and ZRANGEBYLEX pages through them. A member is
//
//	16 hex digits of the inverted last activity ++ the inverted id ++ "~" ++ the id
//
// which sorts exactly as storekit.Less: newest activity first, then id
// descending. A float score cannot do that: a double holds unix
// nanoseconds only to about 256 ns, and ties would need a second key.
//
// The timestamp part is ^(ns ^ 1<<63): flipping the sign bit maps int64
// order onto uint64 order, and the complement reverses it. The inverted id
// maps each byte c to 0xA7-c, which reverses the order of the ID alphabet
// (0x2D '-' to 0x7A 'z') onto itself; the '~' (0x7E) after it sorts after
// every mapped byte, so that an id sorts before the ids it is a prefix of,
// as descending order wants. Activity and id decide the order before the
// plain id that follows the '~' is reached; it is there so that the Lua
// scripts find the session's keys with a string.find rather than by
// inverting the id byte by byte.

const (
	tsHexLen  = 16
	memberSep = '~'
	invertSum = 0x2D + 0x7A
)

func member(lastActivity time.Time, id string) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ^(uint64(lastActivity.UnixNano()) ^ 1<<63))
	m := make([]byte, 0, tsHexLen+2*len(id)+1)
	m = hex.AppendEncode(m, b[:])
	for i := 0; i < len(id); i++ {
		m = append(m, invertSum-id[i])
	}
	m = append(m, memberSep)
	return string(append(m, id...))
}

// parseMember returns the position that member m stands for.
func parseMember(m string) (storekit.ListPosition, error) {
	bad := errors.New("malformed index member")
	if len(m) < tsHexLen+3 {
		return storekit.ListPosition{}, bad
	}
	var b [8]byte
	if _, err := hex.Decode(b[:], []byte(m[:tsHexLen])); err != nil {
		return storekit.ListPosition{}, bad
	}
	inv, id, ok := strings.Cut(m[tsHexLen:], string(memberSep))
	if !ok || !store.ValidID(id) || len(inv) != len(id) {
		return storekit.ListPosition{}, bad
	}
	for i := 0; i < len(id); i++ {
		if inv[i] != invertSum-id[i] {
			return storekit.ListPosition{}, bad
		}
	}
	ns := int64(^binary.BigEndian.Uint64(b[:]) ^ 1<<63)
	return storekit.ListPosition{LastActivity: time.Unix(0, ns).UTC(), ID: id}, nil
}

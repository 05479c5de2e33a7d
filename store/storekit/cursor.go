package storekit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/spool-go/spool/store"
)

// ListPosition is where a listing page ended: the last session it returned.
// Listings are ordered by LastActivity, newest first, then by ID, highest
// first, so a position is a strict bound and pages never overlap.
type ListPosition struct {
	LastActivity time.Time
	ID           string
}

// Before reports whether a session with the given activity and id comes
// after p in listing order, that is, belongs on a later page.
func (p ListPosition) Before(lastActivity time.Time, id string) bool {
	if !lastActivity.Equal(p.LastActivity) {
		return lastActivity.Before(p.LastActivity)
	}
	return id < p.ID
}

// Less orders sessions for listing: newest activity first, then id
// descending. Stores that sort in memory use it.
func Less(a, b store.SessionInfo) bool {
	if !a.LastActivity.Equal(b.LastActivity) {
		return a.LastActivity.After(b.LastActivity)
	}
	return a.ID > b.ID
}

// SortSessions sorts sessions in listing order (see Less).
func SortSessions(s []store.SessionInfo) {
	sort.Slice(s, func(i, j int) bool { return Less(s[i], s[j]) })
}

// cursorVersion 2 added the position to the tag (version 1 cursors cut
// short or altered still decoded, to another position) and keeps seconds
// and nanoseconds apart (UnixNano overflows after the year 2262, and a
// timestamp may be as late as 9999).
const cursorVersion = 2

// cursorTimeLen is the encoded time: Unix seconds and nanoseconds.
const cursorTimeLen = 8 + 4

// EncodeListCursor returns the opaque cursor for position p of a listing of
// namespace. The cursor is bound to the namespace and to its own content:
// DecodeListCursor refuses it for any other namespace, and refuses it cut short
// or altered.
func EncodeListCursor(ns store.Namespace, p ListPosition) string {
	var pos []byte
	pos = binary.BigEndian.AppendUint64(pos, uint64(p.LastActivity.Unix()))
	pos = binary.BigEndian.AppendUint32(pos, uint32(p.LastActivity.Nanosecond()))
	pos = append(pos, p.ID...)
	buf := make([]byte, 0, 1+8+len(pos))
	buf = append(buf, cursorVersion)
	buf = append(buf, cursorTag(ns, pos)...)
	buf = append(buf, pos...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeListCursor returns the position in cursor c, which must come from
// EncodeListCursor for the same namespace; anything else is store.ErrInvalidCursor.
func DecodeListCursor(ns store.Namespace, c string) (ListPosition, error) {
	p, err := decodeCursor(ns, c)
	if err != nil {
		return ListPosition{}, fmt.Errorf("%w: %v", store.ErrInvalidCursor, err)
	}
	return p, nil
}

func decodeCursor(ns store.Namespace, c string) (ListPosition, error) {
	if len(c) > 4*(1+8+cursorTimeLen+store.MaxIDLength) {
		return ListPosition{}, errors.New("too long")
	}
	buf, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return ListPosition{}, errors.New("not a cursor")
	}
	if len(buf) < 1+8+cursorTimeLen+1 || buf[0] != cursorVersion {
		return ListPosition{}, errors.New("not a cursor")
	}
	if string(buf[1:9]) != string(cursorTag(ns, buf[9:])) {
		return ListPosition{}, errors.New("cursor of another listing, or altered")
	}
	nanos := binary.BigEndian.Uint32(buf[17:21])
	p := ListPosition{
		LastActivity: time.Unix(int64(binary.BigEndian.Uint64(buf[9:17])), int64(nanos)).UTC(),
		ID:           string(buf[9+cursorTimeLen:]),
	}
	if nanos >= 1e9 || !store.ValidID(p.ID) {
		return ListPosition{}, errors.New("not a cursor")
	}
	return p, nil
}

// cursorTag is a short fingerprint of a namespace and an encoded position. It
// is not a secret: it only keeps a cursor from being used on another
// listing, or cut short or altered, by mistake; a position alone could
// never reach beyond the namespace it is used with.
func cursorTag(s store.Namespace, pos []byte) []byte {
	h := sha256.New()
	h.Write([]byte("spool list cursor\x00" + s.Agent + "\x00" + s.Owner + "\x00"))
	h.Write(pos)
	return h.Sum(nil)[:8]
}

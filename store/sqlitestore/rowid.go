package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// An entry's row id (entries.eid, which is also its rowid in the search
// index's entries_fts) orders entries by time: the entry's timestamp in
// unix milliseconds, shifted left by msShift bits, plus a count of the
// entries stored before it in the same millisecond. Walking the entries, or the matches of the
// full-text index, by descending row id is walking them newest first to
// the millisecond, so that Search stops after its hits instead of sorting
// every match.
//
// 19 bits keep every millisecond of the years 1678 to 2261 (what unix
// nanoseconds hold) inside an int64, with room for 524,288 entries per
// millisecond.
const msShift = 19

// msOf returns the unix millisecond of ts (unix nanoseconds), rounding
// down for instants before 1970 too.
func msOf(ts int64) int64 {
	ms := ts / int64(time.Millisecond)
	if ts%int64(time.Millisecond) < 0 {
		ms--
	}
	return ms
}

// bucketOf returns the millisecond an entry row id belongs to.
func bucketOf(eid int64) int64 { return eid >> msShift }

// newRowID returns the row id for a new entry at ts: the next free one of
// its millisecond.
func (s *Store) newRowID(ctx context.Context, tx *sql.Tx, ts int64) (int64, error) {
	lo := msOf(ts) << msShift
	hi := lo + 1<<msShift
	var last int64
	err := s.txStmt(ctx, tx, lastRowIDSQL).QueryRowContext(ctx, lo, hi).Scan(&last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return lo, nil
	case err != nil:
		return 0, err
	case last+1 >= hi:
		return 0, fmt.Errorf("more than %d entries stored with timestamps in one millisecond", 1<<msShift)
	}
	return last + 1, nil
}

package sqlitestore

import "time"

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

package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// AppendBatch adds entries at the end of the session in one transaction
// (store.BatchAppender): its statements are sent together, one round trip
// and one commit for the batch. A batch whose first
// parent is not the head appends nothing and fails with store.ErrConflict.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	if len(entries) == 1 {
		if err := store.ValidateKey(key); err != nil {
			return err
		}
		return s.Append(ctx, key, entries[0])
	}
	return s.AppendBulk(ctx, []store.Batch{{Key: key, Entries: entries}})
}

// AppendBulk appends every batch in one round trip and one commit
// (store.BulkAppender): nothing of it when the database fails a statement;
// when a batch is refused (its first parent is not the head), the batches
// before it stay appended, and the call fails with store.ErrConflict naming
// that session. With a TTL, whose
// expired sessions a first entry may have to end first, each batch is
// appended on its own.
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	rows := make([][]row, len(batches))
	n := 0
	for i, b := range batches {
		if err := store.ValidateKey(b.Key); err != nil {
			return err
		}
		if err := storekit.ValidBatch(b.Key, b.Entries); err != nil {
			return err
		}
		rows[i] = make([]row, len(b.Entries))
		for j, e := range b.Entries {
			var err error
			if rows[i][j], err = newRow(b.Key, e); err != nil {
				return err
			}
		}
		n += len(b.Entries)
	}
	if n == 0 {
		return nil
	}
	if s.ttl > 0 {
		for _, b := range batches {
			if err := s.appendOneBatch(ctx, b); err != nil {
				return err
			}
		}
		return nil
	}
	var refused int
	err := retry(ctx, func() error {
		var err error
		refused, err = s.appendBulkTx(ctx, batches, rows)
		return err
	})
	if err != nil {
		return s.appendError(ctx, batches[0].Key, batches[0].Entries[0], err)
	}
	if refused >= 0 {
		b := batches[refused]
		return s.conflict(ctx, b.Key, b.Entries[0])
	}
	return nil
}

// appendOneBatch appends b with a TTL: a first entry through Append, which
// ends an expired session, the rest in one transaction.
func (s *Store) appendOneBatch(ctx context.Context, b store.Batch) error {
	entries := b.Entries
	if len(entries) == 0 {
		return nil
	}
	if entries[0].ParentID == "" || len(entries) == 1 {
		if err := s.Append(ctx, b.Key, entries[0]); err != nil {
			return err
		}
		entries = entries[1:]
		if len(entries) == 0 {
			return nil
		}
	}
	rows := make([]row, len(entries))
	for j, e := range entries {
		var err error
		if rows[j], err = newRow(b.Key, e); err != nil {
			return err
		}
	}
	one := []store.Batch{{Key: b.Key, Entries: entries}}
	var refused int
	err := retry(ctx, func() error {
		var err error
		refused, err = s.appendBulkTx(ctx, one, [][]row{rows})
		return err
	})
	if err != nil {
		return s.appendError(ctx, b.Key, entries[0], err)
	}
	if refused >= 0 {
		return s.conflict(ctx, b.Key, entries[0])
	}
	return nil
}

// appendBulkTx sends the batches' statements together, one round trip:
// Postgres runs a pipeline ended by one Sync as one implicit transaction,
// so an error rolls all of it back. Each batch is one statement
// (appendBatchSQL or appendBatchFirstSQL): the session row is updated
// once, by the batch's effect composed in Go (batchOf), and the entries
// inserted from arrays, so a batch of a thousand entries costs one row
// update instead of a thousand updates of the same row. It returns the
// index of the first batch whose statement found the session's head
// elsewhere, or -1; the statements after it matched nothing either (their
// parents are entries that were not appended), and batches before it stay
// appended.
func (s *Store) appendBulkTx(ctx context.Context, batches []store.Batch, rows [][]row) (int, error) {
	var q pgx.Batch
	for i, b := range batches {
		k := b.Key
		if len(b.Entries) == 0 {
			continue
		}
		eff := batchOf(b.Entries, rows[i])
		if b.Entries[0].ParentID == "" {
			q.Queue(s.sql(appendBatchFirstSQL), k.Agent, k.Owner, k.ID, eff.head, eff.firstNs, eff.lastNs, eff.titleIfEmpty,
				eff.messages, max(eff.pendingAdd, eff.pendingFloor), eff.compacts, eff.n,
				eff.ids, eff.ts, eff.lines, eff.search)
			continue
		}
		q.Queue(s.sql(appendBatchSQL), k.Agent, k.Owner, k.ID, eff.head, eff.lastNs, eff.messages,
			eff.titleIfEmpty, eff.titleIfSet, eff.pendingAdd, eff.pendingFloor, eff.compacts, eff.n,
			b.Entries[0].ParentID, s.cutoff(), eff.ids, eff.ts, eff.lines, eff.search)
	}
	res := s.pool.SendBatch(ctx, &q)
	refused := -1
	for i, b := range batches {
		if len(b.Entries) == 0 {
			continue
		}
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return -1, err
		}
		if tag.RowsAffected() != int64(len(b.Entries)) && refused < 0 {
			refused = i
		}
	}
	return refused, res.Close()
}

// appendBatchSQL appends a batch to a session that has entries: the
// session row moves from the batch's first parent ($13) to its last entry
// as appendNextSQL moves it for one, by the batch's composed effect (see
// batchEffect), and the entries go in from arrays at the positions after
// the count the row had.
const appendBatchSQL = `WITH s AS (
	UPDATE {s}.sessions SET
		head = $4,
		entries = entries + $12,
		last_ns = GREATEST(last_ns, $5),
		message_count = message_count + $6,
		title = CASE WHEN title = '' THEN $7 ELSE coalesce($8, title) END,
		pending = GREATEST(pending + $9, $10),
		compactions = compactions + $11
	WHERE agent = $1 AND owner = $2 AND id = $3 AND head = $13
		AND (last_ns >= $14 OR pending > 0)
	RETURNING entries - $12 AS seq
)
INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
SELECT $1, $2, $3, (s.seq + u.ord - 1)::integer, u.entry_id, u.ts_ns, u.entry, u.search
FROM s, unnest($15::text[], $16::bigint[], $17::bytea[], $18::text[]) WITH ORDINALITY AS u(entry_id, ts_ns, entry, search, ord)`

// appendBatchFirstSQL starts a session with a batch, as appendFirstSQL
// does with one entry.
const appendBatchFirstSQL = `WITH s AS (
	INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, compactions, entries, head)
	VALUES ($1, $2, $3, $5, $6, $7, $8, $9, $10, $11, $4)
	ON CONFLICT (agent, owner, id) DO NOTHING
	RETURNING 0 AS seq
)
INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
SELECT $1, $2, $3, (s.seq + u.ord - 1)::integer, u.entry_id, u.ts_ns, u.entry, u.search
FROM s, unnest($12::text[], $13::bigint[], $14::bytea[], $15::text[]) WITH ORDINALITY AS u(entry_id, ts_ns, entry, search, ord)`

// batchEffect is what a batch does to its session's row, composed from
// what each entry does in appendNextSQL, so that one statement applies
// all of it and the row ends exactly as the entries appended one by one
// would leave it:
//
//   - pending: each entry sets it to GREATEST(pending + d, 0); a run of
//     those is GREATEST(pending + pendingAdd, pendingFloor).
//   - title: each entry sets it to its title when the title is empty or
//     the entry renames the session; the result depends only on whether
//     the title was empty before: titleIfEmpty if it was, else titleIfSet
//     (nil: the title stays).
type batchEffect struct {
	n                        int
	head                     string
	firstNs, lastNs          int64
	messages, compacts       int
	pendingAdd, pendingFloor int
	titleIfEmpty             string
	titleIfSet               *string
	ids                      []string
	ts                       []int64
	lines                    [][]byte
	search                   []*string
}

func batchOf(entries []transcript.Entry, rows []row) batchEffect {
	eff := batchEffect{n: len(entries), head: entries[len(entries)-1].ID, firstNs: rows[0].tsNs, lastNs: rows[0].tsNs}
	for i, r := range rows {
		eff.lastNs = max(eff.lastNs, r.tsNs)
		eff.messages += r.messages
		eff.compacts += r.compacts
		eff.pendingAdd += r.pending
		if i == 0 {
			eff.pendingFloor = 0 // GREATEST(x + d, 0) for any x
		} else {
			eff.pendingFloor = max(eff.pendingFloor+r.pending, 0)
		}
		if eff.titleIfEmpty == "" || r.retitle {
			eff.titleIfEmpty = r.title
		}
		if (eff.titleIfSet != nil && *eff.titleIfSet == "") || r.retitle {
			t := r.title
			eff.titleIfSet = &t
		}
		eff.ids = append(eff.ids, entries[i].ID)
		eff.ts = append(eff.ts, r.tsNs)
		eff.lines = append(eff.lines, r.line)
		eff.search = append(eff.search, r.search)
	}
	return eff
}

package pgstore

import (
	"context"
	"sync"

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

// AppendBulk appends the batches (store.BulkAppender) in one transaction,
// sent in one round trip: nothing of it when the database fails a
// statement. A bulk of several sessions and at least 2*minPart entries is
// cut, by session, into bulkParts transactions of about as many entries,
// written at the same time on as many connections: a failure of one then
// leaves what the others appended. A refused batch (its first parent is not
// the head) appends nothing of its session from there on, the other
// sessions' batches stay appended, and the call fails with
// store.ErrConflict naming that session. It returns once every transaction
// has committed. With a TTL, whose expired sessions a first entry may have
// to end first, each batch is appended on its own.
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	n := 0
	for _, b := range batches {
		if err := store.ValidateKey(b.Key); err != nil {
			return err
		}
		if err := storekit.ValidBatch(b.Key, b.Entries); err != nil {
			return err
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
	parts := splitBulk(batches, n)
	if len(parts) == 1 {
		return s.appendPart(ctx, batches)
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.appendPart(ctx, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// An imported entry costs the database several times what it costs the
// client, most of it in the search index, and a transaction runs in one
// backend: a large bulk is written as bulkParts transactions at once, so
// that the database works on as many cores (each part makes its own rows,
// on as many goroutines). A part has at least minPart entries, below which
// a transaction's own costs (a round trip, a commit's flush) are no longer
// small beside its entries'.
const (
	bulkParts = 2
	minPart   = 64
)

// splitBulk cuts a bulk of n entries into parts of about n/bulkParts
// entries, each session's batches in one part, in order (the batches of a
// session need not be next to each other in a bulk: a transfer of
// interleaved records gives A, B, A). A bulk too small for two parts, or
// of one session, is one part.
func splitBulk(batches []store.Batch, n int) [][]store.Batch {
	if n < bulkParts*minPart {
		return [][]store.Batch{batches}
	}
	parts := make([][]store.Batch, bulkParts)
	of := make(map[store.Key]int, len(batches))
	filling, filled := 0, 0
	for _, b := range batches {
		p, seen := of[b.Key]
		if !seen {
			if filled >= n/bulkParts && filling < bulkParts-1 {
				filling, filled = filling+1, 0
			}
			p = filling
			of[b.Key] = p
		}
		if p == filling {
			filled += len(b.Entries)
		}
		parts[p] = append(parts[p], b)
	}
	for len(parts) > 1 && len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// appendPart appends checked batches in one transaction (appendBulkTx).
func (s *Store) appendPart(ctx context.Context, batches []store.Batch) error {
	rows := make([][]row, len(batches))
	for i, b := range batches {
		rows[i] = make([]row, len(b.Entries))
		for j, e := range b.Entries {
			var err error
			if rows[i][j], err = newRow(b.Key, e); err != nil {
				return err
			}
		}
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
	return s.appendPart(ctx, []store.Batch{{Key: b.Key, Entries: entries}})
}

// appendBulkTx sends the batches' statements together, one round trip:
// Postgres runs a pipeline ended by one Sync as one implicit transaction,
// so an error rolls all of it back. Each batch is one statement
// (appendBatchSQL or appendBatchFirstSQL): the session row is updated
// once, by the batch's effect composed in Go (batchOf), and the entries
// inserted from arrays, so a batch of a thousand entries costs one row
// update instead of a thousand updates of the same row. It returns the
// index of the first batch whose statement found the session's head
// elsewhere, or -1; that session's statements after it matched nothing
// either (their parents are entries that were not appended), and the other
// batches stay appended.
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

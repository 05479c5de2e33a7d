package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

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

// appendTimeout bounds a batch's pipeline once it has been sent. The
// caller's context is not used from then on (appendPart): the server runs
// a pipeline it has whole, and the store must report what happened, not
// a guess. redisstore does the same.
const appendTimeout = 30 * time.Second

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
	var sendErr error // the last sent attempt's failure
	send := func() error {
		return retry(ctx, func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Once sent, the pipeline runs to its end and commits whether or
			// not the client still waits for it (the server has it whole), so
			// a client that stopped waiting when ctx ended could not say what
			// is stored, and a transfer run again at once would see it land
			// under it (TestImportCancelled, under load). So ctx keeps a part
			// from being sent, and the wait for its outcome outlives ctx.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
			defer cancel()
			refused, sendErr = s.appendBulkTx(wctx, batches, rows)
			return sendErr
		})
	}
	err := send()
	// A bulk of one session is sent again when its connection failed,
	// as Append is (againOnLostConn); one of several sessions cannot tell
	// from a conflict whether the first try committed them all.
	last := ""
	if len(batches) == 1 {
		last = batches[0].Entries[len(batches[0].Entries)-1].ID
	}
	again := last != "" && sendErr != nil && errors.Is(err, sendErr) && s.connLost(ctx, err)
	if again {
		first := err
		sendErr = nil
		err = send()
		if err != nil && (sendErr == nil || !errors.Is(err, sendErr) || notApplied(err)) {
			// Not sent, or refused: that says nothing of the first
			// try, which may have committed.
			err, sendErr = first, first
		}
	}
	if err != nil && (sendErr == nil || !errors.Is(err, sendErr)) {
		// ctx ended before an attempt was sent, or after one the server
		// refused (rolled back): nothing of the part is stored.
		return dbError("append to", batches[0].Key, err)
	}
	if err != nil {
		return s.appendError(ctx, batches[0].Key, batches[0].Entries[0], last, err)
	}
	if refused >= 0 {
		b := batches[refused]
		return s.conflict(ctx, b.Key, b.Entries[0], ours(again, last))
	}
	return nil
}

// appendOneBatch appends b with a TTL, in one transaction; a batch that
// starts a session goes through startSession, as Append of a first
// entry does. The batch is never cut after its first entry: an old first
// entry (an import of a session begun longer ago than the TTL) would
// leave the session expired for the rest, which would then conflict.
func (s *Store) appendOneBatch(ctx context.Context, b store.Batch) error {
	if len(b.Entries) == 0 {
		return nil
	}
	part := func() error { return s.appendPart(ctx, []store.Batch{b}) }
	if b.Entries[0].ParentID != "" {
		return part()
	}
	return s.startSession(ctx, b.Key, part)
}

// appendBulkTx sends the batches' statements together, one round trip:
// Postgres runs a pipeline ended by one Sync as one implicit transaction,
// so an error rolls all of it back. The batches that start sessions are
// one statement (appendStartsSQL), first; each other batch is one
// statement (appendBatchSQL), in order: the session row is written once,
// by the batch's effect composed in Go (batchOf), and the entries inserted
// from arrays, so a batch of a thousand entries costs one row update
// instead of a thousand updates of the same row, and a thousand new
// sessions one statement instead of a thousand. It returns the index of
// the first batch whose session was not where the batch expected it (a
// session to start that exists, a head elsewhere), or -1; that session's
// statements after it matched nothing either (their parents are entries
// that were not appended), and the other batches stay appended.
func (s *Store) appendBulkTx(ctx context.Context, batches []store.Batch, rows [][]row) (int, error) {
	var (
		q       pgx.Batch
		starts  startsArgs
		started = map[store.Key]int{} // batch index of each session to start
		refused = -1
		next    []int // the batches appendBatchSQL appends, in order
	)
	refuse := func(i int) {
		if refused < 0 || i < refused {
			refused = i
		}
	}
	for i, b := range batches {
		switch {
		case len(b.Entries) == 0:
		case b.Entries[0].ParentID != "":
			next = append(next, i)
		default:
			if _, twice := started[b.Key]; twice {
				refuse(i) // the session has entries by then
				continue
			}
			started[b.Key] = i
			starts.add(b, batchOf(b.Entries, rows[i]))
		}
	}
	if len(started) > 0 {
		q.Queue(s.sql(appendStartsSQL), starts.args()...)
	}
	for _, i := range next {
		b := batches[i]
		k := b.Key
		eff := batchOf(b.Entries, rows[i])
		q.Queue(s.sql(appendBatchSQL), k.Agent, k.Owner, k.ID, eff.head, eff.lastNs, eff.messages,
			eff.titleIfEmpty, eff.titleIfSet, eff.pendingAdd, eff.pendingFloor, eff.compacts, eff.n,
			b.Entries[0].ParentID, s.cutoff(), eff.ids, eff.ts, eff.lines, eff.search)
	}
	res := s.pool.SendBatch(ctx, &q)
	if len(started) > 0 {
		rows, err := res.Query()
		if err != nil {
			res.Close()
			return -1, err
		}
		for rows.Next() {
			var k store.Key
			if err := rows.Scan(&k.Agent, &k.Owner, &k.ID); err != nil {
				rows.Close()
				res.Close()
				return -1, err
			}
			delete(started, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			res.Close()
			return -1, err
		}
		for _, i := range started { // the sessions that were there already
			refuse(i)
		}
	}
	for _, i := range next {
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return -1, err
		}
		if tag.RowsAffected() != int64(len(batches[i].Entries)) {
			refuse(i)
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

// appendStartsSQL starts sessions with their first batches, as
// appendFirstSQL does with one entry: a row per session from arrays ($1 to
// $11), of which ON CONFLICT keeps out those that exist, and the entries
// of the sessions it inserted, from arrays ($12 to $19: each entry's
// session, position and columns). It returns the sessions it started.
const appendStartsSQL = `WITH s AS (
	INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, compactions, entries, head)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[],
		$7::integer[], $8::integer[], $9::integer[], $10::integer[], $11::text[])
	ON CONFLICT (agent, owner, id) DO NOTHING
	RETURNING agent, owner, id
), e AS (
	INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
	SELECT s.agent, s.owner, s.id, u.seq, u.entry_id, u.ts_ns, u.entry, u.search
	FROM unnest($12::text[], $13::text[], $14::text[], $15::integer[], $16::text[], $17::bigint[], $18::bytea[], $19::text[])
		AS u(agent, owner, session, seq, entry_id, ts_ns, entry, search)
	JOIN s ON s.agent = u.agent AND s.owner = u.owner AND s.id = u.session
)
SELECT agent, owner, id FROM s`

// startsArgs gathers appendStartsSQL's arrays: a session's row from its
// batch's effect, and its entries.
type startsArgs struct {
	agent, owner, id, title, head []string
	started, last                 []int64
	messages, pending, compacts   []int32
	count                         []int32

	eAgent, eOwner, eSession, eID []string
	eSeq                          []int32
	eTs                           []int64
	eLine                         [][]byte
	eSearch                       []*string
}

func (a *startsArgs) add(b store.Batch, eff batchEffect) {
	k := b.Key
	a.agent, a.owner, a.id = append(a.agent, k.Agent), append(a.owner, k.Owner), append(a.id, k.ID)
	a.started, a.last = append(a.started, eff.firstNs), append(a.last, eff.lastNs)
	a.title, a.head = append(a.title, eff.titleIfEmpty), append(a.head, eff.head)
	a.messages = append(a.messages, int32(eff.messages))
	a.pending = append(a.pending, int32(max(eff.pendingAdd, eff.pendingFloor)))
	a.compacts = append(a.compacts, int32(eff.compacts))
	a.count = append(a.count, int32(eff.n))
	for j := range eff.n {
		a.eAgent, a.eOwner, a.eSession = append(a.eAgent, k.Agent), append(a.eOwner, k.Owner), append(a.eSession, k.ID)
		a.eSeq = append(a.eSeq, int32(j))
	}
	a.eID = append(a.eID, eff.ids...)
	a.eTs = append(a.eTs, eff.ts...)
	a.eLine = append(a.eLine, eff.lines...)
	a.eSearch = append(a.eSearch, eff.search...)
}

func (a *startsArgs) args() []any {
	return []any{a.agent, a.owner, a.id, a.started, a.last, a.title, a.messages, a.pending, a.compacts, a.count, a.head,
		a.eAgent, a.eOwner, a.eSession, a.eSeq, a.eID, a.eTs, a.eLine, a.eSearch}
}

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

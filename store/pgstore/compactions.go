package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// compactionsUp adds sessions.compactions (SessionInfo.Compactions) and
// counts what every session has: the entries that name the type anywhere
// in their bytes are parsed here, as the store reads them, so that a
// summary quoting the type name is not counted and an entry with bytes
// that are not UTF-8 does not stop the migration.
func compactionsUp(ctx context.Context, tx pgx.Tx, s *Store) error {
	if _, err := tx.Exec(ctx, s.sql(`ALTER TABLE {s}.sessions ADD COLUMN compactions integer NOT NULL DEFAULT 0`)); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, s.sql(`SELECT agent, owner, session, entry FROM {s}.entries
		WHERE position($1::bytea IN entry) > 0`), []byte(transcript.TypeCompaction))
	if err != nil {
		return err
	}
	counts := map[store.Key]int{}
	for rows.Next() {
		var k store.Key
		var line []byte
		if err := rows.Scan(&k.Agent, &k.Owner, &k.ID, &line); err != nil {
			rows.Close()
			return err
		}
		if e, err := transcript.Parse(line); err == nil && e.Type == transcript.TypeCompaction {
			counts[k]++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for k, n := range counts {
		if _, err := tx.Exec(ctx, s.sql(`UPDATE {s}.sessions SET compactions = $4 WHERE agent = $1 AND owner = $2 AND id = $3`),
			k.Agent, k.Owner, k.ID, n); err != nil {
			return err
		}
	}
	return nil
}

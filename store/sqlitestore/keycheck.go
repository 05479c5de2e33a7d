package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spool-go/spool/seal"
)

// The key check: a sealed database keeps, in settings row 'keycheck', a
// fixed text sealed by its protector and bound to the associated data of no
// session (empty agent, owner and id, position -1), so that New tells a
// protector without the key apart before anything is read or written, and
// a wrong key never seals new sessions beside the old ones. Reseal writes
// it again under the new key once every session is under it.
const keyCheckText = "spool encrypted store"

func keyCheckAD() []byte { return seal.AssociatedData("", "", "", -1) }

// checkKey compares the protector with the database's key check, writing
// the check when the database has none yet: after checking the protector
// against one stored entry, if there is one (a database sealed before key
// checks existed). A protector without the key fails with an error
// matching seal.ErrWrongKey, and nothing is written.
func checkKey(ctx context.Context, db writeDB, path string, p seal.Protector) error {
	tx, err := db.begin(ctx) // one process writes the check
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	defer tx.Rollback()
	var v string
	err = tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'keycheck'`).Scan(&v)
	switch {
	case err == nil:
		return openKeyCheck(path, p, v)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	var (
		agent, owner, id string
		seq              int
		body             []byte
	)
	err = tx.QueryRowContext(ctx, `SELECT s.agent, s.owner, s.id, e.seq, e.body
		FROM entries e JOIN sessions s USING (sid) LIMIT 1`).Scan(&agent, &owner, &id, &seq, &body)
	switch {
	case err == nil:
		_, err := p.Open(body, seal.AssociatedData(agent, owner, id, seq))
		if errors.Is(err, seal.ErrWrongKey) {
			return fmt.Errorf("sqlitestore: %s is encrypted with another key: %w", path, err)
		}
		// Another failure is that entry's own corruption, which reading
		// it reports.
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	if err := writeKeyCheck(ctx, tx, p); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	return nil
}

func openKeyCheck(path string, p seal.Protector, v string) error {
	b, err := base64.StdEncoding.DecodeString(v)
	if err == nil {
		b, err = p.Open(b, keyCheckAD())
	}
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return fmt.Errorf("sqlitestore: %s is encrypted with another key: %w", path, err)
	case err != nil:
		return fmt.Errorf("sqlitestore: %s: the key check (settings row keycheck) is damaged: %w", path, err)
	case string(b) != keyCheckText:
		return fmt.Errorf("sqlitestore: %s: the key check is damaged: %w", path, seal.ErrTampered)
	}
	return nil
}

// writeKeyCheck writes the key check for p, replacing any.
func writeKeyCheck(ctx context.Context, tx *sql.Tx, p seal.Protector) error {
	b, err := p.Seal([]byte(keyCheckText), keyCheckAD())
	if err != nil {
		return fmt.Errorf("sealing the key check: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('keycheck', ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, base64.StdEncoding.EncodeToString(b))
	return err
}

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
)

// Reseal re-encrypts every session of the database under to, for key
// rotation (see seal.Keyring). The Store must have been opened with a
// protector that opens what to seals and seals what to opens:
// seal.NewKeyring(to, old), so that every session reads whichever key it
// is under, during the rotation and after a crash in the middle of it.
//
// Each session is rewritten in one transaction, which holds the write
// lock, so no append interleaves: every entry and the title are opened and
// sealed again with to, bound to the same place. A crash loses at most the
// transaction under way, leaving that session wholly under the old key. A
// session whose entries and title all open with to already is left as it
// is, so running Reseal again after a crash finishes the job without
// rewriting what is done. The key check is rewritten for to last, once
// every session is under to: from then on the database opens with to
// alone. Expired sessions not yet swept are rewritten too.
//
// An entry or title that does not open fails Reseal with a
// *store.CorruptError naming the session and position; the sessions done
// so far stay done. progress, when not nil, is called after each session
// with whether it was rewritten.
func (s *Store) Reseal(ctx context.Context, to seal.Protector, progress func(key store.Key, rewritten bool)) error {
	if to == nil {
		return errors.New("sqlitestore: Reseal needs the new protector, got nil")
	}
	if s.cfg.protector == nil {
		return errors.New("sqlitestore: Reseal needs a store opened with a protector (seal.NewKeyring(new, old))")
	}
	if err := checkRotation(s.cfg.protector, to); err != nil {
		return err
	}
	keys, err := s.allSessions(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		done, err := s.resealSession(ctx, k.sid, k.key, to)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(k.key, done)
		}
	}
	tx, err := s.w.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if err := writeKeyCheck(ctx, tx, to); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	return nil
}

// checkRotation checks that current (the store's protector) and to agree
// on what they seal, as a rotation needs.
func checkRotation(current, to seal.Protector) error {
	probe, ad := []byte("spool reseal probe"), keyCheckAD()
	b, err := to.Seal(probe, ad)
	if err != nil {
		return fmt.Errorf("sqlitestore: Reseal: sealing with the new protector: %w", err)
	}
	if _, err := current.Open(b, ad); err != nil {
		return fmt.Errorf("sqlitestore: Reseal: the store's protector cannot open what the new one seals; open the store with seal.NewKeyring(new, old): %w", err)
	}
	if b, err = current.Seal(probe, ad); err != nil {
		return fmt.Errorf("sqlitestore: Reseal: sealing with the store's protector: %w", err)
	}
	if _, err := to.Open(b, ad); err != nil {
		return fmt.Errorf("sqlitestore: Reseal: the store's protector does not seal with the new key; open the store with seal.NewKeyring(new, old): %w", err)
	}
	return nil
}

type sessionRef struct {
	sid int64
	key store.Key
}

func (s *Store) allSessions(ctx context.Context) ([]sessionRef, error) {
	refs, err := sessionRefs(ctx, s.r)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	return refs, nil
}

// resealSession rewrites one session in one transaction, unless all of it
// is under to already, and reports whether it rewrote it. A session
// deleted since it was listed is skipped.
func (s *Store) resealSession(ctx context.Context, sid int64, key store.Key, to seal.Protector) (bool, error) {
	tx, err := s.w.begin(ctx) // the write lock, now
	if err != nil {
		return false, s.fail("re-encrypt", key, err)
	}
	defer tx.Rollback()
	type row struct {
		eid  int64
		seq  int
		body []byte
	}
	var rows []row
	q, err := tx.QueryContext(ctx, `SELECT eid, seq, body FROM entries WHERE sid = ? ORDER BY seq`, sid)
	if err != nil {
		return false, s.fail("re-encrypt", key, err)
	}
	for q.Next() {
		var r row
		if err := q.Scan(&r.eid, &r.seq, &r.body); err != nil {
			q.Close()
			return false, s.fail("re-encrypt", key, err)
		}
		rows = append(rows, r)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return false, s.fail("re-encrypt", key, err)
	}
	var title []byte
	err = tx.QueryRowContext(ctx, `SELECT title FROM sessions WHERE sid = ?`, sid).Scan(&title)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // deleted since it was listed
	}
	if err != nil {
		return false, s.fail("re-encrypt", key, err)
	}

	// reseal returns b under to, or nil when it is under to already.
	reseal := func(b []byte, pos int, where string) ([]byte, error) {
		ad := seal.AssociatedData(key.Agent, key.Owner, key.ID, pos)
		if _, err := to.Open(b, ad); err == nil {
			return nil, nil
		}
		plain, err := s.cfg.protector.Open(b, ad)
		if err != nil {
			return nil, &store.CorruptError{Key: key, Position: pos, Where: s.path + ": " + where, Err: err}
		}
		return to.Seal(plain, ad)
	}
	changed := false
	for _, r := range rows {
		b, err := reseal(r.body, r.seq, fmt.Sprintf("entries row %d", r.eid))
		if err != nil {
			return false, err
		}
		if b == nil {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE entries SET body = ? WHERE eid = ?`, b, r.eid); err != nil {
			return false, s.fail("re-encrypt", key, err)
		}
		changed = true
	}
	if len(title) > 0 {
		b, err := reseal(title, -1, "sessions row, title")
		if err != nil {
			return false, err
		}
		if b != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET title = ? WHERE sid = ?`, b, sid); err != nil {
				return false, s.fail("re-encrypt", key, err)
			}
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	if err := tx.Commit(); err != nil {
		return false, s.fail("re-encrypt", key, err)
	}
	return true, nil
}

package filestore

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
)

// Reseal re-encrypts every session of the store under to, for key
// rotation (see seal.Keyring). The store must have been opened with a
// protector that opens what to seals and seals what to opens:
// seal.NewKeyring(to, old), so that every session reads whichever key it
// is under, during the rotation and after a crash in the middle of it.
//
// Each session is rewritten on its own, under its exclusive lock, so no
// append lands in the old file after it was read: every line is opened and
// sealed again with to, bound to the same place, written to a temporary
// file in the session's folder, synced, and renamed over the transcript;
// then the folder is synced. A session whose lines all open with to
// already is left as it is, so running Reseal again after a crash finishes
// the job without rewriting what is done. The encryption marker is
// rewritten for to last, once every session is under to: from then on the
// store opens with to alone. Torn lines set aside earlier (<id>.jsonl.torn)
// are not rewritten; they were never acknowledged entries.
//
// A line that does not open fails Reseal with the error Read would give
// (a *store.CorruptError, or seal.ErrWrongKey), naming the session; the
// sessions done so far stay done. progress, when not nil, is called after
// each session with whether it was rewritten.
func (s *Store) Reseal(ctx context.Context, to seal.Protector, progress func(key store.Key, rewritten bool)) error {
	if to == nil {
		return errors.New("filestore: Reseal needs the new protector, got nil")
	}
	if s.cfg.protector == nil {
		return errors.New("filestore: Reseal needs a store opened with a protector (seal.NewKeyring(new, old))")
	}
	if err := checkRotation(s.cfg.protector, to); err != nil {
		return err
	}
	if err := s.ensureMarker(); err != nil {
		return err
	}
	namespaces, err := s.folderNamespaces()
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		ix, err := s.index(ctx, ns, false)
		if err != nil {
			return err
		}
		if ix == nil {
			continue
		}
		ids, err := folderSessions(ix.dir)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := ns.Key(id)
			done, err := s.resealSession(ctx, ix, key, to)
			if err != nil {
				return err
			}
			if progress != nil {
				progress(key, done)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.writeMarker(to, true)
}

// checkRotation checks that current (the store's protector) and to agree
// on what they seal: the form a rotation needs, where the store reads
// lines under the old key and the new one and writes under the new one.
func checkRotation(current, to seal.Protector) error {
	probe, ad := []byte("spool reseal probe"), markerAD()
	b, err := to.Seal(probe, ad)
	if err != nil {
		return fmt.Errorf("filestore: Reseal: sealing with the new protector: %w", err)
	}
	if _, err := current.Open(b, ad); err != nil {
		return fmt.Errorf("filestore: Reseal: the store's protector cannot open what the new one seals; open the store with seal.NewKeyring(new, old): %w", err)
	}
	if b, err = current.Seal(probe, ad); err != nil {
		return fmt.Errorf("filestore: Reseal: sealing with the store's protector: %w", err)
	}
	if _, err := to.Open(b, ad); err != nil {
		return fmt.Errorf("filestore: Reseal: the store's protector does not seal with the new key; open the store with seal.NewKeyring(new, old): %w", err)
	}
	return nil
}

// resealSession rewrites one session under to, unless it is under to
// already, and reports whether it rewrote it.
func (s *Store) resealSession(ctx context.Context, ix *index, key store.Key, to seal.Protector) (bool, error) {
	ss, err := ix.lockSession(ctx, key.ID, nil)
	if err != nil {
		return false, err
	}
	defer ix.unlockSession(ss)
	s.handles.drop(ss) // the transcript is replaced
	sf, _, err := s.openSession(ctx, ix, key.ID, true, false, nil, nil)
	if err != nil || sf == nil {
		return false, err
	}
	defer sf.close()
	removeResealTemps(sf.path)

	var out []byte
	changed := false
	lr := newLineReader(sf.f, 0, sf.size)
	for pos := 0; ; {
		line, err := lr.next()
		no := lr.no
		switch {
		case errors.Is(err, io.EOF):
			if !changed {
				return false, nil
			}
			if err := s.replaceTranscript(sf, out); err != nil {
				return false, fmt.Errorf("filestore: re-encrypting session %s: %w", key, err)
			}
			// The index record: the file and its sealed title are new.
			s.rescan(ctx, ix, key.ID, true)
			return true, nil
		case errors.Is(err, errLongLine):
			return false, &store.CorruptError{Key: key, Position: pos, Where: sf.path + ":" + strconv.Itoa(no), Err: err}
		case err != nil:
			return false, fmt.Errorf("filestore: reading %s: %w", sf.path, err)
		}
		if blank(line) {
			continue
		}
		ad := seal.AssociatedData(key.Agent, key.Owner, key.ID, pos)
		if _, err := seal.OpenLine(to, line, ad); err == nil {
			out = append(append(out, line...), '\n')
			pos++
			continue
		}
		plain, err := seal.OpenLine(s.cfg.protector, line, ad)
		if err != nil {
			// The error Read gives for this line.
			_, err = s.decodeLine(line, key, pos, func() string { return sf.path + ":" + strconv.Itoa(no) })
			if err == nil {
				err = fmt.Errorf("filestore: session %s: entry %d does not open", key, pos)
			}
			return false, err
		}
		sealed, err := seal.SealLine(to, plain, ad)
		if err != nil {
			return false, fmt.Errorf("filestore: re-encrypting entry %d of session %s: %w", pos, key, err)
		}
		out = append(append(out, sealed...), '\n')
		changed = true
		pos++
	}
}

// replaceTranscript writes content to a temporary file beside sf, syncs
// it, and renames it over sf's transcript, then syncs the folder. The
// caller holds sf's exclusive lock, which a process waiting for it finds
// on a file no longer at the path, and so starts over on the new one.
func (s *Store) replaceTranscript(sf *sfile, content []byte) error {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := sf.path + "." + hex.EncodeToString(rnd[:]) + tmpExt
	f, err := openFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	fixMode(f)
	w := bufio.NewWriterSize(f, 256<<10)
	_, err = w.Write(content)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = durable.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Sealed lines may change length: the old offsets would point
		// into other lines. They are rebuilt on first use.
		if rerr := os.Remove(offsetsPath(sf.path)); rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, sf.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return durable.SyncDir(filepath.Dir(sf.path))
}

// removeResealTemps removes what an interrupted Reseal left of a session:
// its temporary files, "<id>.jsonl.<12 hex>.tmp". The caller holds the
// session's exclusive lock.
func removeResealTemps(path string) {
	matches, _ := filepath.Glob(path + ".*" + tmpExt)
	base := filepath.Base(path) + "."
	for _, m := range matches {
		mid, ok := strings.CutPrefix(filepath.Base(m), base)
		mid, ok2 := strings.CutSuffix(mid, tmpExt)
		if _, err := hex.DecodeString(mid); ok && ok2 && err == nil && len(mid) == 12 {
			os.Remove(m)
		}
	}
}

// folderNamespaces returns every namespace that has a folder in the store, read
// from the folders themselves (not the index).
func (s *Store) folderNamespaces() ([]store.Namespace, error) {
	agents, err := readDirNames(s.root)
	if err != nil {
		return nil, err
	}
	var out []store.Namespace
	for _, agent := range agents {
		if checkNamespace(store.Namespace{Agent: agent}) != nil {
			continue
		}
		out = append(out, store.Namespace{Agent: agent})
		owners, err := readDirNames(filepath.Join(s.root, agent, usersDir))
		if err != nil {
			return nil, err
		}
		for _, owner := range owners {
			if ix := (store.Namespace{Agent: agent, Owner: owner}); checkNamespace(ix) == nil {
				out = append(out, ix)
			}
		}
	}
	return out, nil
}

// folderSessions returns the ids of the transcripts in dir, sorted.
func folderSessions(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("filestore: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := sessionID(e.Name()); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

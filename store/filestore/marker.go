package filestore

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/seal"
)

// The encryption marker, <root>/+encryption, says that the store is
// encrypted and with which key, before any session is read: a store opened
// without a protector, or with one that lacks the key, is refused by New,
// so that it neither writes plain sessions next to sealed ones nor lets
// retention delete sealed sessions whose activity it cannot read. It holds
// a header line and a fixed text sealed like a transcript line, bound to
// the associated data of no session (empty agent, owner and id):
//
//	spool-encryption	1
//	!<seal.SealLine of markerText>
//
// The name holds '+', which no id may (store.ValidID), so it can never be
// an agent's folder. A protector's first append writes it; Reseal writes
// it again under the new key once every session is under that key.
const (
	markerName   = "+encryption"
	markerHeader = "spool-encryption\t1\n"
	markerText   = "spool encrypted store"
	markerMax    = 4 << 10 // far more than a marker takes
)

// ErrUnencrypted: a store opened with a protector already holds sessions
// written without one. A store is encrypted or not for its whole life:
// copy it into a new store to encrypt it (spool migrate).
var ErrUnencrypted = errors.New("filestore: the store holds unencrypted sessions; it cannot be encrypted in place (copy it into a new store)")

func markerAD() []byte { return seal.AssociatedData("", "", "", -1) }

func (s *Store) markerPath() string { return filepath.Join(s.root, markerName) }

// checkMarker compares the marker, if the store has one, with the store's
// protector: none (ErrEncrypted) or another key (seal.ErrWrongKey) is an
// error. It reports whether the marker exists.
func (s *Store) checkMarker() (bool, error) {
	line, err := s.readMarker()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if s.cfg.protector == nil {
		return true, fmt.Errorf("filestore: the store at %s is encrypted (%s): %w", s.root, markerName, ErrEncrypted)
	}
	plain, err := seal.OpenLine(s.cfg.protector, line, markerAD())
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return true, fmt.Errorf("filestore: the store at %s is encrypted with another key: %w", s.root, err)
	case err != nil:
		return true, fmt.Errorf("filestore: %s: the encryption marker is damaged: %w", s.markerPath(), err)
	case string(plain) != markerText:
		return true, fmt.Errorf("filestore: %s: the encryption marker is damaged: %w", s.markerPath(), seal.ErrTampered)
	}
	return true, nil
}

// readMarker returns the sealed line of the marker.
func (s *Store) readMarker() ([]byte, error) {
	f, err := openFile(s.markerPath(), os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, markerMax))
	if err != nil {
		return nil, fmt.Errorf("filestore: %s: %w", s.markerPath(), err)
	}
	line, ok := bytes.CutPrefix(b, []byte(markerHeader))
	line, _, _ = bytes.Cut(line, []byte("\n"))
	if !ok || !seal.IsSealedLine(line) {
		// Even a damaged marker says the store is encrypted.
		if s.cfg.protector == nil {
			return nil, fmt.Errorf("filestore: the store at %s is encrypted (%s, damaged): %w", s.root, markerName, ErrEncrypted)
		}
		return nil, fmt.Errorf("filestore: %s: the encryption marker is damaged: %w", s.markerPath(), seal.ErrTampered)
	}
	return line, nil
}

// ensureMarker makes sure an encrypted store has its marker before the
// first line is sealed into it. A store without one gets it only if no
// session in it is plain or sealed with another key (a store encrypted
// before markers existed has sealed sessions and no marker).
func (s *Store) ensureMarker() error {
	if s.marked.Load() {
		return nil
	}
	s.markMu.Lock()
	defer s.markMu.Unlock()
	if s.marked.Load() {
		return nil
	}
	// Another process may have written it since New looked.
	found, err := s.checkMarker()
	if err != nil {
		return err
	}
	if !found {
		if err := s.checkUnmarked(); err != nil {
			return err
		}
		if err := mkdirs(s.root); err != nil {
			return err
		}
		if err := s.writeMarker(s.cfg.protector, false); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			// Another process wrote one first: it must be for this key.
			if _, err := s.checkMarker(); err != nil {
				return err
			}
		}
	}
	s.marked.Store(true)
	return nil
}

// refuseIfMarked fails with ErrEncrypted when a store without a protector
// finds a marker that another process wrote since New looked. It runs
// before a session is created and before pruning: the writes that could
// put plain sessions beside sealed ones, or delete sealed sessions.
func (s *Store) refuseIfMarked() error {
	if s.cfg.protector != nil {
		return nil
	}
	if _, err := os.Lstat(s.markerPath()); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("filestore: the store at %s is encrypted (%s): %w", s.root, markerName, ErrEncrypted)
	}
	return nil
}

// writeMarker writes the marker for p. With replace it replaces the one
// there (Reseal); without, it fails with fs.ErrExist when there is one, so
// that of two processes marking a store at once one key wins. The marker
// and its folder entry are synced before it returns.
func (s *Store) writeMarker(p seal.Protector, replace bool) error {
	line, err := seal.SealLine(p, []byte(markerText), markerAD())
	if err != nil {
		return fmt.Errorf("filestore: sealing the encryption marker: %w", err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := s.markerPath() + "." + hex.EncodeToString(rnd[:]) + tmpExt
	f, err := openFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("filestore: writing the encryption marker: %w", err)
	}
	defer os.Remove(tmp)
	fixMode(f)
	_, err = f.Write(append(append([]byte(markerHeader), line...), '\n'))
	if err == nil {
		err = durable.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if replace {
			err = os.Rename(tmp, s.markerPath())
		} else if err = os.Link(tmp, s.markerPath()); err != nil && !errors.Is(err, fs.ErrExist) {
			// No hard links here: create it in place, never replacing one.
			err = createExclusive(s.markerPath(), tmp)
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("filestore: writing the encryption marker: %w", err)
	}
	if err := durable.SyncDir(s.root); err != nil {
		return fmt.Errorf("filestore: writing the encryption marker: %w", err)
	}
	return nil
}

// createExclusive copies the file at from to a new file at path.
func createExclusive(path, from string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := openFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = durable.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// checkUnmarked looks at the first line of every transcript of a store
// that has no marker yet: a plain one means the store is not encrypted
// (ErrUnencrypted), one sealed under a key the protector lacks means it is
// encrypted with another key. It runs once per Store, at its first sealed
// append, and only while the store has no marker.
func (s *Store) checkUnmarked() error {
	namespaces, err := s.folderNamespaces()
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		dir := s.namespaceDir(ns)
		ids, err := folderSessions(dir)
		if err != nil {
			return err
		}
		for _, id := range ids {
			line, err := firstLine(sessionPath(dir, id))
			if err != nil {
				return err
			}
			if line == nil {
				continue
			}
			key := ns.Key(id)
			if !seal.IsSealedLine(line) {
				return fmt.Errorf("%w: session %s", ErrUnencrypted, key)
			}
			_, err = seal.OpenLine(s.cfg.protector, line, seal.AssociatedData(key.Agent, key.Owner, key.ID, 0))
			if errors.Is(err, seal.ErrWrongKey) {
				return fmt.Errorf("filestore: the store at %s is encrypted with another key (session %s): %w", s.root, key, err)
			}
			// Any other failure is the session's own corruption, which
			// reading it reports.
		}
	}
	return nil
}

// firstLine returns the first non-blank complete line of a transcript, or
// nil when it has none.
func firstLine(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line. Its first bytes say whether it is sealed, and
			// a sealed value names its key before anything else, so a
			// prefix (cut to whole base64 quads) tells another key apart.
			line = bytes.TrimLeft(line, " \t")
			if seal.IsSealedLine(line) {
				line = line[:1+(len(line)-1)/4*4]
			}
			return line, nil
		}
		if err != nil {
			return nil, nil // no complete line
		}
		line = bytes.TrimRight(line, "\r\n \t")
		if !blank(line) {
			return bytes.TrimLeft(line, " \t"), nil
		}
	}
}

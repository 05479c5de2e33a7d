package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Stores wrap them, so callers test with errors.Is.
var (
	// ErrNotFound: the session does not exist (or is not the caller's).
	ErrNotFound = errors.New("store: session not found")
	// ErrConflict: an append whose parent is not the session's last entry;
	// another writer got there first.
	ErrConflict = errors.New("store: conflicting append: the session has moved on")
	// ErrCorrupt: a stored record cannot be read. The error names the
	// session and position; nothing is skipped silently.
	ErrCorrupt = errors.New("store: corrupt record")
	// ErrInvalidKey: an agent, owner or session id outside the allowed form.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrInvalidEntry: an entry that cannot be stored (no id, no type,
	// data that is not a JSON object).
	ErrInvalidEntry = errors.New("store: invalid entry")
	// ErrInvalidCursor: a cursor this listing did not hand out.
	ErrInvalidCursor = errors.New("store: invalid cursor")
	// ErrSessionExpired: the session expired by TTL while an approval was
	// pending; see ExpiredError.
	ErrSessionExpired = errors.New("store: session expired")
)

// CorruptError reports a record that cannot be read. It matches ErrCorrupt.
type CorruptError struct {
	Key      Key
	Position int    // 0-based entry position, or -1 when unknown
	Where    string // where the record is: a file and line, a row, a stream id
	Err      error  // what is wrong with it
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("store: session %s: corrupt record", e.Key)
	if e.Position >= 0 {
		msg += fmt.Sprintf(" at entry %d", e.Position)
	}
	if e.Where != "" {
		msg += " (" + e.Where + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying problem.
func (e *CorruptError) Unwrap() error { return e.Err }

// ExpiredError reports that a session expired by TTL with an approval still
// pending, so a late decision cannot land in a fresh conversation. It
// matches ErrSessionExpired.
type ExpiredError struct {
	Key Key
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("store: session %s expired with an approval pending; the approval can no longer be answered", e.Key)
}

// Is makes errors.Is(err, ErrSessionExpired) true.
func (e *ExpiredError) Is(target error) bool { return target == ErrSessionExpired }

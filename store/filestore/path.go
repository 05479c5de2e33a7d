package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
)

// Names in the store's folders. A session's files all start with its id and
// end in a suffix of their own; only ".jsonl" names a transcript, and the
// index, the users folder and temporary files end in none of the suffixes,
// so no id can name another session's file, the index or a folder.
const (
	transcriptExt = ".jsonl"      // <id>.jsonl: the transcript
	tornExt       = ".jsonl.torn" // torn last lines set aside, one per line
	offsetsExt    = ".jsonl.off"  // sparse offsets, see offsets.go
	lockExt       = ".jsonl.lock" // the turn lock (Locker)
	indexName     = ".index"      // the listing index of one namespace folder
	usersDir      = "users"       // <agent>/users/<owner>/: user scope
	tmpExt        = ".tmp"        // files being written, renamed when whole
	dirMode       = fs.FileMode(0o700)
	fileMode      = fs.FileMode(0o600)
)

// DefaultRoot returns the folder that "file:" names: spool/sessions in the
// user's data folder, which is $XDG_DATA_HOME or ~/.local/share on Linux and
// the BSDs, ~/Library/Application Support on macOS and %LOCALAPPDATA% on
// Windows.
func DefaultRoot() (string, error) {
	return defaultRoot(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func defaultRoot(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	var data string
	switch goos {
	case "windows":
		data = getenv("LOCALAPPDATA")
		if data == "" {
			return "", errors.New("filestore: %LOCALAPPDATA% is not set; give the store a folder (file:C:/path)")
		}
	case "darwin", "ios":
		h, err := home()
		if err != nil {
			return "", fmt.Errorf("filestore: no home folder for the default store: %w", err)
		}
		data = filepath.Join(h, "Library", "Application Support")
	default:
		// The XDG spec says a relative $XDG_DATA_HOME is invalid and
		// should be ignored.
		if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
			data = x
			break
		}
		h, err := home()
		if err != nil {
			return "", fmt.Errorf("filestore: no home folder for the default store: %w", err)
		}
		data = filepath.Join(h, ".local", "share")
	}
	return filepath.Join(data, "spool", "sessions"), nil
}

// namespaceDir is the folder of a namespace's sessions.
func (s *Store) namespaceDir(ns store.Namespace) string {
	if ns.Owner == "" {
		return filepath.Join(s.root, ns.Agent)
	}
	return filepath.Join(s.root, ns.Agent, usersDir, ns.Owner)
}

// sessionPath is filepath.Join(dir, id+transcriptExt) for a clean dir (a
// namespace's folder) and a valid id (no separator, never "." or ".."),
// where Join's Clean has nothing to do: one string, made once an append.
func sessionPath(dir, id string) string {
	return dir + string(filepath.Separator) + id + transcriptExt
}

// sessionID returns the id of a transcript file name, or false for any
// other name.
func sessionID(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, transcriptExt)
	if !ok || !store.ValidID(id) {
		return "", false
	}
	return id, true
}

// checkKey validates key for this store: the contract's rules, and on
// Windows the names the file system refuses or alters.
func checkKey(key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	return checkKeyNames(key.Namespace(), key.ID)
}

func checkNamespace(ns store.Namespace) error {
	if err := store.ValidateNamespace(ns); err != nil {
		return err
	}
	return checkKeyNames(ns, "")
}

func checkKeyNames(ns store.Namespace, id string) error {
	if runtime.GOOS != "windows" {
		return nil
	}
	for _, n := range []struct{ what, name string }{{"agent", ns.Agent}, {"owner", ns.Owner}, {"session id", id}} {
		if n.name != "" && !windowsName(n.name, n.what != "session id") {
			return fmt.Errorf("%w: %s %q is not a usable file name on Windows", store.ErrInvalidKey, n.what, n.name)
		}
	}
	return nil
}

// windowsName reports whether Windows keeps name as it is: not a device
// name (CON, NUL, COM1, … with any extension), and for a folder not ending
// in a dot, which Windows strips so that "a." and "a" would be one folder.
func windowsName(name string, folder bool) bool {
	if folder && strings.HasSuffix(name, ".") {
		return false
	}
	base, _, _ := strings.Cut(strings.ToUpper(name), ".")
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return false
	}
	if len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9' {
		return false
	}
	return true
}

// mkdirs creates dir and every missing folder above it with mode 0700
// (whatever the umask), then syncs the folder that holds each new one so
// the new names survive a crash.
func mkdirs(dir string) error {
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("filestore: %s is not a folder", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filestore: %w", err)
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, dirMode); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue // another process made it first
			}
			return fmt.Errorf("filestore: %w", err)
		}
		// Mkdir applies the umask; a umask like 0277 would leave a folder
		// we cannot write. Set exactly 0700.
		if err := os.Chmod(p, dirMode); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
		if err := durable.SyncDir(filepath.Dir(p)); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
	}
	return nil
}

// fixMode sets a file the store created to exactly 0600: creating it
// applied the umask, which may have taken away the owner's write bit.
func fixMode(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Mode().Perm() != fileMode {
		f.Chmod(fileMode)
	}
}

// foldsCase reports whether the file system holding path treats names that
// differ only in case as one (macOS and Windows by default). It looks at
// the deepest existing folder on the path whose name has letters and asks
// for it in swapped case. When it cannot tell, it says yes: the checks that
// follow only cost time.
func foldsCase(path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		base := filepath.Base(p)
		if swapped := swapCase(base); swapped != base {
			if a, err := os.Stat(p); err == nil {
				b, err := os.Stat(filepath.Join(filepath.Dir(p), swapped))
				return err == nil && os.SameFile(a, b)
			}
		}
		if filepath.Dir(p) == p {
			return true
		}
	}
}

func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// fold is the case-folded form of an id. Ids are ASCII (store.ValidID), so
// ASCII lower case is the folding every case-insensitive file system uses
// for them.
func fold(id string) string { return strings.ToLower(id) }

// checkFolder refuses name in parent when the folder already holds another
// name that differs from it only in case. It runs only on file systems that
// fold case, where the two would be one folder.
func checkFolder(parent, name, what string) error {
	entries, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("filestore: %w", err)
	}
	for _, e := range entries {
		if e.Name() != name && strings.EqualFold(e.Name(), name) {
			return fmt.Errorf("%w: %s %q differs only in case from the existing %q, and this file system does not tell them apart", store.ErrInvalidKey, what, name, e.Name())
		}
	}
	return nil
}

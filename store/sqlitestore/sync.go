package sqlitestore

import (
	"sync"

	"modernc.org/sqlite"
)

// commitWithFdatasync switches modernc.org/sqlite, process-wide, from
// fsync(2) to fdatasync(2) for its commits, once, when the first Store
// opens. SQLite itself commits with fdatasync wherever its build finds
// it (every Linux distribution's); the transpiled library keeps the
// source's fallback, fsync, which also writes the file's timestamps: on
// ext4 a commit then waits for a journal commit even when it overwrites
// the log in place, as the write-ahead log is once it has grown. The
// durability is the same (fdatasync writes the data and the size needed
// to read it back), and never slower; what it saves depends on the disk
// (the package doc, "The driver"). Where the library has no fdatasync
// (macOS, Windows) nothing changes.
var commitWithFdatasync = sync.OnceFunc(func() { sqlite.Fdatasync(true) })

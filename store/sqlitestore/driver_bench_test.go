//go:build drivercompare

package sqlitestore

// The driver comparison that chose modernc.org/sqlite (see the package
// doc): the same store code, the same SQL and the same data set on both
// pure-Go drivers. It sits behind a build tag so that the other driver is
// never linked into the package or its tests otherwise:
//
//	go test -tags drivercompare -run 'OtherDriver|ReportFileModes' -v -bench Driver -benchtime 2s ./store/sqlitestore/

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
	ncruces "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

var ncrucesDriver = sqlDriver{
	name: "github.com/ncruces/go-sqlite3",
	open: func(dsn, setup string) (*sql.DB, error) {
		if setup == "" {
			return ncruces.Open(dsn, fts5.Register)
		}
		return ncruces.Open(dsn, func(c *sqlite3.Conn) error {
			if err := fts5.Register(c); err != nil {
				return err
			}
			return c.Exec(setup)
		})
	},
}

var candidates = []struct {
	name string
	drv  sqlDriver
}{
	{"modernc", chosenDriver},
	{"ncruces", ncrucesDriver},
}

func BenchmarkDriver(b *testing.B) {
	for _, c := range candidates {
		b.Run(c.name, func(b *testing.B) {
			b.Run("Append", func(b *testing.B) { benchAppend(b, c.drv) })
			b.Run("AppendParallel", func(b *testing.B) { benchAppendParallel(b, c.drv) })
			b.Run("ReadTail", func(b *testing.B) { benchTail(b, c.drv) })
			b.Run("List", func(b *testing.B) { benchList(b, c.drv) })
			b.Run("Search", func(b *testing.B) { benchSearch(b, c.drv) })
		})
	}
}

// TestConformanceOtherDriver shows that the comparison was fair: the store
// code passes the conformance suite on the other driver too.
func TestConformanceOtherDriver(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := open(t.Context(), filepath.Join(t.TempDir(), "spool.db"), ncrucesDriver)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestReportFileModes reports the modes each driver gives the -wal and
// -shm files of a 0600 database in a 0700 folder (with the process's usual
// umask): part of the comparison, as the log holds transcript text.
func TestReportFileModes(t *testing.T) {
	for _, c := range candidates {
		dir := filepath.Join(t.TempDir(), "db")
		s, err := open(t.Context(), filepath.Join(dir, "spool.db"), c.drv)
		if err != nil {
			t.Fatal(err)
		}
		seedAny(t, s, store.Key{Agent: "a", ID: "s"})
		for _, name := range []string{"spool.db", "spool.db-wal", "spool.db-shm"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s %v", c.name, name, fi.Mode())
		}
		s.Close()
	}
}

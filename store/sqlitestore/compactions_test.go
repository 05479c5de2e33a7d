package sqlitestore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestMigrationCountsCompactions makes a database of schema version 1
// (version 2's with the compactions column dropped) holding compaction
// entries, and checks that opening it counts them: in SQL for plain
// entries, with the protector for sealed ones.
// toVersion2 turns s's database into the layout of schema version 2: the
// search index in the database (empty here), no log.
func toVersion2(t *testing.T, s *Store) {
	t.Helper()
	for _, stmt := range []string{
		`DROP TRIGGER fts_log_insert`,
		`DROP TRIGGER fts_log_delete`,
		`DROP TABLE fts_log`,
		migrations[0][4], // entries_fts
		migrations[0][5], // its delete trigger
		`PRAGMA user_version = 2`,
	} {
		if _, err := s.w.Exec(stmt); err != nil {
			t.Fatal(stmt, err)
		}
	}
}

func TestMigrationCountsCompactions(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := "plain"
		var opts []Option
		if sealed {
			name, opts = "sealed", []Option{WithProtector(testProtector{key: 0x5a})}
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spool.db")
			s := openAt(t, path, opts...)
			start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			want := map[string]int{"none": 0, "one": 1, "three": 3}
			for id, n := range want {
				key := store.Key{Agent: "a", ID: id}
				entries := seed(t, s, key, start, 3)
				for i := range n {
					e := storetest.NewEntry(storetest.Head(entries), start.Add(time.Hour+time.Duration(i)*time.Second),
						transcript.TypeCompaction, transcript.Compaction{Summary: "so far", FirstTurn: "t", LastTurn: "t", Turns: 1})
					appendAll(t, s, key, e)
					entries = append(entries, e)
				}
			}
			toVersion2(t, s)
			for _, stmt := range []string{`ALTER TABLE sessions DROP COLUMN compactions`, `PRAGMA user_version = 1`} {
				if _, err := s.w.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()

			s = openAt(t, path, opts...)
			for id, n := range want {
				info, err := s.Stat(t.Context(), store.Key{Agent: "a", ID: id})
				if err != nil {
					t.Fatal(err)
				}
				if info.Compactions != n {
					t.Errorf("%s after migrating: %d compactions, want %d", id, info.Compactions, n)
				}
			}
			var left int
			s.w.QueryRow(`SELECT count(*) FROM settings WHERE name = 'compactions'`).Scan(&left)
			if left != 0 {
				t.Error("the settings row asking for a count is still there")
			}
		})
	}
}

package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// TestMigrationCountsCompactions takes a schema back to version 3 (no
// compactions column, and the listing index of before version 5) with
// compaction entries in it, and checks that migration 4 counts them, and
// not a message that only names the type.
func TestMigrationCountsCompactions(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema)
	want := map[string]int{"none": 0, "one": 1, "three": 3}
	for id, n := range want {
		c := newChain(t, s, store.Key{Agent: "a", ID: id}, t0)
		c.user("what does " + string(transcript.TypeCompaction) + " mean?")
		for range n {
			c.add(transcript.TypeCompaction, transcript.Compaction{Summary: "so far", FirstTurn: "t", LastTurn: "t", Turns: 1})
			c.assistant("ok")
		}
	}
	downTo4(t, s)
	sessions := pgx.Identifier{schema, "sessions"}.Sanitize()
	for _, q := range []string{
		"ALTER TABLE " + sessions + " DROP COLUMN compactions",
		"DELETE FROM " + pgx.Identifier{schema, "schema_migrations"}.Sanitize() + " WHERE version = 4",
	} {
		if _, err := admin(t).Exec(bg, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s = openIn(t, schema)
	for id, n := range want {
		info, err := s.Stat(bg, store.Key{Agent: "a", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if info.Compactions != n {
			t.Errorf("%s after migrating: %d compactions, want %d", id, info.Compactions, n)
		}
	}
}

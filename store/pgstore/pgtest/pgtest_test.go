package pgtest_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/pgstore/pgtest"
	"github.com/spool-go/spool/transcript"
)

func TestURL(t *testing.T) {
	var schema string
	t.Run("uses", func(t *testing.T) {
		u := pgtest.URL(t)
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		schema = parsed.Query().Get("schema")
		// Two opens of the URL are two replicas on one schema.
		a, err := store.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close(a)
		b, err := store.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close(b)
		key := store.Key{Agent: "a", ID: "s"}
		e, _ := transcript.New(time.Now(), transcript.TypeUserMessage, "t", transcript.UserMessage{Text: "hi"})
		if err := a.Append(t.Context(), key, e); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Read(t.Context(), key); err != nil || len(got) != 1 {
			t.Fatalf("the other replica reads %d entries, %v", len(got), err)
		}
	})
	conn, err := pgx.Connect(context.Background(), pgtest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if schema == "" || exists {
		t.Fatalf("schema %q still exists after the test ended", schema)
	}
}

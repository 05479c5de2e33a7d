package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/sqlitestore"
	"github.com/spool-go/spool/transcript"
)

func Example() {
	dir, err := os.MkdirTemp("", "spool-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// Or store.Open(ctx, "sqlite:"+path) with this package imported.
	s, err := sqlitestore.New(ctx, filepath.Join(dir, "spool.db"), sqlitestore.WithTTL(30*24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	key := store.Key{Agent: "support", Owner: "alice", ID: "s1"}
	e, err := transcript.New(time.Now(), transcript.TypeUserMessage, "t1", transcript.UserMessage{Text: "Where is order 1042?"})
	if err != nil {
		log.Fatal(err)
	}
	// Durable when Append returns.
	if err := s.Append(ctx, key, e); err != nil {
		log.Fatal(err)
	}

	page, err := s.List(ctx, key.Namespace(), store.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Sessions[0].ID, page.Sessions[0].Title)

	hits, err := s.Search(ctx, key.Namespace(), store.SearchQuery{Text: "ORDER 1042"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hits[0].SessionID, hits[0].Snippet)
	// Output:
	// s1 Where is order 1042?
	// s1 Where is order 1042?
}

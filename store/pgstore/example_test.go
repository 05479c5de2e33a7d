package pgstore_test

import (
	"context"
	"log"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore"
)

// Several replicas open the same URL; the first to start creates the
// schema, the others find it done.
func ExampleOpen() {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, "postgres://spool@db.internal:5432/spool?schema=spool&ttl=720h&pool_max_conns=20")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// Clear expired sessions of namespaces that see no new sessions.
	go func() {
		for range time.Tick(time.Hour) {
			if _, err := s.Sweep(ctx); err != nil {
				log.Printf("sweep: %v", err)
			}
		}
	}()

	page, err := s.List(ctx, store.Namespace{Agent: "support"}, store.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range page.Sessions {
		log.Println(info.ID, info.Title)
	}
}

// Through the store registry, as `spool serve --store URL` opens it.
func Example_registry() {
	s, err := store.Open(context.Background(), "postgresql://spool@db.internal/spool?schema=spool")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(s)
	_ = s.(store.Locker) // per-session advisory locks for turns
}

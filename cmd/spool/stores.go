package main

import (
	"context"

	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/memstore" // memory:
)

// openStore opens the store a URL names.
func openStore(ctx context.Context, env *environ, rawURL string, encrypt bool) (store.Store, error) {
	return store.Open(ctx, rawURL)
}

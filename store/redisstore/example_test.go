package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
)

// Open a store by URL, with sessions that expire after a day idle.
func ExampleOpen() {
	ctx := context.Background()
	s, err := redisstore.Open(ctx, "redis://127.0.0.1:6379/0?prefix=myapp&ttl=24h")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(ctx, store.Namespace{Agent: "support", Owner: "alice"}, store.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range page.Sessions {
		fmt.Println(info.ID, info.Title)
	}
}

// Wrap a Redis Cluster client; every key of one agent and owner lands in
// one slot.
func ExampleNew() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
	})
	defer client.Close()
	s, err := redisstore.New(context.Background(), client, redisstore.WithTTL(7*24*time.Hour), redisstore.WithLockLease(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	_ = s // use s as a store.Store
}

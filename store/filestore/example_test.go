package filestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

func Example() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "spool-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	// The same as store.Open(ctx, "file:"+root+"?maxSessions=20").
	s, err := filestore.New(ctx, root, filestore.WithRetention(store.Retention{MaxSessions: 20}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	key := store.Key{Agent: "support", Owner: "alice", ID: "order-1042"}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	question, _ := transcript.New(now, transcript.TypeUserMessage, "t1", transcript.UserMessage{Text: "Where is order 1042?"})
	answer, _ := transcript.New(now.Add(time.Second), transcript.TypeAssistantMessage, "t1", transcript.AssistantMessage{Text: "It ships today."})
	answer.ParentID = question.ID // a conditional append: answer follows question
	for _, e := range []transcript.Entry{question, answer} {
		if err := s.Append(ctx, key, e); err != nil { // durable when it returns
			log.Fatal(err)
		}
	}

	page, err := s.List(ctx, key.Namespace(), store.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range page.Sessions {
		fmt.Printf("%s: %q, %d messages\n", info.ID, info.Title, info.MessageCount)
	}
	entries, err := s.Read(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "support", "users", "alice", "order-1042.jsonl")); err == nil {
		fmt.Println(len(entries), "entries in support/users/alice/order-1042.jsonl")
	}
	// Output:
	// order-1042: "Where is order 1042?", 2 messages
	// 2 entries in support/users/alice/order-1042.jsonl
}

package storekit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

func TestCheckAppendRefusesWhatWouldNotReadBack(t *testing.T) {
	k := store.Key{Agent: "a", ID: "s"}
	ok := transcript.Entry{ID: "e1", Type: transcript.TypeUserMessage, TurnID: "t", Timestamp: time.Now().UTC().Truncate(time.Millisecond)}
	if err := storekit.CheckAppend(k, "", ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(e *transcript.Entry){
		"unknown status": func(e *transcript.Entry) { e.Status = "bogus" },
		"year 10000":     func(e *transcript.Entry) { e.Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year 1600":      func(e *transcript.Entry) { e.Timestamp = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) },
		"invalid UTF-8":  func(e *transcript.Entry) { e.ID = "abc\xff" },
		"NUL in id":      func(e *transcript.Entry) { e.ID = "abc\x00" },
		"control type":   func(e *transcript.Entry) { e.Type = "user\nmessage" },
		"data not JSON":  func(e *transcript.Entry) { e.Data = []byte(`{"a":`) },
	}
	for name, mutate := range bad {
		e := ok
		mutate(&e)
		if err := storekit.CheckAppend(k, "", e); !errors.Is(err, store.ErrInvalidEntry) {
			t.Errorf("%s: %v, want ErrInvalidEntry", name, err)
		}
	}
}

func TestCheckChain(t *testing.T) {
	k := store.Key{Agent: "a", ID: "s"}
	chain := []transcript.Entry{{ID: "1"}, {ID: "2", ParentID: "1"}, {ID: "3", ParentID: "2"}, {ID: "4"}}
	if err := storekit.CheckChain(k, 0, "", chain); err != nil {
		t.Fatal(err)
	}
	if err := storekit.CheckChain(k, 5, "", chain[1:]); err != nil {
		t.Fatalf("a slice from the middle: %v", err)
	}
	gap := []transcript.Entry{chain[0], chain[2]}
	var ce *store.CorruptError
	if err := storekit.CheckChain(k, 0, "", gap); !errors.As(err, &ce) || ce.Position != 1 {
		t.Fatalf("a missing entry: %v", err)
	}
	if err := storekit.CheckChain(k, 0, "", chain[1:]); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a missing start: %v", err)
	}
	if err := storekit.CheckChain(k, 3, "x", chain[2:3]); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("the wrong predecessor: %v", err)
	}
}

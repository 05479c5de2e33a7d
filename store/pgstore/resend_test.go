package pgstore

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// An append committed, its reply was lost with its connection, and the
// append sent again (againOnLostConn) is refused before it runs: the
// server, restarting or out of connections, turns the new connection
// away. That second refusal says nothing of the first try, which is in
// the session: the append must not fail as a plain refusal (the caller
// would take the entry for not appended), but say nil or
// ErrOutcomeUnknown.
func TestResentAppendRefused(t *testing.T) {
	for _, op := range []string{"append", "batch"} {
		t.Run(op, func(t *testing.T) {
			schema := newSchema(t)
			direct := openIn(t, schema)
			p, u := faultnet.New(t, testURL(t))
			cfg, err := pgxpool.ParseConfig(u)
			if err != nil {
				t.Fatal(err)
			}
			var refuse atomic.Bool
			cfg.AfterConnect = func(context.Context, *pgx.Conn) error {
				if refuse.Load() {
					return &pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"}
				}
				return nil
			}
			via := openPool(t, cfg, schema)
			key := store.Key{Agent: "a", ID: "resent"}
			c := newChain(t, via, key, time.Now())
			first := c.user("one")
			a := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
			b := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "three"})
			b.ParentID = a.ID
			want := []transcript.Entry{first, a}
			tag := "INSERT 0 1"
			if op == "batch" {
				want, tag = append(want, b), "INSERT 0 2"
			}
			refuse.Store(true) // new connections; the pooled one is in
			cut := p.CutReply(tag)
			if op == "batch" {
				err = via.AppendBatch(t.Context(), key, []transcript.Entry{a, b})
			} else {
				err = via.Append(t.Context(), key, a)
			}
			select {
			case <-cut:
			default:
				t.Fatalf("the reply was not cut (%v)", err)
			}
			refuse.Store(false)
			got, rerr := direct.Read(t.Context(), key)
			if rerr != nil {
				t.Fatal(rerr)
			}
			equalEntries(t, got, want) // the first try committed
			if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("%s whose first try committed and whose second was refused: %v; want nil or ErrOutcomeUnknown", op, err)
			}
		})
	}
}

// A statement that outlived its own deadline (appendPart's appendTimeout,
// set apart from the caller's context, which still allows) did not lose
// its connection: the server is slow, and may still be running it. That
// is no reason to reset the pool and send the statement again.
func TestConnLostNotATimeout(t *testing.T) {
	s := newStore(t)
	sctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := s.pool.Exec(sctx, `SELECT pg_sleep(5)`)
	if err == nil {
		t.Fatal("pg_sleep(5) within 100ms")
	}
	if s.connLost(t.Context(), err) {
		t.Fatalf("connLost(%v) = true for a statement past its deadline", err)
	}
}

// An append whose connection could not even be dialed (the server down,
// the port closed) sent nothing: it fails as a plain error, not
// ErrOutcomeUnknown, which would send its caller to find out what a
// server it cannot reach may have stored.
func TestRefusedDialNotUnknown(t *testing.T) {
	for _, op := range []string{"append", "batch", "first"} {
		t.Run(op, func(t *testing.T) {
			schema := newSchema(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := ln.Addr().String()
			ln.Close() // nothing listens there: a dial is refused
			cfg, err := pgxpool.ParseConfig(testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			var refuse atomic.Bool
			dial := cfg.ConnConfig.DialFunc
			cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if refuse.Load() {
					addr = closed
				}
				return dial(ctx, network, addr)
			}
			via := openPool(t, cfg, schema)
			key := store.Key{Agent: "a", ID: "refused"}
			c := newChain(t, via, key, time.Now())
			c.user("one")
			a := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
			b := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "three"})
			b.ParentID = a.ID
			refuse.Store(true)
			via.pool.Reset() // the pooled connections go: the next one is dialed
			switch op {
			case "batch":
				err = via.AppendBatch(t.Context(), key, []transcript.Entry{a, b})
			case "first":
				err = via.Append(t.Context(), store.Key{Agent: "a", ID: "new"}, c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "new"}))
			default:
				err = via.Append(t.Context(), key, a)
			}
			if err == nil || errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("%s whose connection was refused: %v; want a plain error, not ErrOutcomeUnknown", op, err)
			}
		})
	}
}

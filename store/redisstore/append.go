package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// appendTimeout bounds an append once it has been sent. The caller's
// context is not used from then on: a command cancelled in flight may
// still run, and Append must report what happened, not a guess.
const appendTimeout = 30 * time.Second

// settleTimeout bounds the check, after an append failed without a reply,
// of whether it was applied.
const settleTimeout = 5 * time.Second

// fenceTTL is how long settleScript's fence refuses a late copy of an
// append: longer than TCP goes on retransmitting the data of a connection
// that was closed.
const fenceTTL = time.Hour

// Where appendArgs puts the wire line and the nonce among the script's
// arguments, for settle.
const (
	argLine  = 2
	argNonce = 12
)

// Append adds e at the end of the session if e.ParentID is the session's
// last entry id, atomically in one script, and otherwise fails with
// store.ErrConflict. An error other than ErrNotDurable and
// ErrOutcomeUnknown means that e was not appended; see the package
// documentation for how that is ensured and for what is durable when it
// returns.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	keys, args, err := s.appendArgs(key, e)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: append to session %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()

	var res any
	if s.wait == nil {
		res, err = appendScript().Run(ctx, s.c, keys, args...).Result()
	} else {
		res, err = s.appendAndWait(ctx, keys, args)
	}
	if err != nil && res == nil {
		return s.settle(ctx, key, keys, args, err)
	}
	if r, ok := res.([]any); ok && len(r) > 0 {
		switch {
		case r[0] == int64(1):
			if err != nil {
				return fmt.Errorf("redisstore: append to session %s: %w: %v", key, ErrNotDurable, err)
			}
			return nil
		case r[0] == int64(0) && len(r) == 2:
			head, _ := r[1].(string)
			return storekit.ConflictError(key, e.ParentID, head)
		case r[0] == int64(2) && len(r) == 2:
			return &store.CorruptError{Key: key, Position: -1, Where: "redis keys " + keys[0] + ", " + keys[1],
				Err: fmt.Errorf("the entry list (%v entries) and the session hash disagree about whether the session exists", r[1])}
		case r[0] == int64(3):
			// Only a late copy of a call already settled gets this reply,
			// and nobody reads it; this call's nonce is new.
			return fmt.Errorf("redisstore: append to session %s: refused as a call given up on earlier", key)
		}
	}
	return fmt.Errorf("redisstore: append to session %s: unexpected script reply %v", key, res)
}

// appendArgs checks e and returns the keys and arguments of appendScript
// for it. What store.SessionInfo.Apply does with e is worked out here;
// the script only applies it.
func (s *Store) appendArgs(key store.Key, e transcript.Entry) ([]string, []any, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, nil, err
	}
	// The script compares the parent with the real head; here only the
	// entry itself is checked, and encoded.
	line, err := storekit.CheckEntry(key, e)
	if err != nil {
		return nil, nil, err
	}
	// Activity is kept, indexed and put in cursors as unix nanoseconds:
	// CheckEntry has made sure that an int64 holds the entry's.
	var one store.SessionInfo
	one.Apply(key, e)
	isMessage := "0"
	if one.MessageCount > 0 {
		isMessage = "1"
	}
	pending := "0"
	switch {
	case one.PendingApprovals > 0:
		pending = "1"
	case e.Type == transcript.TypeApprovalDecision:
		pending = "-1"
	}
	retitle := "0"
	if store.Retitles(e) {
		retitle = "1"
	}
	compaction := "0"
	if one.Compactions > 0 {
		compaction = "1"
	}
	gc := 0
	if s.ttl > 0 {
		gc = s.gcSample
	}
	k := s.keys(key.Namespace())
	keys := []string{k.log(key.ID), k.info(key.ID), k.index(), k.fence(key.ID)}
	args := []any{
		e.ParentID, e.ID, line,
		strconv.FormatInt(e.Timestamp.UnixNano(), 10), member(e.Timestamp, key.ID),
		isMessage, one.Title, pending,
		s.ttl.Milliseconds(), s.pendingTTL.Milliseconds(),
		gc, k.sessionPrefix(), nonce(), retitle, compaction,
	}
	return keys, args, nil
}

// settle is what Append returns when the append script failed without a
// reply (sendErr): a lost reply, a broken connection, a timeout, go-redis
// giving up after sending it again. The script may or may not have run,
// so settleScript, in a fresh short context, fences the call off and finds
// out whether its entry is in the session.
func (s *Store) settle(ctx context.Context, key store.Key, keys []string, args []any, sendErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	in, err := settleScript().Run(ctx, s.c, []string{keys[1], keys[0], keys[3]},
		args[argNonce], args[argLine], fenceTTL.Milliseconds()).Int()
	switch {
	case err != nil:
		return fmt.Errorf("redisstore: append to session %s: %w: %w (finding out: %v)", key, ErrOutcomeUnknown, sendErr, err)
	case in == 1 && s.wait != nil:
		return fmt.Errorf("redisstore: append to session %s: %w: the reply was lost: %v", key, ErrNotDurable, sendErr)
	case in == 1:
		return nil
	}
	return fmt.Errorf("redisstore: append to session %s: not appended: %w", key, sendErr)
}

// fenceRest settles the items of a pipeline after one whose append did
// not land, each whose command got no reply: the call returns that
// failure, and a copy of their commands still on its way (resent by the
// client, or held in the network) must not land after it returned, as
// the fence makes sure (settle). Those of other sessions could. What a
// settle finds is not the call's answer any more.
func (s *Store) fenceRest(ctx context.Context, items []pipelined, cmds []redis.Cmder) {
	for j, c := range cmds {
		if res, err := c.(*redis.Cmd).Result(); err != nil && res == nil {
			s.settle(ctx, items[j].key, items[j].keys, items[j].args, err)
		}
	}
}

// appendAndWait runs appendScript and then WAIT or WAITAOF on the same
// connection, which is what those commands need: they wait for the writes
// of their own connection. On a cluster that is a connection to the
// primary that serves the session's slot.
func (s *Store) appendAndWait(ctx context.Context, keys []string, args []any) (any, error) {
	var node *redis.Client
	switch c := s.c.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, keys[0]); err != nil {
			return nil, err
		}
	}
	conn := node.Conn()
	defer conn.Close()
	res, err := appendScript().Run(ctx, conn, keys, args...).Result()
	if err != nil {
		return nil, err
	}
	if r, ok := res.([]any); !ok || len(r) == 0 || r[0] != int64(1) {
		return res, nil // nothing was written, so there is nothing to wait for
	}
	if s.wait.aof {
		return res, s.waited(conn.WaitAOF(ctx, s.wait.local, s.wait.replicas, s.wait.timeout))
	}
	return res, s.waited(conn.Wait(ctx, s.wait.replicas, s.wait.timeout))
}

// waited reports whether the WAIT or WAITAOF reply has the copies asked
// for.
func (s *Store) waited(cmd redis.Cmder) error {
	switch c := cmd.(type) {
	case *redis.IntCmd:
		n, err := c.Result()
		if err != nil {
			return err
		}
		if int(n) < s.wait.replicas {
			return fmt.Errorf("WAIT: %d of %d replicas within %v", n, s.wait.replicas, s.wait.timeout)
		}
	case *redis.IntSliceCmd:
		v, err := c.Result()
		if err != nil {
			return err
		}
		if len(v) != 2 || int(v[0]) < s.wait.local || int(v[1]) < s.wait.replicas {
			return fmt.Errorf("WAITAOF: %v of %d local and %d replicas within %v", v, s.wait.local, s.wait.replicas, s.wait.timeout)
		}
	}
	return nil
}

// nonce returns a random token that tells one Append call from another.
func nonce() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// AppendBatch adds entries at the end of the session (store.BatchAppender)
// in one round trip: the append script, once for each entry, pipelined,
// each checking its parent against the head as Append does, so a batch
// whose first parent is not the head appends nothing. What is durable when
// it returns is what is durable after Append (see the package
// documentation); a store that waits for copies (WAIT or WAITAOF) appends
// one entry at a time. When a reply is lost, each unanswered entry is
// settled as Append settles one, in order, and the first that was not
// appended ends the batch with Append's error.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	return s.AppendBulk(ctx, []store.Batch{{Key: key, Entries: entries}})
}

// AppendBulk appends every batch (store.BulkAppender) as AppendBatch
// appends one, all of them in one pipeline: one round trip for an
// import's chunk of many short sessions instead of one per session. The
// first entry that is refused or fails ends the call with its error,
// naming its session; batches of other sessions sent in the same pipeline
// may be appended or not, as the contract allows, and a transfer run
// again finds what is there.
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	n := 0
	for _, b := range batches {
		if err := store.ValidateKey(b.Key); err != nil {
			return err
		}
		if err := storekit.ValidBatch(b.Key, b.Entries); err != nil {
			return err
		}
		n += len(b.Entries)
	}
	if n <= 1 || s.wait != nil {
		for _, b := range batches {
			for _, e := range b.Entries {
				if err := s.Append(ctx, b.Key, e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	items := make([]pipelined, 0, n)
	for _, b := range batches {
		for _, e := range b.Entries {
			keys, args, err := s.appendArgs(b.Key, e)
			if err != nil {
				return err
			}
			items = append(items, pipelined{key: b.Key, e: e, keys: keys, args: args})
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: append to session %s: %w", batches[0].Key, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	return s.appendPipelined(ctx, items)
}

// pipelined is one entry of AppendBulk with its script's keys and
// arguments.
type pipelined struct {
	key  store.Key
	e    transcript.Entry
	keys []string
	args []any
}

// appendPipelined runs the append script for each item, in order, in one
// pipeline, and checks the replies as Append checks its one.
func (s *Store) appendPipelined(ctx context.Context, items []pipelined) error {
	for done := 0; done < len(items); {
		pipe := s.c.Pipeline()
		for _, it := range items[done:] {
			appendScript().EvalSha(ctx, pipe, it.keys, it.args...)
		}
		cmds, _ := pipe.Exec(ctx)
		start := done
		for j, c := range cmds {
			it := items[done]
			res, err := c.(*redis.Cmd).Result()
			if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				// The server lost its scripts (a restart): load it, send the
				// rest again.
				if err := appendScript().Load(ctx, s.c).Err(); err != nil {
					return fmt.Errorf("redisstore: append to session %s: %w", it.key, err)
				}
				break
			}
			if err != nil && res == nil {
				if err := s.settle(ctx, it.key, it.keys, it.args, err); err != nil {
					s.fenceRest(ctx, items[start+j+1:start+len(cmds)], cmds[j+1:])
					return err
				}
				done++
				continue
			}
			if r, ok := res.([]any); ok && len(r) == 2 && r[0] == int64(0) {
				head, _ := r[1].(string)
				return storekit.ConflictError(it.key, it.e.ParentID, head)
			}
			if r, ok := res.([]any); !ok || len(r) == 0 || r[0] != int64(1) {
				return fmt.Errorf("redisstore: append to session %s: unexpected script reply %v", it.key, res)
			}
			done++
		}
	}
	return nil
}

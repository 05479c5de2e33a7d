package spool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// NoticeCompactionFailed is the kind of the governance.notice entry an
// automatic compaction appends when its summarizer fails.
const NoticeCompactionFailed = "compaction_failed"

// Backoff of automatic compaction after a summarizer failure: the first
// retry waits compactBackoff, each further one twice as long, up to
// compactBackoffMax.
const (
	compactBackoff    = time.Minute
	compactBackoffMax = time.Hour
)

// background runs an agent's automatic compactions: at most one per
// session at a time, each on its own goroutine, all stopped and waited for
// by Close.
type background struct {
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	running map[store.Key]bool
}

// start runs fn for key on a goroutine of its own, unless one runs for key
// already or the agent is closed.
func (b *background) start(key store.Key, fn func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.running[key] {
		return
	}
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
		b.running = map[store.Key]bool{}
	}
	b.running[key] = true
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			b.mu.Lock()
			delete(b.running, key)
			b.mu.Unlock()
		}()
		fn(b.ctx)
	}()
}

// stop cancels what runs and waits for it.
func (b *background) stop() {
	b.mu.Lock()
	b.stopped = true
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// afterTurn runs when a call that ran a turn (or part of one) returns: the
// turn's answer is with its consumer, and the session is free. With
// automatic compaction configured, a compaction is considered in the
// background; the next call on the session waits for it if it runs.
func (s *Session) afterTurn(ctx context.Context) {
	if !s.a.cfg.Compaction.automatic() {
		return
	}
	user, _ := UserFromContext(ctx)
	s.a.bg.start(s.key, func(bctx context.Context) {
		if user != "" {
			bctx = ContextWithUser(bctx, user)
		}
		s.autoCompact(bctx)
	})
}

// autoCompact compacts the session if a trigger holds. A summarizer that
// fails is recorded and retried after a backoff; nothing it does fails a
// turn.
func (s *Session) autoCompact(ctx context.Context) {
	_ = s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		s.compactIfDue(ctx, sl)
		return nil
	})
}

// compactIfDue is autoCompact with the session held (sl). A turn calls it
// too before it asks the model, when the model refused the last turn as
// longer than its context window: the compaction after that turn runs in
// the background, and the next turn may come first.
func (s *Session) compactIfDue(ctx context.Context, sl *slot) {
	a := s.a
	if !s.compactionDue(sl) {
		return
	}
	_, err := s.compact(ctx, sl, CompactOptions{})
	switch {
	case err == nil:
		sl.compactFailures, sl.compactAfter = 0, time.Time{}
	case errors.Is(err, ErrNothingToCompact):
		sl.overflowed = false // nothing left that a compaction could shrink
	case errors.Is(err, ErrSummarizer) && ctx.Err() == nil:
		sl.compactFailures++
		wait := compactBackoff << min(sl.compactFailures-1, 6)
		sl.compactAfter = time.Now().Add(min(wait, compactBackoffMax))
		_, nerr := s.writer(sl).append(ctx, transcript.TypeGovernanceNotice, sl.st.newTurnID(a.now()), "",
			transcript.GovernanceNotice{Kind: NoticeCompactionFailed, Message: err.Error()})
		if nerr != nil {
			a.log.LogAttrs(ctx, slog.LevelWarn, "recording a failed compaction", slog.String("session", s.key.ID), slog.String("error", nerr.Error()))
		}
	}
}

// compactionDue reports whether a trigger of Config.Compaction holds for
// the session in sl, and no failure's backoff is running.
func (s *Session) compactionDue(sl *slot) bool {
	c := s.a.cfg.Compaction
	st := sl.st
	if st.open != nil || time.Now().Before(sl.compactAfter) {
		return false
	}
	if sl.overflowed {
		return true // the model refused the history as too long
	}
	if c.Turns > 0 && st.sinceCompaction >= c.Turns {
		return true
	}
	return c.Tokens > 0 && s.a.historySize(st.hist.Messages()).Tokens > c.Tokens
}

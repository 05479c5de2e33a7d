// Package spool runs AI agents whose conversations are sessions: durable,
// private, append-only transcripts that an agent continues across restarts,
// processes, machines and months.
//
// An [Agent] is one configuration (a name, instructions, a model, tools, a
// store); a [Session] is one conversation with it:
//
//	agent, err := spool.New(spool.Config{Name: "support", Model: echo.New()})
//	sess, err := agent.NewSession(ctx)      // or agent.OpenSession(ctx, id)
//	res, err := sess.Send(ctx, "Where is order 1042?")
//
// With no Store in the [Config], sessions go to the file store in the
// user's data folder (spool/sessions under $XDG_DATA_HOME or ~/.local/share
// on Linux, ~/Library/Application Support on macOS, %LOCALAPPDATA% on
// Windows), one JSON line per entry; package store/filestore says what is
// on disk when a call returns. Any other store (memory, SQLite, PostgreSQL,
// Redis, IndexedDB, or one of your own that passes store/storetest) is a
// value of [store.Store].
//
// A turn ([Session.Send], or [Session.Stream] for a Go iterator of events)
// appends the prompt, streams the model's answer, runs the tools it calls
// and appends every step before it returns. A tool that needs approval
// pauses the turn: the call returns with the pending [Approval], which
// survives a restart, and [Session.Approve] or [Session.Deny] resumes it.
// Each model request carries the history that package history builds from
// the transcript (the window, the budget, failed and refused turns left
// out).
//
// A conversation is a tree in the same append-only transcript:
// [Session.Regenerate] answers the newest turn again, [Session.Edit] asks an
// earlier question differently, [Session.SwitchBranch] goes back to a
// version made before, and [Agent.Fork] copies a session up to a turn into
// a new one. Each appends a marker and never rewrites an entry; the model is
// sent the active branch only, and [Session.Messages] and [Session.Page]
// show it with each turn's versions ([Message.Branch]).
//
// Calls on one session run one after the other, in arrival order; calls on
// different sessions run concurrently; processes sharing a store keep a
// session's order through the store's conditional append. Errors are
// values to test with errors.Is ([ErrApprovalPending], [ErrBusy],
// [store.ErrNotFound], …); a turn that fails is still recorded.
//
// Live turns: every event of a turn has an id ([Event.ID], an [EventID]),
// [Session.Watch] follows a session's turns as they run, from any event,
// and [Session.Stop] ends the running turn, in this process or in
// another sharing the store. Across processes it depends on the store:
// one that is a [store.Notifier] (memory, PostgreSQL through
// LISTEN/NOTIFY, Redis through pub/sub, and on Unix the file and SQLite
// stores through Unix domain sockets between the processes of one
// machine) carries every delta of a turn to the watchers of other
// replicas, and a stop to the replica running it; with one that is not
// (a store of one's own without it; the file and SQLite stores on
// Windows), a watcher in a process that does not run the turn follows
// the transcript, read every [PollInterval]: it gets each step
// as it is stored and the turn's end, not each delta, unless it shares
// the process that runs the turn, and Stop reaches only this process's
// turns. A turn whose process died (no answer to a sync) is followed
// through the transcript to its end, which the watcher's process records
// as cancelled once the store's lock shows no process holds the turn
// (what the next turn on the session would do first).
//
// The command spool (cmd/spool) and the HTTP handler (package server) are
// built on this package; the runnable flow, with a restart in the middle,
// is the package Example.
package spool

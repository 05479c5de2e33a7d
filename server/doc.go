// Package server is the HTTP face of an agent: an http.Handler, with no
// listener of its own, that a program mounts in its own mux beside its own
// routes (spool serve is a thin program around it).
//
// # Routes
//
//	POST   /invoke                                 {"prompt","sessionId"?} → the turn's Result as JSON (default session "http")
//	POST   /chat                                   the HTTP channel: {"sessionId"?,"text"} → SSE or JSON
//	GET    /v1/sessions                            ?limit=&cursor= → {"sessions":[…],"nextCursor":…|null}
//	GET    /v1/sessions/{id}                       the session's info
//	DELETE /v1/sessions/{id}                       204
//	PATCH  /v1/sessions/{id}                       {"title"} → renamed (a session.title entry): the session's info
//	GET    /v1/search                              ?q=&limit=&session= → {"hits":[{sessionId, entryId, snippet, time, title}]}, newest first
//	GET    /v1/sessions/{id}/messages              ?limit=&order=asc|desc&cursor=&branches=active|all → {"messages":[…],"nextCursor":…|null,"turns":[…]}
//	GET    /v1/sessions/{id}/history               what the next model request carries → {"messages":[…],"summary"?:{…}}
//	GET    /v1/sessions/{id}/approvals             pending approvals → {"approvals":[…]}
//	POST   /v1/sessions/{id}/approvals/{approval}  {"decision":"allow"|"deny","scope"?:"once"|"session","reason"?} → resumes the turn: SSE or JSON
//	POST   /v1/sessions/{id}/regenerate            {} or no body → the newest turn answered again: SSE or JSON
//	POST   /v1/sessions/{id}/turns/{turn}/edit     {"text"} → the turn's question asked as text, in its place: SSE or JSON
//	POST   /v1/sessions/{id}/turns/{turn}/switch   → 204: that version of its place is active again
//	POST   /v1/sessions/{id}/fork                  {"atTurn","sessionId"?} → 201 with the new session's info
//	POST   /v1/sessions/{id}/stop                  → {"sessionId","turnId"}: the running turn ended, recorded cancelled (404 not_running when none)
//	GET    /v1/sessions/{id}/events                SSE of the session's live events: Last-Event-ID or ?after= resumes, ?follow=1 stays for the next turns
//	POST   /v1/sessions/{id}/compact               {"keepTurns"?} or no body → the compaction's spool.CompactResult
//	POST   /api/chat                               the AI SDK UI message stream protocol (useChat)
//	GET    /api/chat/{id}                          the stored conversation as the AI SDK's UIMessages → {"id","messages":[…]}
//	GET    /api/chat/{id}/stream                   the AI SDK resume route: the running turn's UI message stream, 204 when none
//	POST   /mcp                                    the agent as a stateless MCP server (streamable HTTP), tool "send_message"
//	POST   /channels/<name>/…                      the webhooks of Options.Channels (server/channel/slack, telegram, discord)
//	GET    /healthz                                liveness: {"status":"ok"}; touches nothing
//	GET    /readyz                                 readiness: 200, or 503 naming the failed checks (store, channels, shutdown)
//	GET    /metrics                                Options.Metrics (Prometheus text), behind the keys
//	GET    /v1/openapi.json                        the OpenAPI 3.1 document of every route (OpenAPI)
//
// The OpenAPI document (openapi.json in this package, OpenAPI, Routes)
// describes every route, its errors and its events; the package's tests
// check every response they get against it.
//
// A turn's JSON answer is a spool.Result: {"sessionId","turnId","status",
// "text","usage",…}; status "awaiting_approval" lists "pendingApprovals".
//
// # Branches
//
// A conversation is a tree kept in an append-only transcript (see package
// spool's Regenerate, Edit, SwitchBranch and Agent.Fork). The messages
// route shows the active branch; a message of a turn with other versions
// carries "branch":{"index","count","turns"} ("2 / 3", and the turn ids to
// switch to), and branches=all lists every branch, messages off the
// active one marked "superseded":true. Regenerate and edit answer like
// /chat, their Result naming the turns they replaced ("supersedes").
// Regenerate, edit and switch are refused with 409 while a turn runs
// (turn_running) or an approval is pending (approval_pending); edit and
// switch with 409 not_on_branch for a turn off the active branch; a turn
// id the session does not have (on a user-scoped agent: another user's)
// is 404 turn_not_found. Fork copies the active branch up to atTurn into
// a new session of the caller's, 409 session_exists for a sessionId in
// use.
//
// # Live turns
//
// A turn belongs to its session, not to the connection that started it.
// With Options.OnDisconnect continue (the default; spool serve
// --on-disconnect), a turn started over /chat, /api/chat, /invoke, the
// approval route, regenerate or edit runs to its end when its client goes
// away, on a context that keeps the request's values but not its
// cancellation, bounded by Options.TurnTimeout (an abandoned turn cannot
// hold a model call forever) and ended by Close. Stopping is explicit:
// POST /v1/sessions/{id}/stop (spool.Session.Stop) ends the running turn,
// recorded cancelled, and answers once that is recorded. With
// OnDisconnect cancel, a client that goes away stops its turn, as before
// (an MCP client before the protocol 2026-07-28, for which closing a
// call's request is no cancel, stops it with notifications/cancelled).
// An MCP client that cancels its send_message call (notifications/cancelled,
// on every protocol version) stops the call's turn, recorded cancelled,
// whatever OnDisconnect says. The notification is matched to a call this
// replica runs by its request id and by its sender: the same bearer key
// and the same user; one for another caller's call, for an id no call
// runs, or for an id two running calls of one caller share is ignored.
// /chat queues at most Options.MaxQueue requests per session; more are
// 429 queue_full with Retry-After.
//
// Any client can follow a turn: GET /v1/sessions/{id}/events streams the
// running turn from its beginning, or every event after Last-Event-ID
// (or ?after=), and ends with the turn; ?follow=1 stays open for the
// session's next turns. The replay and the live events join with no gap
// and no repeat (spool.Session.Watch). GET /api/chat/{id}/stream is the
// same for the AI SDK: the running turn's UI message stream from the
// start of its assistant message (the client's replay; for a run that
// an approval's answer began, what the turn's earlier runs stored comes
// first), 204 when none runs. A malformed Last-Event-ID, or one past the session, is 400
// bad_event_id; watchers over the agent's bounds are 429
// too_many_watchers.
//
// # Event streams
//
// /chat and the approval route answer with Server-Sent Events when the
// request has Accept: text/event-stream. Each event is named by the kind
// of the runtime's event (turn_start, step_start, text, tool_call,
// approval_request, tool_result, step_end, delegate, turn_end) and its
// data is that spool.Event as JSON, its SSE id the event's id
// (spool.EventID, "P.N", also in the data as "id"); every stream opens
// with a retry: hint (RetryHint). A stream that fails ends with an
// "error" event whose data is {"error":{"code","message","requestId"}},
// requestId being the request's X-Request-Id (the cause of an internal
// error is logged under it), and retryAfter when the error has one (the
// event has no Retry-After header). The AI SDK route's stream ends such
// a failure with the protocol's error chunk, {"type","errorText"}, whose
// text ends with "(request id <id>)": the chunk has no field for it, and
// older ai clients refuse one with a field they do not know. /chat sends
// a "session" event first, {"sessionId"}, also in the X-Spool-Session-Id
// header. Events are flushed as they are produced, and comment lines
// (": ping") keep an idle stream open. A client that goes away leaves
// its turn running to its end (see Live turns), or, with OnDisconnect
// cancel, stops it, recorded cancelled.
//
// # Ordering
//
// Requests on one session are answered one at a time in arrival order:
// /chat requests in the order they take their place in the session's
// queue (Options.OnAccept reports that order), the other routes in the
// runtime's order. Different sessions run concurrently.
//
// # Chat platforms
//
// Options.Channels connects more channel drivers to the agent. A driver
// that is an http.Handler (the chat platforms) is mounted at
// /channels/<Name>/; its routes authenticate the platform's own way
// (Slack's signing secret, Telegram's secret token, Discord's Ed25519
// signature) before anything is touched, need no bearer key, and are not
// held to the Host check of a keyless server. Shutdown stops them taking
// messages and gives the turns they run until its context ends; Close
// stops those turns at once (recorded cancelled).
//
// # Identity
//
// With Options.Keys, every request needs "Authorization: Bearer <key>"
// (401 and WWW-Authenticate otherwise). A key maps to a user or to project
// access (see Key). On a user-scoped agent a user key sees only that
// user's sessions: another user's session id is 404 on every route, and
// never listed. A project key on a user-scoped agent must name the user it
// acts for in the X-Spool-User header (403 user_required without it): the
// form for a trusted backend that signs its own users in. On a
// project-scoped agent every key reaches the project's shared sessions.
// Without keys every request has project access and the server answers
// only to loopback Host names (see Options.AllowedHosts), which defeats
// DNS rebinding; expose such a server on loopback only. Such a server also
// refuses (403) a request that changes something when it comes from
// another site's page: the browser says so (Sec-Fetch-Site) and the
// page's Origin is not one of Options.AllowedOrigins, or, from a browser
// that does not say, its Origin is neither the server's own nor allowed.
// A form or a fetch in no-cors mode needs no preflight, and its Host is
// the server's.
//
// # Errors
//
// Every error is JSON {"error":{"code","message"}} with an honest status:
// 400 (bad_request: malformed JSON, a body that cannot be read;
// unsupported_media: a body that is not application/json;
// invalid_request: JSON with a field the route does not take, naming the
// fields it does, or a field of the wrong type; a blank prompt, a bad
// limit, order or cursor, a session id in a body that no session can
// have), 401, 403, 404 (an unknown route; a session that does
// not exist or is not the caller's, including an id in a URL that no
// session can have; an approval not pending; a turn the session does not
// have), 405 with Allow, 409 (an approval is pending; another process is
// running a turn on the session, with Retry-After; a turn is running, or
// is off the active branch, for regenerate, edit and switch; a fork's
// session id is taken), 408 (request_timeout: the body did not arrive within
// Options.ReadTimeout, 30 seconds by default), 410 (the session expired
// with an approval pending), 413 (a body over Options.MaxBodyBytes, 1 MiB
// by default), 422 (context_too_long: the model refused the session's
// history as longer than its context window; compact the session), 429 (the
// model provider is rate limiting; the session or agent used its token
// budget), 500, 502 (the turn ended with an error of the model; the body
// names the session and turn), 503 (shutting down, the channel closed,
// the turn was cancelled, the store failed mid-turn). The codes are the
// Code constants. The message is for people and may be reworded; what a
// client needs to word a refusal itself is a field: "retryAfter", the
// seconds to wait, on every error that has a Retry-After header (the
// same number; in an event stream's error event it is the only place),
// "maxBytes", the largest body taken, on body_too_large, and "budget",
// the token budget that ran out, with "budgetScope", whose ("session": a
// new session has its own; "agent": shared by every session, the
// operator's to raise), on over_budget, and "stopping", true on an
// unavailable that is the server or its chat channel going away (retry,
// perhaps with another replica; a failed store or a request out of time
// leaves it out). A turn that fails inside an
// event stream ends with its turn_end, whose result's error carries the
// same budget and budgetScope.
//
// # Operations
//
// GET /healthz and GET /readyz need no key and are not held to the Host
// check (a kubelet or a load balancer names the server by its address);
// they name no version unless Options.Version is set. /readyz is 200 when
// the store answers within Options.ReadyTimeout (store.Ping: a ping where
// the store has one, else a List of one session; one check at a time,
// its answer reused for a second), the channels are open and the server
// is not draining; else 503 with "failed" naming the checks, never an
// error's text. Drain turns /readyz to 503 and changes nothing else, for
// a load balancer to notice; Shutdown then refuses new requests (503,
// Retry-After, Connection: close; the probes still answer), waits for
// those in flight and the channels' turns until its context ends, and
// closes.
//
// With Options.TracerProvider or MeterProvider, every request has an
// otelhttp server span named by its route (never the raw path), which
// continues the client's trace and is the parent of the turn's spans, and
// is counted in http.server.request.duration by route and status; the
// server adds spool.server.active_streams (open event streams, by route)
// and spool.channel.queue.depth (messages waiting behind a running turn,
// by channel). Probes and /metrics make no spans.
//
// # Logs
//
// Every request gets an id (X-Request-Id: the client's if it is 1-64 of
// A-Z a-z 0-9 . _ : -, else a fresh one), returned in the response and
// carried by every log line about the request. Each request has one
// access line, "request": method, route (the pattern it matched, never
// the raw path or query), status, bytes, duration, the key's name and,
// on a user-scoped agent, the user acted for; health probes' lines are at
// debug level. Logs hold methods, routes, statuses, sizes, durations, key
// names, ids and error codes: never prompts, answers, tool arguments or
// results. LogHandler adds the request id to the runtime's own lines.
package server

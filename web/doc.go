// Package web is the browser UI of an agent's HTTP server: a chat page
// served at / by server.Options.UI (spool serve sets it). It is plain
// HTML, CSS and JavaScript modules embedded in the binary with go:embed:
// no build step, no framework, nothing fetched from elsewhere.
//
// The page talks only to the server's own API, with relative URLs (so it
// also works mounted under a path prefix with http.StripPrefix):
// GET v1/sessions for the conversation list (newest first, the next page
// when the list's end scrolls into view), GET v1/search for the search
// box (hits open their message, loading older pages as needed),
// GET v1/sessions/{id}/messages with order=desc for a conversation (older
// pages when its top scrolls into view; each page's turns say how they
// ended, their model, usage and duration, and how their approvals were
// answered), GET v1/sessions/{id}/history for the "What the model sees"
// panel and for the divider "Earlier turns summarized" (after the last
// turn its "summary" covers, opening to the summary's text; the covered
// turns stay shown), POST v1/sessions/{id}/compact for the panel's Compact
// button (what it covered, or why nothing was), POST chat with Accept: text/event-stream for a message and its
// streamed answer, POST v1/sessions/{id}/approvals/{approval} for Allow,
// Deny and Always (allow for the session), POST .../regenerate,
// .../turns/{turnId}/edit and .../turns/{turnId}/switch for Regenerate,
// Edit and the "2 / 3" version switcher, PATCH v1/sessions/{id} for
// Rename, and DELETE v1/sessions/{id} after a confirmation dialog (from the
// conversation or its entry in the list).
//
// # Live sessions
//
// The open conversation follows its session with GET
// v1/sessions/{id}/events?follow=1 (fetch, not EventSource, which cannot
// send an Authorization header): a turn that another tab or device
// starts shows here as it streams, its question read from the messages
// page, since the events do not carry it. The tab's own runs are left
// out by run: their session and the P of their event ids ("P.N", the
// run's position in that session's transcript, so every session has a
// run at 0), the same on the tab's own stream and on the follow
// stream, so a turn the tab started and another tab resumed (an approval
// answered there) streams here too; events read back from the
// transcript, whose ids name entries, are told by turn id. Events that
// come before the tab's own stream has said its first id are held until
// it has. A dropped stream reconnects with ?after= the last event id it
// had (the server's Last-Event-ID rule), waiting 1 s, then twice as long
// each time, up to 15 s, and at least a refusal's retryAfter (a 429
// too_many_watchers says 5 s) up to a minute (a proxy's retryAfter of a
// day would leave the page not live for a day); a 4xx other than 429
// ends the following.
//
// A turn that was already running when the conversation opened (or was
// reloaded, or left and opened again while a turn the tab sent ran, or
// whose stream from the tab broke off before its end: the conversation
// is then opened again; a new conversation whose first turn was not seen
// to begin, and so may not be stored yet, is looked for again for up to
// 10 s before the page says it is not found), or that resumes after an
// approval answered elsewhere,
// streams on from what the page holds: the follow stream starts at the
// running run's beginning, and at its first event what the page showed
// of that run from the transcript goes (everything after the question
// for a run that starts with a model request; from the decided call's
// result on for one that resumes), so each part shows once. While a turn
// of another tab runs the composer shows Stop (and Escape stops), which
// stops it on the server (POST v1/sessions/{id}/stop); a stopped turn is
// then shown as the transcript recorded it (the tab's own Stop too: once
// the stop is recorded, or, when a question was sent meanwhile, once its
// answer ends, so that the new answer is not cut off). The pending
// approvals are read beside the page and shown when they come, not
// waited for. If the newest turn had no end when
// the page was read and has one once the follow stream is open, unseen
// (it ended in between, and a stream without an id does not replay a
// run already over), the conversation is read again.
//
// A view at the end of the conversation stays at the end as answers end
// and their footers (Regenerate, the versions) come, so that the next
// turn, from this tab or another, is followed; a view scrolled up stays
// where it is. Regenerate and an edit's Send leave the focus in the
// message box, as sending does: the button goes with the answer it
// replaces. A turn that failed as longer than the model's context window,
// rate limited, refused the server's key by the model provider (auth) or
// over its token budget says in the page's words what to do (compact, try
// later, ask the operator to check the provider's API key, start a new
// chat or ask for the agent's budget to be raised); another failure
// shows the recorded message. The server's refusals say so too:
// unavailable (the server restarting; try again in a moment, after the
// server's own cause when it names another), queue_full (wait for the
// answers), too_many_watchers (close tabs), over_budget, session_expired
// (start a new chat), body_too_large (shorten the message, with the
// server's limit), forbidden (the server's reason; ask the operator) and
// internal, which gives the request id the server logged it under (the
// response's X-Request-Id; in an event stream's error event, its
// requestId, else the stream's X-Request-Id) for
// the person to quote. Their numbers come from the error's fields, never
// its message, which the server may reword: the limit from maxBytes, the
// wait of rate_limited, session_busy and too_many_watchers from
// retryAfter, which budget ran out and its size (over_budget, of an
// answer or of a failed turn) from budgetScope and budget; without the
// field the words name no number. An unavailable is the server going
// away when its error says stopping (or says nothing, as a proxy's);
// otherwise the page keeps the server's words.
//
// The list follows the caller's other tabs and devices by polling its
// first page (GET v1/sessions) every 5 s while the tab is visible, and at
// once when it becomes visible: new conversations, message counts,
// titles and approvals waiting; a session followed in the open
// conversation updates its entry at once. Polling, not a per-user event
// feed, on purpose: the list is one indexed read per store (no
// transcript is read), it works unchanged on every store and across
// replicas, and a feed would need a hook in every append and, across
// replicas, a notification per append; a feed can replace it without
// changing the page's contract.
//
// # Markdown
//
// Answers are GitHub-flavoured Markdown, rendered as they stream: marked
// parses, highlight.js colours fenced code, DOMPurify sanitizes into a
// DocumentFragment. Raw HTML in an answer shows as text, images become
// links (an answer never makes the browser fetch anything), and only
// http(s) and mailto links are kept, opening a new tab with
// rel="noopener noreferrer". The three libraries are pinned files under
// static/vendor, listed with version, license, tarball integrity and
// SHA-256 in vendor/manifest.json; scripts/vendor-web updates them from
// npm and TestVendoredFiles checks them.
//
// # API keys
//
// When the API answers 401 the page asks for a key and sends it as
// "Authorization: Bearer <key>". The key is kept in sessionStorage: it
// survives reloads of the tab and is forgotten when the tab closes. A
// "Remember on this device" box keeps it in localStorage instead. Both
// are readable by any script of the server's origin, which is why the
// page allows no script but its own (see ContentSecurityPolicy).
//
// # Guarantees
//
// Content (user messages, tool arguments and results, session titles) is
// only ever put into the page as text, never parsed as HTML; answers are
// parsed only through DOMPurify, as above. The Content-Security-Policy
// allows scripts, styles and connections to the page's own origin only,
// with no inline script and Trusted Types required, with DOMPurify's
// policy the only one allowed, so that a mistake cannot turn content into
// markup.
//
// The page is served with "Cache-Control: no-cache" and a strong ETag
// (it is checked on every load, and costs a 304 when unchanged); its
// assets live under assets/<version>/, where the version is a digest of
// every embedded file, and are cached for a year as immutable. Every
// response is gzip-compressed when the client accepts it and that saves
// bytes.
package web

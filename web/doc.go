// Package web is the browser UI of an agent's HTTP server: a chat page
// served at / by server.Options.UI (spool serve sets it). It is plain
// HTML, CSS and JavaScript modules embedded in the binary with go:embed:
// no build step, no framework, nothing fetched from elsewhere.
//
// The page talks only to the server's own API, with relative URLs (so it
// also works mounted under a path prefix with http.StripPrefix):
// GET v1/sessions for the conversation list (newest first, the next page
// when the list's end scrolls into view), GET v1/sessions/{id}/messages
// with order=desc for a conversation (older pages when its top scrolls
// into view), POST chat with Accept: text/event-stream for a message and
// its streamed answer, POST v1/sessions/{id}/approvals/{approval} for
// Allow, Deny and Always (allow for the session), DELETE
// v1/sessions/{id} after a confirmation dialog.
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
// Content (model answers, tool arguments and results, session titles) is
// only ever put into the page as text, never parsed as HTML, and the
// Content-Security-Policy allows scripts, styles and connections to the
// page's own origin only, with no inline script and Trusted Types
// required, so that a mistake cannot turn content into markup.
//
// The page is served with "Cache-Control: no-cache" and a strong ETag
// (it is checked on every load, and costs a 304 when unchanged); its
// assets live under assets/<version>/, where the version is a digest of
// every embedded file, and are cached for a year as immutable. Every
// response is gzip-compressed when the client accepts it and that saves
// bytes.
package web

// The server's HTTP API as the UI uses it. URLs are relative to the page,
// so the UI works wherever the server is mounted.

import { apiKey } from './auth.js';
import { readEvents } from './sse.js';

// count is n when it is a positive whole number, else 0: a field of an
// error that a server may leave out.
const count = (n) => (Number.isSafeInteger(n) && n > 0 ? n : 0);

// ApiError is an error answer of the API ({"error":{"code","message"}}),
// or status 0 and code "network" when the server could not be reached.
// requestId is the id the server logged the request under (its
// X-Request-Id), when the answer came. fields is the answer's error
// object, whose numbers the page's words take, never the message's
// text (the server may reword it): retryAfter, the seconds to wait
// before trying again, maxBytes, the largest body the server takes
// (body_too_large), and budget, the token budget that ran out
// (over_budget); each 0 when the server did not say. budgetScope is
// whose budget ran out (over_budget): "session", "agent", or '' when
// the server did not say. stopping is true when the server said an
// unavailable is it going away (shutting down, its chat channel closed).
export class ApiError extends Error {
  constructor(status, code, message, requestId = '', fields = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
    this.retryAfter = count(fields?.retryAfter);
    this.maxBytes = count(fields?.maxBytes);
    this.budget = count(fields?.budget);
    this.budgetScope = ['session', 'agent'].includes(fields?.budgetScope) ? fields.budgetScope : '';
    this.stopping = fields?.stopping === true;
  }
}

// apiError is the ApiError of the JSON error e ({"code","message",…}, as
// an event stream's error event carries it), with code and message
// when e has none.
export const apiError = (status, e, code, message, requestId = '') =>
  new ApiError(status, e?.code || code, e?.message || message, requestId || e?.requestId || '', e);

// againIn says when to try again: in the seconds err's retryAfter asks
// for, or as fallback says when the server did not say.
function againIn(err, fallback) {
  const n = err.retryAfter;
  if (!n) return fallback;
  return n === 1 ? 'in a second' : `in ${n} seconds`;
}

// sentence ends text with a full stop unless it has one.
export const sentence = (s) => (/[.!?…]$/.test(s) ? s : `${s}.`);

// unavailable says what a 503 means. One the server marks stopping
// (shutting down, its chat channel closed), or that says nothing (a
// proxy's), is a server that goes away, perhaps to come back; other
// causes (the store down, a request out of time) are kept as the server
// says them.
function unavailable(err) {
  if (err.stopping || !err.message) return 'The server is shutting down or restarting. Try again in a moment.';
  return `${sentence(err.message)} Try again in a moment.`;
}

// overBudget says which token budget is used up, the session's or the
// agent's (for every conversation), and its size, from err's fields
// (budgetScope, budget), and what to do: a new chat has a budget of its
// own, the agent's is the operator's to raise. A server that did not say
// gets the general sentence.
function overBudget(err) {
  const of = err.budget ? ` of ${err.budget} tokens` : '';
  if (err.budgetScope === 'session') return `This conversation has used its budget${of}. Start a new chat to go on.`;
  if (err.budgetScope === 'agent') return `The agent has used its budget${of}, shared by every conversation. Ask the operator to raise it.`;
  return 'The token budget is used up. Start a new chat, or ask the operator to raise the budget.';
}

// friendly returns what to tell a person about err.
export function friendly(err) {
  if (!(err instanceof ApiError)) return err && err.message ? err.message : String(err);
  switch (err.code) {
    case 'network':
      return 'The server could not be reached. Check that it is running, then try again.';
    case 'approval_pending':
      return 'A tool call is waiting for your approval: allow or deny it first.';
    case 'session_busy':
      return `Another turn is running in this conversation. Try again ${againIn(err, 'in a moment')}.`;
    case 'session_not_found':
      return 'This conversation does not exist (it may have been deleted).';
    case 'rate_limited':
      return `The model provider is rate limiting requests. Try again ${againIn(err, 'later')}.`;
    case 'cancelled':
      return 'The answer was stopped.';
    case 'turn_running':
      return 'A turn is running in this conversation: wait for it to end, or stop it.';
    case 'context_too_long':
      return 'This conversation is longer than the model can read at once. Compact it, then send your message again.';
    case 'nothing_to_compact':
      return 'Nothing to compact yet: the newest turns are kept as they are, and there are no older ended turns to summarize.';
    case 'summarizer_failed':
      return 'The model could not write the summary, so nothing was compacted. Try again later.';
    case 'connection_lost':
      return 'The connection to the server was lost before the answer was complete. Reload to see what was recorded.';
    case 'unavailable':
      return unavailable(err);
    case 'queue_full':
      return 'Too many messages are already waiting for an answer in this conversation. Wait for them to be answered, then try again.';
    case 'too_many_watchers':
      return `Too many tabs or devices are following conversations on this server. Close the ones you do not need, or try again ${againIn(err, 'later')}.`;
    case 'over_budget':
      return overBudget(err);
    case 'session_expired':
      return 'This conversation expired while a tool call waited for approval, and cannot go on. Start a new chat.';
    case 'body_too_large':
      return `The message is too long for the server${err.maxBytes ? `, which takes at most ${err.maxBytes} bytes` : ''}. Shorten it, then send it again.`;
    case 'forbidden':
      return `The server refused this request${err.message ? `: ${sentence(err.message)}` : '.'} If you should have access, ask the operator.`;
    case 'internal':
      // The server logs the cause under the request's id, and tells
      // only that: the id is what the operator needs.
      return err.requestId
        ? `Something went wrong on the server. Try again; if it keeps failing, give the operator this request id: ${err.requestId}`
        : 'Something went wrong on the server. Try again; if it keeps failing, tell the operator.';
    // A turn's error code (transcript), not the API's: the provider
    // refused the server's own key, which only the operator can change.
    case 'auth':
      return "The model provider did not accept the server's API key. Ask the operator to check the model provider's API key.";
  }
  return err.message || `The server answered ${err.status}.`;
}

// requestIdOf is the id the server gave the request, for a person to
// quote (the server logs an internal error's cause under it).
const requestIdOf = (res) => res.headers.get('X-Request-Id') || '';

async function errorOf(res) {
  let e = null;
  try {
    e = (await res.json())?.error ?? null;
  } catch {
    // not JSON: keep the status line
  }
  return apiError(res.status, e, `http_${res.status}`, `The server answered ${res.status} ${res.statusText}`.trim(), requestIdOf(res));
}

async function request(method, url, { body, accept = 'application/json', signal } = {}) {
  const headers = { Accept: accept };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
      credentials: 'same-origin',
    });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', err.message);
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

const json = async (res) => (res.status === 204 ? null : res.json());
// seg is one path segment naming s. A URL resolves "." and ".." as steps
// of its path, escaped or not (/v1/sessions/../messages is /v1/messages),
// and no id is either (the server refuses them as ids): a name that is
// one is not found, without asking the server.
function seg(s) {
  if (s === '.' || s === '..') throw new ApiError(404, 'session_not_found', 'no such session');
  return encodeURIComponent(s);
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

// listSessions returns {sessions, nextCursor}: newest activity first.
export async function listSessions(limit, cursor, signal) {
  return json(await request('GET', `v1/sessions${query({ limit, cursor })}`, { signal }));
}

// sessionInfo returns one session's info.
export async function sessionInfo(id, signal) {
  return json(await request('GET', `v1/sessions/${seg(id)}`, { signal }));
}

// messages returns {messages, nextCursor}, newest first.
export async function messages(id, limit, cursor, signal) {
  const q = query({ order: 'desc', limit, cursor });
  return json(await request('GET', `v1/sessions/${seg(id)}/messages${q}`, { signal }));
}

// approvals returns the session's pending approvals, oldest first.
export async function approvals(id, signal) {
  return (await json(await request('GET', `v1/sessions/${seg(id)}/approvals`, { signal }))).approvals;
}

// history returns what the next model request would carry:
// {messages: [{role, content, toolCalls?, toolCallId?}], summary?}, with
// summary ({entryId, firstTurn, lastTurn, text, index}) while a
// compaction stands in for older turns.
export async function history(id, signal) {
  return json(await request('GET', `v1/sessions/${seg(id)}/history`, { signal }));
}

// compact summarizes the session's older turns for the model (the agent's
// number of newest turns kept as they are) and returns the CompactResult:
// {entryId, firstTurn, lastTurn, turns, newTurns, summary, before, after}.
export async function compact(id) {
  return json(await request('POST', `v1/sessions/${seg(id)}/compact`));
}

// search returns {hits: [{sessionId, entryId, snippet, time, title}]},
// newest first.
export async function search(q, limit, signal) {
  return json(await request('GET', `v1/search${query({ q, limit })}`, { signal }));
}

// rename gives a session a title and returns its info.
export async function rename(id, title) {
  return json(await request('PATCH', `v1/sessions/${seg(id)}`, { body: { title } }));
}

// switchBranch makes a version of a turn active again.
export async function switchBranch(id, turnId) {
  await request('POST', `v1/sessions/${seg(id)}/turns/${seg(turnId)}/switch`);
}

// deleteSession deletes a session.
export async function deleteSession(id) {
  await request('DELETE', `v1/sessions/${seg(id)}`);
}

// stopTurn stops the turn running on a session (a client that merely
// goes away leaves it running).
export async function stopTurn(id) {
  await request('POST', `v1/sessions/${seg(id)}/stop`);
}

// events yields the events of an event-stream response as {type, data,
// id} with data parsed from JSON.
async function* events(res) {
  const type = res.headers.get('Content-Type') || '';
  if (!type.startsWith('text/event-stream')) {
    throw new ApiError(res.status, 'bad_response', `Expected an event stream, got ${type || 'no content type'}.`);
  }
  const stream = readEvents(res.body);
  try {
    for (;;) {
      let next;
      try {
        next = await stream.next();
      } catch (err) {
        if (err.name === 'AbortError') throw err;
        throw new ApiError(0, 'connection_lost', err.message);
      }
      if (next.done) return;
      let data;
      try {
        data = JSON.parse(next.value.data);
      } catch {
        continue; // not one of ours
      }
      // An error event is of the request that opened the stream: it
      // carries that request's id.
      if (next.value.event === 'error' && data?.error && typeof data.error === 'object' && !data.error.requestId) data.error.requestId = requestIdOf(res);
      yield { type: next.value.event, data, id: next.value.id };
    }
  } finally {
    // A consumer that leaves early ends the reading, which closes the
    // connection.
    await stream.return();
  }
}

// chat sends text to a session (a new one when id is empty) and yields
// the answer's events: "session" ({sessionId}) first, then the turn's.
export async function* chat(id, text, signal) {
  const body = { text };
  if (id) body.sessionId = id;
  const res = await request('POST', 'chat', { body, accept: 'text/event-stream', signal });
  // The session's id comes in a header too, and is yielded from there at
  // once: a stream that breaks off before its first event still names
  // the session the server may be answering in.
  const sse = (res.headers.get('Content-Type') || '').startsWith('text/event-stream');
  const sid = sse && res.headers.get('X-Spool-Session-Id');
  if (sid) yield { type: 'session', data: { sessionId: sid }, id: '' };
  for await (const ev of events(res)) {
    if (!(sid && ev.type === 'session')) yield ev;
  }
}

// decide answers a pending approval ("allow" or "deny", scope "once" or
// "session") and yields the events of the resumed turn.
export async function* decide(id, approvalId, decision, scope, signal) {
  const res = await request('POST', `v1/sessions/${seg(id)}/approvals/${seg(approvalId)}`, {
    body: { decision, scope },
    accept: 'text/event-stream',
    signal,
  });
  yield* events(res);
}

// regenerate answers the newest turn again and yields the new turn's
// events.
export async function* regenerate(id, signal) {
  const res = await request('POST', `v1/sessions/${seg(id)}/regenerate`, { accept: 'text/event-stream', signal });
  yield* events(res);
}

// edit asks turnId's question again as text, in place of it and what
// followed, and yields the new turn's events.
export async function* edit(id, turnId, text, signal) {
  const res = await request('POST', `v1/sessions/${seg(id)}/turns/${seg(turnId)}/edit`, {
    body: { text },
    accept: 'text/event-stream',
    signal,
  });
  yield* events(res);
}

// follow opens the stream of a session's turns as they run, the turns
// other tabs and devices start included (GET /v1/sessions/{id}/events?
// follow=1), and returns its events once the server follows; after, the
// id of the last event had, resumes the stream just after it.
export async function follow(id, after, signal) {
  const url = `v1/sessions/${seg(id)}/events?follow=1${after ? `&after=${seg(after)}` : ''}`;
  return events(await request('GET', url, { accept: 'text/event-stream', signal }));
}

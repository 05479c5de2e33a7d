// The conversation view: one session's messages, newest at the bottom,
// older pages prepended when the top scrolls into view, and turns
// streamed in as they run. Each turn ends with a footer that says how it
// ended as the model will see it (a stopped, failed or refused turn is
// left out of the next request), its model, usage and duration, and its
// versions ("2 / 3") when it was regenerated or edited.

import * as api from './api.js';
import { ApiError, apiError, friendly, sentence } from './api.js';
import { h, when, compactJSON } from './dom.js';
import { render } from './markdown.js';

const PAGE = 30;
// Tool arguments and results longer than this are folded.
const FOLD = 160;

const said = (who) => h('span', { class: 'visually-hidden' }, `${who}: `);

export function userItem(m) {
  return h(
    'li',
    { class: 'msg user', dataset: { turnId: m.turnId || '', id: m.id || '' } },
    said('You'),
    h('div', { class: 'body' }, m.text),
    m.time ? when(m.time) : null,
  );
}

function markdownBody(text) {
  const body = h('div', { class: 'body md' });
  body.append(render(text));
  return body;
}

function assistantItem(m) {
  return h(
    'li',
    { class: 'msg assistant', dataset: { turnId: m.turnId || '', id: m.id || '' } },
    said('Assistant'),
    markdownBody(m.text),
    m.time ? when(m.time) : null,
  );
}

// folded shows text in a <details> that starts closed when it is long.
function folded(cls, summary, text) {
  const d = h('details', { class: 'fold' }, h('summary', {}, summary), h('pre', { class: cls }, text));
  if (text.length <= FOLD) d.open = true;
  return d;
}

function preview(text) {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 60 ? `${one.slice(0, 60)}…` : one;
}

function toolCallItem(call, turnId) {
  const args = compactJSON(call.arguments);
  return h(
    'li',
    { class: 'tool call', dataset: { callId: call.id || '', turnId: turnId || '' } },
    h('span', { class: 'tag' }, 'Tool call'),
    h('code', { class: 'name' }, call.name),
    folded('args', args.length > FOLD ? preview(args) : 'Arguments', args),
  );
}

function toolResultItem(r, turnId) {
  const out = r.result ?? '';
  return h(
    'li',
    { class: r.isError ? 'tool result failed' : 'tool result', dataset: { callId: r.callId || '', turnId: turnId || '' } },
    h('span', { class: 'tag' }, r.isError ? 'Tool error' : 'Tool result'),
    h('code', { class: 'name' }, r.tool),
    folded('out', out.length > FOLD ? preview(out) : 'Output', out),
  );
}

function noticeItem(text, error, turnId) {
  return h('li', { class: error ? 'notice failed' : 'notice', role: error ? 'alert' : null, dataset: { turnId: turnId || '' } }, text);
}

// summaryItem is the divider after the turns a compaction summarized for
// the model, folded to its text.
function summaryItem(s) {
  return h(
    'li',
    { class: 'summary-divider', dataset: { entryId: s.entryId } },
    h(
      'details',
      {},
      h('summary', {}, 'Earlier turns summarized'),
      h('p', { class: 'hint' }, 'The model now reads this summary in place of the turns above; they stay in the conversation.'),
      h('pre', { class: 'summary-text' }, s.text),
    ),
  );
}

// renderMessage returns the items of a message of the API.
function renderMessage(m) {
  switch (m.role) {
    case 'user':
      return [userItem(m)];
    case 'assistant':
      return [m.text ? assistantItem(m) : null, ...(m.toolCalls || []).map((c) => toolCallItem(c, m.turnId))].filter(Boolean);
    case 'tool':
      return [toolResultItem({ callId: m.toolCallId, tool: m.tool, result: m.text, isError: m.isError }, m.turnId)];
  }
  return [];
}

// failure says why a turn failed: in the page's words when its code
// names something the person can act on (the provider's own message
// says neither what to do nor that it will fail again; a budget's
// fields say which budget, and the page's words keep that), else the
// recorded message.
const actionable = new Set(['context_too_long', 'rate_limited', 'auth', 'over_budget']);
function failure(e) {
  if (actionable.has(e?.code)) return friendly(new ApiError(0, e.code, e.message || '', '', e));
  return sentence(e?.message || 'the turn ended with an error');
}

// ending says how a turn ended as the next request sees it, or null for
// a turn that ended well (or has not ended). A turn that ended well with
// a notice has an answer the provider stopped (its output limit, its
// content filter): kept, and shown as incomplete.
export function ending(t) {
  const notice = (t.notices || []).map((n) => sentence(n.message)).filter(Boolean).join(' ') || t.notice || '';
  const left = 'It is left out of what the model sees next.';
  switch (t.status) {
    case 'cancelled':
      return { kind: 'cancelled', text: `Stopped before the answer was complete. ${left}` };
    case 'error':
      return { kind: 'error', text: `Failed: ${failure(t.error)} ${left}` };
    case 'prompt_blocked':
      return { kind: 'refused', text: `Refused: ${sentence(notice || 'a guard refused this message')} ${left}` };
    case 'response_blocked':
      return { kind: 'refused', text: `Answer withheld: ${sentence(notice || 'a guard stopped the answer')} The model sees only the question.` };
    case 'ok':
      return notice ? { kind: 'cut', text: `Incomplete: ${sentence(notice)}` } : null;
  }
  return null;
}

const plural = (n, one) => `${n.toLocaleString()} ${one}${n === 1 ? '' : 's'}`;

// meta is the footer's line of model, tokens and time.
function meta(t) {
  const parts = [];
  if (t.model) parts.push(t.model);
  if (t.usage && (t.usage.inputTokens || t.usage.outputTokens)) parts.push(`${plural(t.usage.inputTokens || 0, 'token')} in, ${(t.usage.outputTokens || 0).toLocaleString()} out`);
  if (t.durationMs) parts.push(`${(t.durationMs / 1000).toFixed(t.durationMs < 10000 ? 1 : 0)} s`);
  return parts.join(' · ');
}

// runOf returns the run an event id ("P.N") names, P: the same for
// every event of one run, on the stream that started it and on any
// follower's. An id read back from the transcript (N from storedBase,
// 2^32, in the Go package) names an entry, not a run: "".
export function runOf(id) {
  const m = /^(\d+)\.(\d+)$/.exec(id || '');
  return m && Number(m[2]) < 2 ** 32 ? m[1] : '';
}

// runKey names a run across sessions: a run's position is its session's
// (every session's first run is at 0), so a run of another session at
// the same place is not the same run.
const runKey = (id, run) => `${id} ${run}`;

// Turn renders the events of one streamed turn (or resumed turn) into the
// view it was started in; if the view has moved on to another
// conversation, the events are dropped (the transcript has them).
export class Turn {
  constructor(conv) {
    this.conv = conv;
    this.gen = conv.gen;
    this.id = '';
    this.raw = ''; // the Markdown of the answer being streamed
    this.bubble = null;
    this.ended = false;
  }

  get visible() {
    return this.gen === this.conv.gen;
  }

  add(node) {
    if (this.visible) this.conv.add(node);
  }

  apply(ev) {
    const d = ev.data;
    if (d.turnId && !this.id) this.id = d.turnId;
    switch (ev.type) {
      case 'text':
        this.append(d.text || '');
        break;
      case 'step_start':
        // Each step's text is one message in the transcript: show it so.
        this.close();
        break;
      case 'tool_call':
        this.close();
        this.add(toolCallItem(d.toolCall, this.id));
        break;
      case 'approval_request':
        this.close();
        if (this.visible) this.conv.addApproval(d.approval);
        break;
      case 'tool_result':
        this.close();
        this.add(toolResultItem(d.toolResult, this.id));
        if (this.visible) this.conv.settle(d.toolResult.callId);
        break;
      case 'turn_end':
        this.end(d.result || {});
        break;
      case 'error':
        this.fail(apiError(0, d.error, 'error', 'The answer failed.'));
        break;
      // turn_start, step_end and delegate events change nothing shown.
    }
  }

  append(delta) {
    if (!this.visible || !delta) return;
    const stick = this.conv.atBottom();
    if (!this.bubble) {
      this.raw = '';
      this.bubble = assistantItem({ text: '', turnId: this.id });
      this.bubble.setAttribute('aria-busy', 'true');
      this.bubble.dataset.deltas = '0';
      this.conv.add(this.bubble);
    }
    // The whole answer so far is rendered again: Markdown read from its
    // start is the only way to place a delta (it may close a list, a
    // fence or an emphasis that began long before).
    this.raw += delta;
    this.bubble.querySelector('.body').replaceChildren(render(this.raw));
    this.bubble.dataset.deltas = String(Number(this.bubble.dataset.deltas) + 1);
    if (stick) this.conv.scrollToEnd();
  }

  close() {
    if (this.bubble) {
      const stick = this.conv.atBottom();
      this.bubble.setAttribute('aria-busy', 'false');
      this.bubble.append(when(new Date().toISOString()));
      if (stick) this.conv.scrollToEnd();
    }
    this.bubble = null;
  }

  end(result) {
    this.close();
    this.ended = true;
    if (!this.visible) return;
    const id = result.turnId || this.id;
    if (result.status === 'awaiting_approval') return;
    this.conv.noteTurn({ turnId: id, status: result.status, usage: result.usage, error: result.error, notice: result.notice });
  }

  fail(err) {
    this.close();
    this.ended = true;
    this.add(noticeItem(`Error: ${friendly(err)}`, true, this.id));
  }

  stopped() {
    this.close();
    this.ended = true;
    // The turn is recorded as cancelled: say so as its footer will.
    if (this.id && this.visible) this.conv.noteTurn({ turnId: this.id, status: 'cancelled' });
    else this.add(noticeItem('Stopped.', false, this.id));
  }

  // finish is called when the stream ends.
  finish() {
    if (!this.ended) this.fail(new ApiError(0, 'incomplete', 'The connection closed before the answer was complete.'));
  }
}

export class Conversation {
  constructor({ scroller, log, ol, older, empty, onError, onRunning, onTurnEnd, onOwn, onLost, onFocusLost }) {
    this.scroller = scroller;
    this.log = log;
    this.ol = ol;
    this.older = older;
    this.empty = empty;
    this.onError = onError;
    this.onRunning = onRunning;
    this.onTurnEnd = onTurnEnd;
    // onOwn is called when a turn this tab streams learns its id or
    // ends: a follower of the session holds the events it cannot tell
    // apart from this tab's own until then.
    this.onOwn = onOwn;
    // onLost is called with a session's id, and whether the turn was
    // seen to begin, when this tab's stream of a turn there broke off
    // before the turn's end: the turn goes on on the server, and showing
    // the session again follows the rest (reset hands the run to the
    // follower). A first turn that was not seen to begin may not have
    // stored its session yet.
    this.onLost = onLost;
    this.onFocusLost = onFocusLost;
    this.own = new Set(); // ids of the turns this tab streams itself
    // The runs this tab streams itself, by session and the position in
    // their event ids (runOf; see isOwnRun): a turn another tab resumes
    // (an approval answered there) is a run of its own, shown here live.
    this.ownRuns = new Set();
    this.unknownOwn = 0; // turns this tab streams whose id is not known yet
    // session id → a function that gives the run this tab streams there
    // to the follower (see reset)
    this.handOver = new Map();
    // The turn of another tab or device shown live (live.js), "" when
    // none: the conversation is busy, and Stop stops it on the server.
    this.followed = '';
    this.id = null;
    this.missing = false; // the open id names no session
    this.draft = Symbol('draft');
    this.gen = 0; // changes whenever the view shows something else
    // The gen of a view that shows less than the transcript holds (a
    // stopped turn, while a turn sent after it runs): read again when
    // that turn ends.
    this.stale = -1;
    this.cursor = '';
    this.loading = false;
    this.turns = new Map(); // turn id → what the API said of it (TurnInfo), merged
    this.branches = new Map(); // turn id → {index, count, turns}
    this.summary = null; // the compaction the model's history uses, if any
    this.abort = new AbortController();
    this.running = new Map(); // session id (or draft symbol) → AbortController
    this.stopping = new Map(); // session id → the stop asked for, until answered
    this.io = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) this.loadOlder();
      },
      { root: scroller, rootMargin: '200px 0px 0px 0px' },
    );
  }

  get key() {
    return this.id ?? this.draft;
  }

  reset(id) {
    // A run of this tab on the session shown anew streams on through the
    // follower (live.js), which starts at the running run's beginning:
    // the run's own Turn shows nothing once the view has changed.
    if (id !== null) this.handOver.get(id)?.();
    this.gen++;
    this.abort.abort();
    this.abort = new AbortController();
    this.io.disconnect();
    this.id = id;
    this.missing = false;
    this.draft = Symbol('draft');
    this.cursor = '';
    this.loading = false;
    this.turns = new Map();
    this.branches = new Map();
    this.summary = null;
    this.ol.replaceChildren();
    this.older.textContent = 'Loading older messages…';
    this.older.hidden = true;
    this.empty.hidden = true;
  }

  // showNew shows an empty conversation that a first message creates.
  showNew() {
    this.reset(null);
    this.empty.textContent = 'Send a message to start a conversation.';
    this.empty.hidden = false;
  }

  // absorb keeps what a page says of its turns and versions.
  absorb(page) {
    for (const t of page.turns || []) {
      const old = this.turns.get(t.turnId) || {};
      const merged = { ...old };
      for (const [k, v] of Object.entries(t)) if (v != null && v !== '') merged[k] = v;
      this.turns.set(t.turnId, merged);
    }
    for (const m of page.messages) if (m.branch) this.branches.set(m.turnId, m.branch);
  }

  // open shows session id: its newest page of messages and its pending
  // approvals. It throws what the API throws, or an AbortError when
  // another open superseded it.
  async open(id) {
    this.reset(id);
    const gen = this.gen;
    const signal = this.abort.signal;
    this.quiet(true);
    this.scroller.setAttribute('aria-busy', 'true');
    // The pending approvals are not waited for: the page shows a turn
    // running on the session as it runs (live.js), whatever they take.
    const pending = api.approvals(id, signal);
    pending.catch(() => {});
    try {
      let page, hist;
      try {
        // The history says whether a summary stands in for older turns;
        // without it the conversation still shows, without the divider.
        [page, hist] = await Promise.all([api.messages(id, PAGE, '', signal), api.history(id, signal).catch(() => null)]);
      } catch (err) {
        if (gen === this.gen && err.code === 'session_not_found') this.missing = true;
        throw err;
      }
      if (gen !== this.gen) throw new DOMException('superseded', 'AbortError');
      this.absorb(page);
      this.summary = hist?.summary || null;
      const items = page.messages.toReversed().flatMap(renderMessage);
      this.ol.append(...items);
      this.decorate();
      this.showPending(pending, gen);
      this.cursor = page.nextCursor || '';
      if (!this.ol.children.length) {
        this.empty.textContent = 'This conversation has no messages yet.';
        this.empty.hidden = false;
      }
      this.older.hidden = !this.cursor;
      this.scrollToEnd();
      if (this.cursor) this.io.observe(this.older);
    } finally {
      if (gen === this.gen) {
        this.quiet(false);
        this.scroller.setAttribute('aria-busy', 'false');
      }
    }
  }

  // showPending adds the cards of the approvals pending (a promise of
  // them) when they come, unless the view has moved on.
  async showPending(pending, gen) {
    let list;
    try {
      list = await pending;
    } catch (err) {
      if (gen === this.gen && err.name !== 'AbortError' && !this.onError(err)) {
        this.showError(`Could not load the approvals waiting: ${friendly(err)}`);
      }
      return;
    }
    if (gen !== this.gen || !list.length) return;
    for (const a of list) this.addApproval(a);
    this.decorate();
  }

  // reload shows the conversation again from the API, keeping the view at
  // its end (after a regenerate, an edit or a switch of versions).
  async reload() {
    if (!this.id) return;
    try {
      await this.open(this.id);
    } catch (err) {
      if (err.name !== 'AbortError') this.onError(err);
    }
  }

  // loadOlder prepends the page of messages before those shown, keeping
  // what is on screen where it is. It resolves to false when there is no
  // older page.
  async loadOlder() {
    if (this.loading || !this.cursor || !this.id) return false;
    const gen = this.gen;
    this.loading = true;
    let page;
    try {
      page = await api.messages(this.id, PAGE, this.cursor, this.abort.signal);
    } catch (err) {
      if (gen === this.gen && err.name !== 'AbortError') {
        this.loading = false;
        this.older.textContent = `Could not load older messages: ${friendly(err)}`;
        this.onError(err);
      }
      return false;
    }
    if (gen !== this.gen) return false;
    const fromBottom = this.scroller.scrollHeight - this.scroller.scrollTop;
    this.quiet(true);
    this.absorb(page);
    this.ol.prepend(...page.messages.toReversed().flatMap(renderMessage));
    this.decorate();
    this.cursor = page.nextCursor || '';
    this.older.hidden = !this.cursor;
    // Content grew above: move by as much, so nothing on screen jumps.
    this.scroller.scrollTop = this.scroller.scrollHeight - fromBottom;
    this.quiet(false);
    this.loading = false;
    if (this.cursor) {
      this.io.unobserve(this.older);
      this.io.observe(this.older);
    }
    return true;
  }

  // reveal scrolls to the message with entry id, loading older pages
  // until it is shown; false when it is not on the active branch, null
  // when a page failed to load (the marker of older messages says so) or
  // the view moved on: each page is asked for once, never again at once.
  async reveal(entryId) {
    const gen = this.gen;
    const find = () => this.ol.querySelector(`li[data-id="${CSS.escape(entryId)}"]`);
    let li = find();
    while (!li && this.cursor) {
      if (this.loading) await new Promise((r) => setTimeout(r, 50));
      else if (!(await this.loadOlder())) return null;
      if (gen !== this.gen) return null;
      li = find();
    }
    if (!li) return false;
    for (const old of this.ol.querySelectorAll('li.found')) old.classList.remove('found');
    li.classList.add('found');
    li.setAttribute('tabindex', '-1');
    li.scrollIntoView({ block: 'center' });
    li.focus({ preventScroll: true });
    return true;
  }

  // quiet stops the log from announcing messages loaded from history
  // (only new ones are news). Turning it back on waits a moment, since
  // assistive technology reads the change after the task that made it.
  quiet(on) {
    clearTimeout(this.quietTimer);
    if (on) this.log.setAttribute('aria-live', 'off');
    else this.quietTimer = setTimeout(() => this.log.setAttribute('aria-live', 'polite'), 250);
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  add(node) {
    const stick = this.atBottom();
    this.empty.hidden = true;
    this.ol.append(node);
    if (stick) this.scrollToEnd();
  }

  // addUser shows a message the user sends and returns its item.
  addUser(text) {
    const li = userItem({ text, time: new Date().toISOString() });
    this.add(li);
    this.scrollToEnd();
    return li;
  }

  showError(message) {
    this.add(noticeItem(message, true));
  }

  // noteTurn records how a turn that just ran ended and shows it.
  noteTurn(t) {
    if (!t.turnId) return;
    const old = this.turns.get(t.turnId) || {};
    this.turns.set(t.turnId, { ...old, ...t });
    this.decorate();
  }

  // refreshTurns asks the API what it recorded of the newest turns (model,
  // duration, versions) and shows it.
  async refreshTurns() {
    if (!this.id) return;
    const gen = this.gen;
    try {
      const page = await api.messages(this.id, PAGE, '', this.abort.signal);
      if (gen !== this.gen) return;
      this.absorb(page);
      this.decorate();
    } catch (err) {
      if (err.name !== 'AbortError') this.onError(err);
    }
  }

  // decorate gives each turn shown its footer and its user message its
  // Edit button; the newest turn gets Regenerate.
  decorate() {
    // A view at its end stays there: the footers added below the newest
    // answer (its Regenerate, its versions) are seen, and what comes
    // next follows on.
    const stick = this.atBottom();
    const lastOf = new Map();
    const userOf = new Map();
    const footOf = new Map();
    for (const li of this.ol.children) {
      const t = li.dataset.turnId;
      if (!t) continue;
      if (li.classList.contains('turn-foot')) {
        if (footOf.has(t)) li.remove();
        else footOf.set(t, li);
        continue;
      }
      lastOf.set(t, li);
      if (li.classList.contains('user') && !userOf.has(t)) userOf.set(t, li);
    }
    const newest = [...lastOf.keys()].at(-1);
    for (const [t, last] of lastOf) {
      const info = this.turns.get(t);
      const br = this.branches.get(t);
      const end = info ? ending(info) : null;
      for (const li of this.ol.querySelectorAll(`li[data-turn-id="${CSS.escape(t)}"]:not(.turn-foot)`)) {
        li.classList.toggle('left-out', end?.kind === 'cancelled' || end?.kind === 'error');
      }
      const u = userOf.get(t);
      if (u && this.id && !u.querySelector('.edit')) {
        u.append(h('button', { type: 'button', class: 'link edit', onclick: () => this.startEdit(u, t) }, 'Edit'));
      }
      let foot = footOf.get(t);
      const wanted = info || br || t === newest;
      if (!wanted) {
        foot?.remove();
        continue;
      }
      if (!foot) foot = h('li', { class: 'turn-foot', dataset: { turnId: t } });
      // After the turn's last item: a paused turn grows past its footer.
      if (last.nextElementSibling !== foot) last.after(foot);
      this.fillFoot(foot, t, info, br, end, t === newest);
      for (const d of info?.decisions || []) this.markDecision(d);
    }
    // Footers whose turn is gone (replaced by a new version) go too.
    for (const foot of this.ol.querySelectorAll('li.turn-foot')) {
      if (!lastOf.has(foot.dataset.turnId)) foot.remove();
    }
    this.placeSummary(lastOf);
    if (stick) this.scrollToEnd();
  }

  // placeSummary puts the divider "Earlier turns summarized" after the
  // last turn the summary in use covers (after its footer), once that
  // turn is shown; it opens to the summary's text. The covered turns stay
  // above it: the transcript keeps them, only the model's history is
  // shorter.
  placeSummary(lastOf) {
    const s = this.summary;
    let div = this.ol.querySelector('li.summary-divider');
    const last = s && lastOf.get(s.lastTurn);
    if (!last) {
      div?.remove();
      return;
    }
    if (div?.dataset.entryId !== s.entryId) {
      div?.remove();
      div = summaryItem(s);
    }
    const foot = last.nextElementSibling?.classList.contains('turn-foot') ? last.nextElementSibling : last;
    if (foot.nextElementSibling !== div) foot.after(div);
  }

  // markDecision says on a tool call how a person answered its approval.
  markDecision(d) {
    const call = this.ol.querySelector(`li.tool.call[data-call-id="${CSS.escape(d.callId)}"]`);
    if (!call) return;
    const text = d.decision === 'deny' ? 'Denied' : d.scope === 'session' ? 'Allowed for this conversation' : 'Allowed once';
    let tag = call.querySelector('.decision');
    if (!tag) {
      tag = h('span', { class: `decision ${d.decision}` });
      call.querySelector('.name').after(tag);
    }
    tag.textContent = text;
  }

  fillFoot(foot, t, info, br, end, newest) {
    const parts = [];
    if (end) {
      parts.push(h('p', { class: `ending ${end.kind}`, role: 'note' }, end.text));
    }
    const row = h('div', { class: 'foot-row' });
    if (br && br.count > 1) {
      const go = (i) => this.switchTo(br.turns[i - 1]);
      row.append(
        h(
          'span',
          { class: 'versions', role: 'group', 'aria-label': 'Versions of this turn' },
          h('button', { type: 'button', class: 'link prev', 'aria-label': 'Previous version', disabled: br.index <= 1, onclick: () => go(br.index - 1) }, '‹'),
          h('span', { class: 'count' }, `${br.index} / ${br.count}`),
          h('button', { type: 'button', class: 'link next', 'aria-label': 'Next version', disabled: br.index >= br.count, onclick: () => go(br.index + 1) }, '›'),
        ),
      );
    }
    const m = info ? meta(info) : '';
    if (m) row.append(h('span', { class: 'meta' }, m));
    if (newest && this.id) {
      row.append(h('button', { type: 'button', class: 'link regenerate', onclick: () => this.regenerate(t) }, 'Regenerate'));
    }
    if (row.childNodes.length) parts.push(row);
    foot.replaceChildren(...parts);
  }

  // startEdit turns a user message into a box to ask it again.
  startEdit(li, turnId) {
    if (li.querySelector('form') || this.isRunning()) return;
    const body = li.querySelector('.body');
    const old = body.textContent;
    const box = h('textarea', { class: 'edit-box', rows: String(Math.min(8, old.split('\n').length + 1)), 'aria-label': 'Edit your message' });
    box.value = old;
    const form = h(
      'form',
      { class: 'edit-form' },
      box,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Send'), h('button', { type: 'button', class: 'button cancel' }, 'Cancel')),
    );
    const cancel = () => {
      form.remove();
      body.hidden = false;
      li.querySelector('.edit').hidden = false;
      li.querySelector('.edit').focus();
    };
    form.querySelector('.cancel').addEventListener('click', cancel);
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        cancel();
      }
    });
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = box.value;
      if (!text.trim() || text === old) return cancel();
      this.edit(li, turnId, text);
    });
    body.hidden = true;
    li.querySelector('.edit').hidden = true;
    li.insertBefore(form, body.nextSibling);
    box.focus();
  }

  // keepFocus gives the focus a place (onFocusLost) when it was on
  // something taken off the view (the Regenerate button, the edit
  // form's Send): it would fall back to the page's start.
  keepFocus() {
    const f = document.activeElement;
    if (!f || f === document.body) this.onFocusLost?.();
  }

  // removeFrom takes the items of turnId and every later one off the view.
  removeFrom(li) {
    while (li.nextSibling) li.nextSibling.remove();
    li.remove();
  }

  async edit(li, turnId, text) {
    const id = this.id;
    this.removeFrom(li);
    this.addUser(text);
    this.keepFocus();
    const res = await this.run((signal) => api.edit(id, turnId, text, signal));
    // Shown again from the transcript first: the view shows the turns as
    // stored, and a refusal said after that is not wiped by it. A stream
    // that broke off is shown again by onLost, which follows the rest.
    if (!res.lost) await this.reload();
    if (!res.ok && !res.shown && this.id === id) {
      this.showError(`Could not edit the message: ${friendly(res.err)}`);
      this.onError(res.err);
    }
  }

  async regenerate(turnId) {
    if (this.isRunning()) return;
    const id = this.id;
    // The question stays; what answered it is replaced.
    const items = [...this.ol.querySelectorAll(`li[data-turn-id="${CSS.escape(turnId)}"]`)];
    const user = items.find((li) => li.classList.contains('user'));
    for (const li of items) if (li !== user) li.remove();
    for (const card of this.ol.querySelectorAll('li.approval')) if (card.dataset.turnId === turnId) card.remove();
    this.keepFocus();
    const res = await this.run((signal) => api.regenerate(id, signal));
    if (!res.lost) await this.reload(); // first, as in edit
    if (!res.ok && !res.shown && this.id === id) {
      this.showError(`Could not regenerate the answer: ${friendly(res.err)}`);
      this.onError(res.err);
    }
  }

  async switchTo(turnId) {
    if (this.isRunning() || !turnId) return;
    try {
      await api.switchBranch(this.id, turnId);
    } catch (err) {
      this.showError(`Could not switch versions: ${friendly(err)}`);
      this.onError(err);
      return;
    }
    await this.reload();
    this.onTurnEnd?.(this.id);
  }

  // isOwnRun reports whether run (runOf) of session id is one this tab
  // streams (or streamed) itself.
  isOwnRun(id, run) {
    return this.ownRuns.has(runKey(id, run));
  }

  // isRunning reports whether a turn runs in the view: this tab's own,
  // or another tab's followed live.
  isRunning() {
    return this.ownRunning() || !!this.followed;
  }

  // ownRunning reports whether this tab streams a turn of the view.
  ownRunning() {
    return this.running.has(this.key);
  }

  // setFollowed marks turnId ("" for none) as the turn of another tab
  // shown live.
  setFollowed(turnId) {
    if (this.followed === turnId) return;
    this.followed = turnId;
    this.onRunning();
  }

  stop() {
    // The server runs a turn on when its client goes away: stop it
    // there, then stop reading. A turn another tab or device runs is
    // stopped the same way; its end comes through the follow stream.
    if (this.id !== null && (this.ownRunning() || this.followed)) {
      const id = this.id;
      const done = api.stopTurn(id).catch(() => {});
      this.stopping.set(id, done);
      done.then(() => this.stopping.get(id) === done && this.stopping.delete(id));
    }
    this.running.get(this.key)?.abort();
  }

  // adopt gives the draft view the id the server chose for it; false
  // when the view has moved on.
  adopt(draft, id) {
    if (this.id !== null || this.draft !== draft) return false;
    this.id = id;
    return true;
  }

  // run streams the turn that start(signal) begins into the view and
  // returns {ok, id, err, shown}: id is the session's (it may come from a
  // "session" event), err what failed, shown whether the view showed it
  // (an error before the first event is left to the caller).
  async run(start, onSession) {
    let key = this.key;
    const draft = this.draft;
    const fromDraft = this.id === null;
    let id = this.id;
    const ctl = new AbortController();
    const turn = new Turn(this);
    let started = false;
    let stopped = false;
    const setRunning = (k) => {
      this.running.set(k, ctl);
      this.onRunning();
    };
    setRunning(key);
    let unknown = true;
    this.unknownOwn++;
    let lost = false; // the stream broke off before the turn's end
    // The view's new session is announced (onSession: its URL, its list
    // entry, its follower) once the turn began, when the session is
    // stored: the "session" event comes before that, and a follower
    // started then could find no session, and a refused first message
    // would leave a URL and a list entry of a session that never was.
    let announce = null;
    let refused = false;
    const announced = () => {
      const a = announce;
      announce = null;
      a?.();
    };
    const runs = new Set(); // this run's keys in ownRuns
    const handOver = () => {
      for (const r of runs) this.ownRuns.delete(r);
      if (turn.id) this.own.delete(turn.id);
      runs.clear();
    };
    // lose gives the turn whose stream broke off to the follower, which
    // onLost starts once the view is shown again.
    const lose = (err) => {
      lost = true;
      handOver();
      return { ok: false, id, err, lost, shown: true };
    };
    const known = () => {
      if (!unknown) return;
      unknown = false;
      this.unknownOwn--;
      this.onOwn?.();
    };
    try {
      for await (const ev of start(ctl.signal)) {
        if (ev.type === 'error' && !started) {
          // Refused before the turn began (/chat reports even that in
          // its stream, after the session event): nothing was recorded.
          throw apiError(0, ev.data.error, 'error', 'The message was refused.');
        }
        if (ev.type === 'session') {
          id = ev.data.sessionId;
          // Adopt first: the view's key must be the id before the
          // running turn is filed under it.
          const adopted = fromDraft && this.adopt(draft, id);
          this.running.delete(key);
          key = id;
          setRunning(key);
          if (fromDraft) announce = () => onSession?.(id, adopted);
          continue;
        }
        announced();
        if (!started && turn.visible) {
          // The user message shown before the turn began is the turn's.
          const tid = ev.data.turnId;
          const last = [...this.ol.querySelectorAll('li.msg.user')].at(-1);
          if (tid && last && !last.dataset.turnId) last.dataset.turnId = tid;
        }
        started = true;
        turn.apply(ev);
        const run = runOf(ev.id);
        // Once the view has moved on, the run is no longer filed as this
        // tab's: shown again, the session's follower streams it.
        if (turn.visible) {
          if (turn.id) this.own.add(turn.id);
          if (run && !runs.has(runKey(id, run))) {
            runs.add(runKey(id, run));
            this.ownRuns.add(runKey(id, run));
            this.handOver.set(id, handOver);
          }
        }
        if (unknown && (run || (turn.id && !ev.id))) known();
      }
      if (!turn.ended && started && turn.visible && !ctl.signal.aborted) {
        // The stream ended without the turn's end (a proxy that closed
        // it; not a Stop, which aborts it): the turn goes on on the
        // server.
        return lose();
      }
      turn.finish();
      return { ok: true, id };
    } catch (err) {
      // A stream this tab aborted (Stop, or the view moving on) was
      // stopped, whatever error its end raised first (a server that
      // ended it on the stop may close it before the abort is felt).
      if (err.name === 'AbortError' || ctl.signal.aborted) {
        turn.stopped();
        stopped = true;
        return { ok: true, id };
      }
      if (err.code === 'connection_lost' && id && turn.visible) {
        // The connection broke off: the turn, recorded or not, goes on
        // on the server, where the follower finds it (or its end).
        return lose(err);
      }
      // Refused: nothing was recorded, the caller says so. A connection
      // lost after the request went out may have been recorded: show it
      // in the turn.
      if (!started && err.code !== 'connection_lost') {
        refused = true;
        return { ok: false, id, err, shown: false };
      }
      turn.fail(err);
      return { ok: false, id, err, shown: true };
    } finally {
      // A stream stopped or broken off before the turn began may still
      // have stored it.
      if (!refused) announced();
      known();
      if (this.handOver.get(id) === handOver) this.handOver.delete(id);
      this.running.delete(key);
      this.onRunning();
      if ((!turn.visible || stopped) && id && id === this.id) {
        // The view was reopened while the turn ran, or the turn was
        // stopped part-way: show what the transcript holds of it (a stop
        // may come after the server has recorded more, or all), once the
        // stop asked for is recorded (its answer comes then; read before,
        // the transcript may not have the turn's end yet). A turn sent in
        // the meantime is not cut off: the view is read again when it
        // ends (stale).
        const gen = this.gen;
        Promise.resolve(this.stopping.get(id)).then(() => {
          if (id !== this.id || gen !== this.gen) return;
          if (this.ownRunning()) this.stale = gen;
          else this.open(id).catch(() => {});
        });
      } else if (turn.visible && id) {
        if (this.stale === this.gen) this.open(id).catch(() => {});
        else this.refreshTurns();
      }
      if (id) this.onTurnEnd?.(id);
      if (lost && id === this.id) this.onLost?.(id, started);
    }
  }

  card(approvalId) {
    return this.ol.querySelector(`li.approval[data-approval-id="${CSS.escape(approvalId)}"]`);
  }

  // addApproval shows a pending approval with its Allow, Deny and Always
  // allow buttons.
  addApproval(a) {
    if (this.card(a.id)) return;
    const sid = this.id;
    const heading = `approval-${a.id}`;
    const outcome = h('p', { class: 'outcome', role: 'status' });
    const choices = [
      ['allow', 'once', 'Allow', 'button primary'],
      ['deny', 'once', 'Deny', 'button'],
      ['allow', 'session', 'Always allow', 'button'],
    ];
    const card = h(
      'li',
      {
        class: 'approval',
        tabindex: '-1',
        'aria-labelledby': heading,
        dataset: { approvalId: a.id, callId: a.callId, turnId: a.turnId || '' },
      },
      h('p', { class: 'question', id: heading }, 'Allow the tool ', h('code', {}, a.tool), ' to run?'),
      h('pre', { class: 'args' }, JSON.stringify(a.arguments ?? {}, null, 2)),
      h(
        'div',
        { class: 'actions', role: 'group', 'aria-label': `Decision on ${a.tool}` },
        choices.map(([decision, scope, label, cls]) =>
          h(
            'button',
            {
              type: 'button',
              class: cls,
              dataset: { decision, scope },
              title: scope === 'session' ? `Allow ${a.tool} for the rest of this conversation` : null,
              onclick: () => this.decide(card, sid, a, decision, scope),
            },
            label,
          ),
        ),
      ),
      outcome,
    );
    this.add(card);
  }

  // decide answers approval a and streams the resumed turn.
  async decide(card, sid, a, decision, scope) {
    if (card.dataset.state) return;
    card.dataset.state = 'deciding';
    const outcome = card.querySelector('.outcome');
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    outcome.textContent = decision === 'allow' ? 'Allowing…' : 'Denying…';
    card.focus();
    const res = await this.run((signal) => api.decide(sid, a.id, decision, scope, signal));
    if (!res.ok && !res.shown) {
      if (res.err.code === 'approval_not_found') {
        this.finishCard(card, 'This call was already answered.');
      } else {
        delete card.dataset.state;
        for (const b of card.querySelectorAll('button')) b.disabled = false;
        outcome.textContent = `Could not send the decision: ${friendly(res.err)}`;
        this.onError(res.err);
      }
      return;
    }
    this.finishCard(
      card,
      decision === 'deny'
        ? 'Denied.'
        : scope === 'session'
          ? `Allowed; ${a.tool} runs without asking for the rest of this conversation.`
          : 'Allowed once.',
    );
  }

  finishCard(card, text) {
    card.dataset.state = 'done';
    card.querySelector('.actions')?.remove();
    card.querySelector('.outcome').textContent = text;
  }

  // settle closes the card of a call that has run (or was refused).
  settle(callId) {
    for (const card of this.ol.querySelectorAll('li.approval')) {
      if (card.dataset.callId === callId && card.dataset.state !== 'done' && card.dataset.state !== 'deciding') {
        this.finishCard(card, 'Answered.');
      }
    }
  }
}

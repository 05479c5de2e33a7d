// The conversation view: one session's messages, newest at the bottom,
// older pages prepended when the top scrolls into view, and turns
// streamed in as they run.

import * as api from './api.js';
import { ApiError, friendly } from './api.js';
import { h, when, compactJSON } from './dom.js';

const PAGE = 30;

const said = (who) => h('span', { class: 'visually-hidden' }, `${who}: `);

function userItem(text, time) {
  return h('li', { class: 'msg user' }, said('You'), h('div', { class: 'body' }, text), time ? when(time) : null);
}

function assistantItem(content, time) {
  return h('li', { class: 'msg assistant' }, said('Assistant'), h('div', { class: 'body' }, content), time ? when(time) : null);
}

function toolCallItem(call) {
  return h(
    'li',
    { class: 'tool call', dataset: { callId: call.id || '' } },
    h('span', { class: 'tag' }, 'Tool call'),
    h('code', { class: 'name' }, call.name),
    h('code', { class: 'args' }, compactJSON(call.arguments)),
  );
}

function toolResultItem(r) {
  return h(
    'li',
    { class: r.isError ? 'tool result failed' : 'tool result', dataset: { callId: r.callId || '' } },
    h('span', { class: 'tag' }, r.isError ? 'Tool error' : 'Tool result'),
    h('code', { class: 'name' }, r.tool),
    h('span', { class: 'out' }, r.result),
  );
}

function noticeItem(text, error) {
  return h('li', { class: error ? 'notice failed' : 'notice', role: error ? 'alert' : null }, text);
}

// renderMessage returns the items of a message of the API.
function renderMessage(m) {
  switch (m.role) {
    case 'user':
      return [userItem(m.text, m.time)];
    case 'assistant':
      return [m.text ? assistantItem(m.text, m.time) : null, ...(m.toolCalls || []).map(toolCallItem)].filter(Boolean);
    case 'tool':
      return [toolResultItem({ callId: m.toolCallId, tool: m.tool, result: m.text, isError: m.isError })];
  }
  return [];
}

// Turn renders the events of one streamed turn (or resumed turn) into the
// view it was started in; if the view has moved on to another
// conversation, the events are dropped (the transcript has them).
class Turn {
  constructor(conv) {
    this.conv = conv;
    this.gen = conv.gen;
    this.text = null; // the Text node the current answer grows in
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
        this.add(toolCallItem(d.toolCall));
        break;
      case 'approval_request':
        this.close();
        if (this.visible) this.conv.addApproval(d.approval);
        break;
      case 'tool_result':
        this.close();
        this.add(toolResultItem(d.toolResult));
        if (this.visible) this.conv.settle(d.toolResult.callId);
        break;
      case 'turn_end':
        this.end(d.result || {});
        break;
      case 'error':
        this.fail(new ApiError(0, d.error?.code || 'error', d.error?.message || 'The answer failed.'));
        break;
      // turn_start, step_end and delegate events change nothing shown.
    }
  }

  append(delta) {
    if (!this.visible || !delta) return;
    const stick = this.conv.atBottom();
    if (!this.bubble) {
      this.text = document.createTextNode('');
      this.bubble = assistantItem(this.text);
      this.bubble.setAttribute('aria-busy', 'true');
      this.bubble.dataset.deltas = '0';
      this.conv.add(this.bubble);
    }
    // appendData grows the one Text node: each delta shows as it comes.
    this.text.appendData(delta);
    this.bubble.dataset.deltas = String(Number(this.bubble.dataset.deltas) + 1);
    if (stick) this.conv.scrollToEnd();
  }

  close() {
    if (this.bubble) {
      this.bubble.setAttribute('aria-busy', 'false');
      this.bubble.append(when(new Date().toISOString()));
    }
    this.bubble = null;
    this.text = null;
  }

  end(result) {
    this.close();
    this.ended = true;
    if (result.notice) this.add(noticeItem(result.notice, false));
    if (result.status === 'error') {
      this.add(noticeItem(`Error: ${result.error?.message || 'the turn ended with an error.'}`, true));
    } else if (result.status === 'cancelled') {
      this.add(noticeItem('The answer was cancelled.', true));
    }
  }

  fail(err) {
    this.close();
    this.ended = true;
    this.add(noticeItem(`Error: ${friendly(err)}`, true));
  }

  stopped() {
    this.close();
    this.ended = true;
    this.add(noticeItem('Stopped.', false));
  }

  // finish is called when the stream ends.
  finish() {
    if (!this.ended) this.fail(new ApiError(0, 'incomplete', 'The connection closed before the answer was complete.'));
  }
}

export class Conversation {
  constructor({ scroller, log, ol, older, empty, onError, onRunning }) {
    this.scroller = scroller;
    this.log = log;
    this.ol = ol;
    this.older = older;
    this.empty = empty;
    this.onError = onError;
    this.onRunning = onRunning;
    this.id = null;
    this.draft = Symbol('draft');
    this.gen = 0; // changes whenever the view shows something else
    this.cursor = '';
    this.loading = false;
    this.abort = new AbortController();
    this.running = new Map(); // session id (or draft symbol) → AbortController
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
    this.gen++;
    this.abort.abort();
    this.abort = new AbortController();
    this.io.disconnect();
    this.id = id;
    this.draft = Symbol('draft');
    this.cursor = '';
    this.loading = false;
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

  // open shows session id: its newest page of messages and its pending
  // approvals. It throws what the API throws, or an AbortError when
  // another open superseded it.
  async open(id) {
    this.reset(id);
    const gen = this.gen;
    const signal = this.abort.signal;
    this.quiet(true);
    try {
      const [page, pending] = await Promise.all([api.messages(id, PAGE, '', signal), api.approvals(id, signal)]);
      if (gen !== this.gen) throw new DOMException('superseded', 'AbortError');
      const items = page.messages.toReversed().flatMap(renderMessage);
      this.ol.append(...items);
      for (const a of pending) this.addApproval(a);
      this.cursor = page.nextCursor || '';
      if (!this.ol.children.length) {
        this.empty.textContent = 'This conversation has no messages yet.';
        this.empty.hidden = false;
      }
      this.older.hidden = !this.cursor;
      this.scrollToEnd();
      if (this.cursor) this.io.observe(this.older);
    } finally {
      if (gen === this.gen) this.quiet(false);
    }
  }

  // loadOlder prepends the page of messages before those shown, keeping
  // what is on screen where it is.
  async loadOlder() {
    if (this.loading || !this.cursor || !this.id) return;
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
      return;
    }
    if (gen !== this.gen) return;
    const fromBottom = this.scroller.scrollHeight - this.scroller.scrollTop;
    this.quiet(true);
    this.ol.prepend(...page.messages.toReversed().flatMap(renderMessage));
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
    const li = userItem(text, new Date().toISOString());
    this.add(li);
    this.scrollToEnd();
    return li;
  }

  showError(message) {
    this.add(noticeItem(message, true));
  }

  isRunning() {
    return this.running.has(this.key);
  }

  stop() {
    // The server runs a turn on when its client goes away: stop it
    // there, then stop reading.
    if (this.id !== null && this.running.has(this.key)) api.stopTurn(this.id).catch(() => {});
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
    const setRunning = (k) => {
      this.running.set(k, ctl);
      this.onRunning();
    };
    setRunning(key);
    try {
      for await (const ev of start(ctl.signal)) {
        if (ev.type === 'error' && !started) {
          // Refused before the turn began (/chat reports even that in
          // its stream, after the session event): nothing was recorded.
          throw new ApiError(0, ev.data.error?.code || 'error', ev.data.error?.message || 'The message was refused.');
        }
        if (ev.type === 'session') {
          id = ev.data.sessionId;
          // Adopt first: the view's key must be the id before the
          // running turn is filed under it.
          const adopted = fromDraft && this.adopt(draft, id);
          this.running.delete(key);
          key = id;
          setRunning(key);
          if (fromDraft) onSession?.(id, adopted);
          continue;
        }
        started = true;
        turn.apply(ev);
      }
      turn.finish();
      return { ok: true, id };
    } catch (err) {
      if (err.name === 'AbortError') {
        turn.stopped();
        return { ok: true, id };
      }
      // Refused: nothing was recorded, the caller says so. A connection
      // lost after the request went out may have been recorded: show it
      // in the turn.
      if (!started && err.code !== 'connection_lost') return { ok: false, id, err, shown: false };
      turn.fail(err);
      return { ok: false, id, err, shown: true };
    } finally {
      this.running.delete(key);
      this.onRunning();
      if (!turn.visible && id && id === this.id) {
        // The view was reopened while the turn ran: show what it wrote.
        this.open(id).catch(() => {});
      }
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
      { class: 'approval', tabindex: '-1', 'aria-labelledby': heading, dataset: { approvalId: a.id, callId: a.callId } },
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

// Live sessions: the open conversation follows its session (GET
// /v1/sessions/{id}/events?follow=1), so the turns another tab or device
// starts or resumes show here as they stream; the tab's own runs, which
// its own stream shows, are left out (by run, runOf). A turn already
// running when the view opened streams on from where the transcript
// left it: the stream starts at the running run's beginning, and what
// the page showed of that run gives way to it (trim), so each part shows
// once. While such a turn runs, Stop stops it on the server. A dropped
// stream reconnects after the last event it had (?after=, as
// Last-Event-ID), waiting longer each time it fails (and at least as long
// as a refusal's retryAfter asks, up to a minute), so nothing is missed
// and nothing shows twice.

import * as api from './api.js';
import { ApiError } from './api.js';
import { Turn, userItem, runOf } from './conversation.js';

const RETRY = 1000; // the first wait before reconnecting, in ms
const MAX_RETRY = 15000;
// MAX_PAUSE caps the wait a refusal's retryAfter asks for, in ms. The
// server asks for seconds (too_many_watchers: 5), but the number comes
// from whatever answered, a proxy included: a retryAfter of a day would
// leave the open conversation silently not live for a day. Asking again
// after a minute costs the server one refusal a minute.
const MAX_PAUSE = 60000;

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

export class Follower {
  // onActivity(id) is called when a turn of another tab begins or ends
  // (the list shows the session's new count); onLive(on) when the stream
  // is open and when it dropped.
  constructor(conv, { onActivity, onLive }) {
    this.conv = conv;
    this.onActivity = onActivity;
    this.onLive = onLive;
    this.abort = null;
    this.held = [];
    this.turn = null; // the other tab's turn being shown
    this.trimming = false; // this.turn was partly shown from the transcript
    this.joined = ''; // a turn whose view was read again while it ran
    this.seen = new Set(); // the turns whose start this follower had
  }

  // start follows session id (the open conversation) from now on.
  start(id) {
    this.stop();
    this.abort = new AbortController();
    this.id = id;
    this.gen = this.conv.gen;
    this.loop(id, this.abort.signal);
  }

  stop() {
    if (this.abort) this.onLive?.(false);
    this.abort?.abort();
    this.abort = null;
    this.held = [];
    this.turn = null;
    this.trimming = false;
    this.joined = '';
    this.seen = new Set();
    this.conv.setFollowed('');
  }

  async loop(id, signal) {
    let after = '';
    let wait = RETRY;
    let pause = 0; // what the server asked to wait (retryAfter), in ms
    let first = true;
    while (!signal.aborted) {
      try {
        const stream = await api.follow(id, after, signal);
        this.onLive?.(true);
        if (first) this.recheck(signal);
        first = false;
        for await (const ev of stream) {
          wait = RETRY;
          if (ev.id) after = ev.id;
          this.take(ev);
        }
      } catch (err) {
        if (signal.aborted || err.name === 'AbortError') return;
        // A session that is gone, or a key that is not accepted: nothing
        // to follow (the view says why on its own).
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) return;
        // A refusal that says how long to wait (too_many_watchers: 5 s)
        // is waited out at least that long (sooner, the server refuses
        // again), up to MAX_PAUSE.
        if (err instanceof ApiError && err.retryAfter) pause = Math.min(err.retryAfter * 1000, MAX_PAUSE);
      } finally {
        if (!signal.aborted) this.onLive?.(false);
      }
      await sleep(Math.max(wait, pause), signal);
      pause = 0;
      wait = Math.min(wait * 2, MAX_RETRY);
    }
  }

  // recheck covers a turn that ran when the view read the transcript and
  // ended before the follow began (a stream without an id does not
  // replay a run already over): once the stream is open, if the view's
  // newest turn had no end and has one now, unseen, the view is shown
  // again from the transcript.
  async recheck(signal) {
    const conv = this.conv;
    const tid = [...conv.ol.querySelectorAll('li.msg.user[data-turn-id]')].at(-1)?.dataset.turnId;
    if (!tid || conv.own.has(tid) || conv.turns.get(tid)?.status || conv.ol.querySelector(`li.approval:not([data-state])`)) return;
    const gen = conv.gen;
    let page;
    try {
      page = await api.messages(this.id, 5, '', signal);
    } catch {
      return; // the view stays as it is
    }
    if (gen !== conv.gen || this.seen.has(tid) || signal.aborted) return;
    if (page.turns?.find((t) => t.turnId === tid)?.status) conv.reload();
  }

  // take shows ev unless it is of this tab's own run; while a run of
  // this tab has no id yet, events are held until it has (flush).
  take(ev) {
    if (this.conv.id !== this.id) return;
    if (this.conv.gen !== this.gen) {
      // The view was shown again from the transcript (a reload): a turn
      // half shown here is shown whole from it once it ends.
      this.gen = this.conv.gen;
      if (this.turn) this.joined = this.turn.id;
      this.turn = null;
      this.trimming = false;
    }
    if (this.conv.unknownOwn > 0 && this.conv.ownRunning()) {
      this.held.push(ev);
      return;
    }
    this.show(ev);
  }

  // flush shows the held events that are not this tab's own.
  flush() {
    if (this.conv.unknownOwn > 0 && this.conv.ownRunning()) return;
    const held = this.held;
    this.held = [];
    for (const ev of held) this.take(ev);
  }

  // mine reports whether ev is of a run this tab streams itself. An
  // event read back from the transcript (no run in its id) is told by
  // its turn.
  mine(ev, tid) {
    const run = runOf(ev.id);
    return run ? this.conv.isOwnRun(this.id, run) : this.conv.own.has(tid);
  }

  show(ev) {
    const tid = ev.data?.turnId || '';
    if (!tid || this.mine(ev, tid)) return;
    const conv = this.conv;
    if (ev.type === 'turn_start') {
      this.seen.add(tid);
      this.joined = '';
      this.turn = new Turn(conv);
      this.turn.id = tid;
      conv.setFollowed(tid);
      this.onActivity?.(this.id);
      if (conv.ol.querySelector(`li.msg.user[data-turn-id="${CSS.escape(tid)}"]`)) {
        // A turn the view shows part of: it was running when the view
        // opened, or it resumes after an approval. This run's events
        // come from its beginning: what the transcript showed of it
        // goes at its first event (trim).
        this.trimming = true;
        return;
      }
      this.trimming = false;
      const li = userItem({ text: '', turnId: tid, time: new Date().toISOString() });
      li.setAttribute('aria-busy', 'true');
      conv.add(li);
      this.prompt(tid, li);
      return;
    }
    if (this.joined === tid) {
      if (ev.type === 'turn_end') {
        this.joined = '';
        conv.setFollowed('');
        conv.reload().then(() => this.onActivity?.(this.id));
      }
      return;
    }
    if (!this.turn || this.turn.id !== tid) return;
    if (this.trimming) {
      this.trimming = false;
      this.trim(tid, ev);
    }
    this.turn.apply(ev);
    if (ev.type === 'turn_end') {
      const r = ev.data.result || {};
      this.turn = null;
      conv.setFollowed('');
      // A stopped turn is shown as the transcript recorded it (the
      // stop may have come after more was stored than streamed here).
      if (r.supersedes?.length || r.status === 'cancelled') conv.reload();
      else conv.refreshTurns();
      this.onActivity?.(this.id);
    }
  }

  // trim takes off the view what the transcript showed of the run whose
  // first event (after its start) is ev, since the run's events show it
  // again: a run that begins with a model request (step_start) is the
  // turn's first, and everything of the turn after its question is its;
  // a run that resumes after an approval begins with the decided call's
  // result (or a delegated agent's activity for it), and what the view
  // has from that result on is its. Approval cards stay (they are not
  // added twice).
  trim(tid, ev) {
    const items = [...this.conv.ol.querySelectorAll(`li[data-turn-id="${CSS.escape(tid)}"]`)].filter((li) => !li.classList.contains('approval'));
    const call = ev.data.toolResult?.callId || ev.data.delegate?.callId;
    let from = -1;
    if (ev.type === 'step_start') from = items.findIndex((li) => !li.classList.contains('user'));
    else if (call) from = items.findIndex((li) => li.matches('li.tool.result') && li.dataset.callId === call);
    if (from >= 0) for (const li of items.slice(from)) li.remove();
  }

  // prompt fills the other tab's question in, from the transcript (the
  // events do not carry it).
  async prompt(tid, li) {
    try {
      const page = await api.messages(this.id, 20, '', this.abort?.signal);
      const m = page.messages.find((m) => m.turnId === tid && m.role === 'user');
      if (m) {
        li.dataset.id = m.id || '';
        li.querySelector('.body').textContent = m.text;
      }
    } catch {
      // the turn still shows; its question comes with the next reload
    } finally {
      li.setAttribute('aria-busy', 'false');
    }
  }
}

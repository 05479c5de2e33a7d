// Live sessions: the open conversation follows its session (GET
// /v1/sessions/{id}/events?follow=1), so the turns another tab or device
// starts show here as they stream; the tab's own turns, which its own
// stream shows, are left out. A dropped stream reconnects after the last
// event it had (?after=, as Last-Event-ID), waiting longer each time it
// fails, so nothing is missed and nothing shows twice.

import * as api from './api.js';
import { ApiError } from './api.js';
import { Turn, userItem } from './conversation.js';

const RETRY = 1000; // the first wait before reconnecting, in ms
const MAX_RETRY = 15000;

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
    this.joined = ''; // a turn that was running when the view opened
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
    this.joined = '';
  }

  async loop(id, signal) {
    let after = '';
    let wait = RETRY;
    while (!signal.aborted) {
      try {
        const stream = await api.follow(id, after, signal);
        this.onLive?.(true);
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
      } finally {
        if (!signal.aborted) this.onLive?.(false);
      }
      await sleep(wait, signal);
      wait = Math.min(wait * 2, MAX_RETRY);
    }
  }

  // take shows ev unless it is of this tab's own turn; while a turn of
  // this tab has no id yet, events are held until it has (flush).
  take(ev) {
    if (this.conv.id !== this.id) return;
    if (this.conv.gen !== this.gen) {
      // The view was shown again from the transcript (a reload): a turn
      // half shown here is shown whole from it once it ends.
      this.gen = this.conv.gen;
      if (this.turn) this.joined = this.turn.id;
      this.turn = null;
    }
    if (this.conv.unknownOwn > 0 && this.conv.isRunning()) {
      this.held.push(ev);
      return;
    }
    this.show(ev);
  }

  // flush shows the held events that are not this tab's own.
  flush() {
    if (this.conv.unknownOwn > 0 && this.conv.isRunning()) return;
    const held = this.held;
    this.held = [];
    for (const ev of held) this.take(ev);
  }

  show(ev) {
    const tid = ev.data?.turnId || '';
    if (!tid || this.conv.own.has(tid)) return;
    const conv = this.conv;
    if (ev.type === 'turn_start') {
      if (conv.ol.querySelector(`li.msg.user[data-turn-id="${CSS.escape(tid)}"]`)) {
        // A turn the view already shows part of (it was running when
        // the view opened, or it resumes after an approval): the view
        // shows it again from the transcript once it ends.
        this.joined = tid;
        return;
      }
      this.turn = new Turn(conv);
      this.turn.id = tid;
      const li = userItem({ text: '', turnId: tid, time: new Date().toISOString() });
      li.setAttribute('aria-busy', 'true');
      conv.add(li);
      this.prompt(tid, li);
      this.onActivity?.(this.id);
      return;
    }
    if (this.joined === tid) {
      if (ev.type === 'turn_end') {
        this.joined = '';
        conv.reload().then(() => this.onActivity?.(this.id));
      }
      return;
    }
    if (!this.turn || this.turn.id !== tid) return;
    this.turn.apply(ev);
    if (ev.type === 'turn_end') {
      const superseded = ev.data.result?.supersedes?.length;
      this.turn = null;
      if (superseded) conv.reload();
      else conv.refreshTurns();
      this.onActivity?.(this.id);
    }
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

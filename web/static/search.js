// Search over the caller's conversations (GET v1/search): while the box
// holds words, the sidebar shows the messages that contain every one of
// them, newest first, each with its conversation's title and a snippet
// whose matches are highlighted; a hit opens its conversation scrolled to
// that message (#/c/<id>/m/<entry id>). Escape or an empty box brings the
// list back.

import * as api from './api.js';
import { friendly } from './api.js';
import { h, when } from './dom.js';

const LIMIT = 50;
const DELAY = 200; // ms of quiet typing before a search is sent

// terms are the words of a query as the server matches them: lower case,
// split on white space, each found anywhere in a message's text.
const terms = (q) => q.toLowerCase().split(/\s+/u).filter(Boolean);

// highlight returns text as nodes, each match of a term in a <mark>.
export function highlight(text, words) {
  if (!words.length) return [text];
  const esc = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).sort((a, b) => b.length - a.length);
  const re = new RegExp(`(${esc.join('|')})`, 'giu');
  return text.split(re).map((part, i) => (i % 2 ? h('mark', {}, part) : part)).filter((p) => p !== '');
}

export class Search {
  constructor({ form, input, panel, list, status, listView, onError }) {
    this.input = input;
    this.panel = panel;
    this.list = list;
    this.status = status;
    this.listView = listView;
    this.onError = onError;
    this.timer = 0;
    this.abort = null;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.run();
    });
    input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), DELAY);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && input.value) {
        e.preventDefault();
        input.value = '';
        this.run();
      } else if (e.key === 'ArrowDown') {
        const first = this.list.querySelector('a');
        if (first) {
          e.preventDefault();
          first.focus();
        }
      }
    });
  }

  focus() {
    this.input.focus();
    this.input.select();
  }

  // clear empties the box and the hits, and brings the list back.
  clear() {
    this.input.value = '';
    this.run();
  }

  // forget drops the hits of a deleted session.
  forget(id) {
    for (const li of this.list.querySelectorAll(`li[data-session="${CSS.escape(id)}"]`)) li.remove();
  }

  async run() {
    clearTimeout(this.timer);
    this.abort?.abort();
    const q = this.input.value.trim();
    if (!terms(q).length) {
      this.panel.hidden = true;
      this.listView.hidden = false;
      this.list.replaceChildren();
      this.status.textContent = '';
      return;
    }
    this.panel.hidden = false;
    this.listView.hidden = true;
    this.panel.setAttribute('aria-busy', 'true');
    this.status.textContent = 'Searching…';
    const abort = (this.abort = new AbortController());
    let res;
    try {
      res = await api.search(q, LIMIT, abort.signal);
    } catch (err) {
      if (err.name === 'AbortError') return;
      this.panel.setAttribute('aria-busy', 'false');
      this.status.textContent = `Could not search: ${friendly(err)}`;
      this.onError(err);
      return;
    }
    if (abort !== this.abort) return;
    const words = terms(q);
    const hits = res.hits || [];
    this.list.replaceChildren(
      ...hits.map((hit) =>
        h(
          'li',
          { dataset: { session: hit.sessionId, entry: hit.entryId } },
          h(
            'a',
            { class: 'session hit', href: `#/c/${encodeURIComponent(hit.sessionId)}/m/${encodeURIComponent(hit.entryId)}` },
            h('span', { class: 'title' }, (hit.title || '').trim() || 'Untitled conversation'),
            h('span', { class: 'snippet' }, ...highlight(hit.snippet, words)),
            h('span', { class: 'meta' }, when(hit.time)),
          ),
        ),
      ),
    );
    const n = hits.length;
    this.status.textContent = n ? `${n}${n === LIMIT ? '+' : ''} message${n === 1 ? '' : 's'} found.` : 'Nothing found.';
    this.panel.setAttribute('aria-busy', 'false');
  }
}

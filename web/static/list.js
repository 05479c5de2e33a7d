// The conversation list: the caller's sessions, newest activity first,
// one page at a time; the next page loads when the end of the list
// scrolls into view.

import * as api from './api.js';
import { friendly } from './api.js';
import { h, when } from './dom.js';

const PAGE = 20;

// titleOf is how a session is named on screen.
export const titleOf = (s) => (s.title || '').trim() || 'Untitled conversation';

// signature is what the list shows of s, to tell when it changed.
const signature = (s) => JSON.stringify([s.title || '', s.messageCount || 0, s.pendingApprovals || 0, s.lastActivity || '']);

export class SessionList {
  constructor({ ul, end, scroller, onError, onDelete }) {
    this.ul = ul;
    this.end = end;
    this.scroller = scroller;
    this.onError = onError;
    this.onDelete = onDelete;
    this.cursor = '';
    this.done = false;
    this.loading = false;
    this.gen = 0;
    this.current = null;
    // rootMargin: fetch the next page a little before the end shows.
    this.io = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) this.more().catch(this.onError);
      },
      { root: scroller, rootMargin: '0px 0px 200px 0px' },
    );
  }

  // reset empties the list and loads its first page; it throws what the
  // API throws (a 401 among others).
  async reset() {
    this.clear();
    await this.more();
  }

  // clear empties the list; a page on its way is dropped.
  clear() {
    this.gen++;
    this.io.disconnect();
    this.cursor = '';
    this.done = false;
    this.loading = false;
    this.ul.replaceChildren();
    this.end.replaceChildren('');
    this.scroller.setAttribute('aria-busy', 'false');
  }

  // more loads the next page, if any.
  async more() {
    if (this.loading || this.done) return;
    const gen = this.gen;
    this.loading = true;
    this.scroller.setAttribute('aria-busy', 'true');
    this.end.replaceChildren('Loading conversations…');
    let page;
    try {
      page = await api.listSessions(PAGE, this.cursor);
    } catch (err) {
      if (gen === this.gen) {
        this.loading = false;
        this.scroller.setAttribute('aria-busy', 'false');
        this.end.replaceChildren(
          `Could not load conversations: ${friendly(err)} `,
          h('button', { type: 'button', class: 'link', onclick: () => this.more().catch(this.onError) }, 'Retry'),
        );
      }
      throw err;
    }
    if (gen !== this.gen) return;
    for (const s of page.sessions) {
      if (!this.item(s.id)) this.ul.append(this.render(s));
    }
    this.cursor = page.nextCursor || '';
    this.done = !this.cursor;
    this.loading = false;
    this.scroller.setAttribute('aria-busy', 'false');
    this.updateEnd();
    if (!this.done) {
      // An observer reports changes only: observing anew gets a fresh
      // report, so a page too short to fill the list loads the next.
      this.io.unobserve(this.end);
      this.io.observe(this.end);
    }
  }

  updateEnd() {
    if (!this.done) this.end.replaceChildren('');
    else this.end.replaceChildren(this.ul.children.length ? '' : 'No conversations yet.');
  }

  item(id) {
    return this.ul.querySelector(`li[data-id="${CSS.escape(id)}"]`);
  }

  render(s) {
    const n = s.messageCount || 0;
    const title = titleOf(s);
    const link = h(
      'a',
      { href: `#/c/${encodeURIComponent(s.id)}`, class: 'session' },
      h('span', { class: 'title', title: s.title || null }, title),
      h(
        'span',
        { class: 'meta' },
        when(s.lastActivity),
        ` · ${n} message${n === 1 ? '' : 's'}`,
        s.pendingApprovals ? h('span', { class: 'badge' }, 'needs approval') : null,
      ),
    );
    if (s.id === this.current) link.setAttribute('aria-current', 'page');
    const del = h(
      'button',
      { type: 'button', class: 'row-delete', 'aria-label': `Delete “${title}”`, title: 'Delete' },
      '×',
    );
    del.addEventListener('click', () => this.onDelete?.(s.id, title));
    return h('li', { dataset: { id: s.id, sig: signature(s), activity: s.lastActivity || '' } }, link, del);
  }

  // title returns the title shown for session id, if listed.
  title(id) {
    return this.item(id)?.querySelector('.title')?.textContent ?? '';
  }

  // update shows s in place (its activity did not change).
  update(s) {
    const li = this.item(s.id);
    if (li) li.replaceWith(this.render(s));
  }

  // sync brings the first page up to date with the server's list: new
  // sessions, new counts, titles and pending approvals, from other tabs
  // and devices (the UI polls it, see app.js). Sessions that changed move
  // to the top in the server's order; the others stay where they are.
  async sync() {
    if (this.loading) return;
    const gen = this.gen;
    const page = await api.listSessions(PAGE, '');
    if (gen !== this.gen || this.loading) return;
    for (const s of [...page.sessions].reverse()) {
      const li = this.item(s.id);
      if (!li) this.upsert(s);
      else if (li.dataset.sig !== signature(s)) {
        if (li.dataset.activity === s.lastActivity) this.update(s);
        else this.upsert(s);
      }
    }
    if (!page.nextCursor && this.done) {
      // The whole list fits in a page: what it lacks was deleted.
      const ids = new Set(page.sessions.map((s) => s.id));
      for (const li of [...this.ul.children]) if (!ids.has(li.dataset.id)) this.remove(li.dataset.id);
    }
  }

  // upsert shows s at the top of the list (its activity is the newest).
  upsert(s) {
    this.item(s.id)?.remove();
    this.ul.prepend(this.render(s));
    this.updateEnd();
  }

  remove(id) {
    this.item(id)?.remove();
    this.updateEnd();
  }

  // setCurrent marks the open conversation.
  setCurrent(id) {
    this.current = id;
    for (const li of this.ul.children) {
      const a = li.firstElementChild;
      if (li.dataset.id === id) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  // focusItem moves focus to the link of conversation id, if listed.
  focusItem(id) {
    const li = id && this.item(id);
    if (li) li.firstElementChild.focus();
    return !!li;
  }
}

// The "What the model sees" panel: the history the next model request
// of the open conversation carries, exactly as GET v1/sessions/{id}/history
// gives it (the history rules applied: refused, failed and stopped turns
// left out, only the active branch, the window and the budget), each
// message as the plain text the model reads. Compact summarizes the
// older turns for the model (POST v1/sessions/{id}/compact) and says what
// it covered; the two messages standing in for them are marked.

import * as api from './api.js';
import { friendly } from './api.js';
import { h, compactJSON } from './dom.js';

const roles = { user: 'User', assistant: 'Assistant', tool: 'Tool result', system: 'System' };

export class HistoryPanel {
  constructor({ panel, list, status, compactButton, compactStatus, onError, onCompacted }) {
    this.panel = panel;
    this.list = list;
    this.status = status;
    this.compactButton = compactButton;
    this.compactStatus = compactStatus;
    this.onError = onError;
    this.onCompacted = onCompacted;
    this.id = null;
    this.gen = 0;
    this.compacting = false;
    compactButton.addEventListener('click', () => this.compact());
  }

  get open() {
    return !this.panel.hidden;
  }

  // show loads the history of session id (nothing for a new one).
  async show(id) {
    if (id !== this.id) this.compactStatus.textContent = '';
    this.id = id;
    const gen = ++this.gen;
    this.compactButton.disabled = !id || this.compacting;
    if (!id) {
      // Emptied even while closed: it opens on what it holds.
      this.list.replaceChildren();
      this.status.textContent = 'A new conversation: the first request carries only your message.';
      return;
    }
    if (!this.open) return;
    this.panel.setAttribute('aria-busy', 'true');
    let hist;
    try {
      hist = await api.history(id);
    } catch (err) {
      if (gen !== this.gen) return;
      this.panel.setAttribute('aria-busy', 'false');
      if (err.code === 'session_not_found') {
        this.list.replaceChildren();
        this.status.textContent = 'This conversation does not exist.';
        return;
      }
      this.status.textContent = `Could not load the history: ${friendly(err)}`;
      this.onError(err);
      return;
    }
    if (gen !== this.gen) return;
    const msgs = hist.messages;
    const at = hist.summary ? hist.summary.index : -1;
    this.list.replaceChildren(...msgs.map((m, i) => item(m, at >= 0 && (i === at || i === at + 1))));
    const n = msgs.length;
    let text = `The next request carries ${n} message${n === 1 ? '' : 's'}, after the agent's instructions.`;
    if (at >= 0) text += ' Two of them, marked Summary, stand in for the earlier turns.';
    this.status.textContent = text;
    this.panel.setAttribute('aria-busy', 'false');
  }

  // refresh loads it again, when the panel is open.
  refresh() {
    if (this.open) this.show(this.id);
  }

  // compact summarizes the open conversation's older turns, says what it
  // covered, and shows the history anew.
  async compact() {
    const id = this.id;
    if (!id || this.compacting) return;
    this.compacting = true;
    this.compactButton.disabled = true;
    this.compactButton.setAttribute('aria-busy', 'true');
    this.compactStatus.classList.remove('failed');
    this.compactStatus.textContent = 'Summarizing the earlier turns…';
    try {
      const r = await api.compact(id);
      if (id !== this.id) return;
      this.compactStatus.textContent = covered(r);
      this.refresh();
      this.onCompacted?.(id);
    } catch (err) {
      if (id !== this.id) return;
      this.compactStatus.classList.add('failed');
      this.compactStatus.textContent = `Not compacted. ${friendly(err)}`;
      if (!['nothing_to_compact', 'turn_running', 'summarizer_failed'].includes(err.code)) this.onError(err);
    } finally {
      this.compacting = false;
      this.compactButton.removeAttribute('aria-busy');
      this.compactButton.disabled = !this.id;
    }
  }
}

const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

// covered says what a CompactResult summarized: "Summarized 6 turns: 40 →
// 12 messages", and how many were new when it extends an earlier summary.
function covered(r) {
  let text = `Summarized ${plural(r.turns, 'turn')}: ${r.before.messages} → ${plural(r.after.messages, 'message')}`;
  if (r.before.tokens && r.after.tokens) text += `, about ${r.before.tokens} → ${r.after.tokens} tokens`;
  text += '.';
  if (r.newTurns !== r.turns) text += ` ${plural(r.newTurns, 'turn')} added to the earlier summary.`;
  return text;
}

function item(m, summary) {
  const parts = [h('span', { class: 'role' }, roles[m.role] || m.role)];
  if (summary) parts.push(h('span', { class: 'tag' }, 'Summary'));
  if (m.toolCallId) parts.push(h('code', { class: 'call-id' }, m.toolCallId));
  const li = h('li', { class: `hmsg ${m.role}${summary ? ' summary' : ''}` }, h('div', { class: 'head' }, ...parts));
  if (m.content) li.append(h('pre', { class: 'content' }, m.content));
  for (const c of m.toolCalls || []) {
    li.append(h('pre', { class: 'content call' }, `${c.name}(${compactJSON(c.arguments)})`));
  }
  return li;
}

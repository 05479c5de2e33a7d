// The "What the model sees" panel: the history the next model request
// of the open conversation carries, exactly as GET v1/sessions/{id}/history
// gives it (the history rules applied: refused, failed and stopped turns
// left out, only the active branch, the window and the budget), each
// message as the plain text the model reads.

import * as api from './api.js';
import { friendly } from './api.js';
import { h, compactJSON } from './dom.js';

const roles = { user: 'User', assistant: 'Assistant', tool: 'Tool result', system: 'System' };

export class HistoryPanel {
  constructor({ panel, list, status, onError }) {
    this.panel = panel;
    this.list = list;
    this.status = status;
    this.onError = onError;
    this.id = null;
    this.gen = 0;
  }

  get open() {
    return !this.panel.hidden;
  }

  // show loads the history of session id (nothing for a new one).
  async show(id) {
    this.id = id;
    const gen = ++this.gen;
    if (!this.open) return;
    if (!id) {
      this.list.replaceChildren();
      this.status.textContent = 'A new conversation: the first request carries only your message.';
      return;
    }
    this.panel.setAttribute('aria-busy', 'true');
    let msgs;
    try {
      msgs = await api.history(id);
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
    this.list.replaceChildren(...msgs.map(item));
    const n = msgs.length;
    this.status.textContent = `The next request carries ${n} message${n === 1 ? '' : 's'}, after the agent's instructions.`;
    this.panel.setAttribute('aria-busy', 'false');
  }

  // refresh loads it again, when the panel is open.
  refresh() {
    if (this.open) this.show(this.id);
  }
}

function item(m) {
  const parts = [h('span', { class: 'role' }, roles[m.role] || m.role)];
  if (m.toolCallId) parts.push(h('code', { class: 'call-id' }, m.toolCallId));
  const li = h('li', { class: `hmsg ${m.role}` }, h('div', { class: 'head' }, ...parts));
  if (m.content) li.append(h('pre', { class: 'content' }, m.content));
  for (const c of m.toolCalls || []) {
    li.append(h('pre', { class: 'content call' }, `${c.name}(${compactJSON(c.arguments)})`));
  }
  return li;
}

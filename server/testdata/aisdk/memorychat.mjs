// Chat is the AI SDK's AbstractChat (what useChat runs) over a state kept
// in memory, for the scripts that drive a spool server with the real
// client from Node.
import { AbstractChat } from 'ai';

class State {
  constructor(messages = []) { this.messages = messages; this.status = 'ready'; this.error = undefined; }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)]; }
  snapshot(v) { return structuredClone(v); }
}

export class Chat extends AbstractChat {
  // opts.messages, if set, are the messages it starts with, as with
  // useChat({messages}).
  constructor({ messages, ...opts }) { super({ ...opts, state: new State(messages) }); }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// settle waits until chat runs no request and no answered approval waits
// to be sent (sendAutomaticallyWhen sends it after a tick).
export async function settle(chat) {
  for (let i = 0; i < 500; i++) {
    await sleep(10);
    const last = chat.lastMessage;
    const waiting = last && last.parts.some((p) => p.state === 'approval-responded');
    if ((chat.status === 'ready' || chat.status === 'error') && !waiting) return;
  }
  throw new Error('chat did not settle; status ' + chat.status);
}

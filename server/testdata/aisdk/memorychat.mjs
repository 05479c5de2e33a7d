// Chat is the AI SDK's AbstractChat (what useChat runs) over a state kept
// in memory, for the scripts that drive a spool server with the real
// client from Node.
import { AbstractChat } from 'ai';

class State {
  constructor() { this.messages = []; this.status = 'ready'; this.error = undefined; }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)]; }
  snapshot(v) { return structuredClone(v); }
}

export class Chat extends AbstractChat {
  constructor(opts) { super({ ...opts, state: new State() }); }
}

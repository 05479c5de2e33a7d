// Drives POST /api/chat with the real AI SDK client and prints, per
// request, the finishReason that the chat's onFinish was given: an answer
// the provider cut at its output limit (the server's model cuts its first
// answer), a whole answer, and a turn paused on an approval.
//
// usage: node finish.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport } from 'ai';
import { Chat } from './memorychat.mjs';

const errors = [];
const reasons = [];
const chat = new Chat({
  id: 'aisdk-finish',
  transport: new DefaultChatTransport({ api: process.argv[2] }),
  onError: (e) => errors.push(String(e && e.message || e)),
  onFinish: ({ finishReason }) => reasons.push(finishReason ?? null),
});
await chat.sendMessage({ text: 'a story' });
await chat.sendMessage({ text: 'hello' });
await chat.sendMessage({ text: '/call save_note {"text":"milk"}' });
process.stdout.write(JSON.stringify({ errors, reasons }));

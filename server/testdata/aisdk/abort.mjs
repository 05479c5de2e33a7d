// Drives POST /api/chat with the real AI SDK client while the turn is
// stopped from elsewhere (POST /v1/sessions/{id}/stop), and prints what
// the chat was given: its errors, what onFinish had, and its status.
//
// usage: node abort.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport } from 'ai';
import { Chat } from './memorychat.mjs';

const errors = [];
const finishes = [];
const chat = new Chat({
  id: 'aisdk-abort',
  transport: new DefaultChatTransport({ api: process.argv[2] }),
  onError: (e) => errors.push(String(e && e.message || e)),
  onFinish: ({ message, isAbort, isError, finishReason }) => finishes.push({
    isAbort, isError, finishReason: finishReason ?? null,
    status: message.metadata && message.metadata.status,
    text: message.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''),
  }),
});
await chat.sendMessage({ text: 'a long answer' });
process.stdout.write(JSON.stringify({ errors, finishes, status: chat.status }));

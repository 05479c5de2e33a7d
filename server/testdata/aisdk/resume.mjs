// Drives the AI SDK resume protocol of a spool server with the real
// client: a chat sends a slow question and drops its connection part-way
// (stop() aborts the request; the server runs the turn on), then a new
// chat with the messages the first had, as a page reload would make it,
// calls resumeStream() (what useChat({resume: true}) does on mount): GET
// /api/chat/{id}/stream. A resume with nothing running comes first (204).
//
// usage: node resume.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport } from 'ai';
import { Chat } from './memorychat.mjs';

const api = process.argv[2];
const errors = [];
const onError = (e) => errors.push(String(e && e.message || e));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (m) => (m ? m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') : '');

const idle = new Chat({ id: 'idle-chat', transport: new DefaultChatTransport({ api }), onError });
await idle.resumeStream();

const first = new Chat({ id: 'resume-chat', transport: new DefaultChatTransport({ api }), onError });
const sent = first.sendMessage({ text: 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty' });
const answered = () => { const m = first.lastMessage; return m && m.role === 'assistant' ? textOf(m) : ''; };
for (let i = 0; i < 1000 && answered().split(' ').length < 4; i++) await sleep(5);
await first.stop();
await sent.catch(() => {});
const dropped = textOf(first.lastMessage);

const second = new Chat({ id: 'resume-chat', transport: new DefaultChatTransport({ api }), onError });
second.messages = structuredClone(first.messages);
await second.resumeStream();

process.stdout.write(JSON.stringify({ idle: idle.status, dropped, errors, messages: second.messages }));

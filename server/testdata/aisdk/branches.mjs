// Drives the branching flows of POST /api/chat with the real AI SDK client
// (AbstractChat and DefaultChatTransport of the "ai" package, as useChat
// does): regenerate() of the newest answer, an edit with
// sendMessage({messageId}), an edit the way apps cut the list by hand
// (setMessages, then sendMessage), and regenerate({messageId}) of an
// earlier answer. It prints, after each step, the chat's messages as
// "role: text" lines with their ids, and any error the client recorded.
//
// usage: node branches.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport } from 'ai';
import { Chat } from './memorychat.mjs';

const errors = [];
const chat = new Chat({
  id: 'aisdk-branches',
  transport: new DefaultChatTransport({ api: process.argv[2] }),
  onError: (e) => errors.push(String(e && e.message || e)),
});

const steps = [];
function record(name) {
  steps.push({
    name,
    status: chat.status,
    messages: chat.messages.map((m) => ({
      id: m.id,
      line: m.role + ': ' + m.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''),
    })),
  });
}

await chat.sendMessage({ text: 'one' });
await chat.sendMessage({ text: 'two' });
record('two turns');
await chat.regenerate();
record('regenerate()');
await chat.sendMessage({ text: 'uno', messageId: chat.messages[0].id });
record('sendMessage({messageId}) of the first question');
await chat.sendMessage({ text: 'dos' });
await chat.sendMessage({ text: 'tres' });
chat.messages = chat.messages.slice(0, 2);
await chat.sendMessage({ text: 'DOS' });
record('setMessages(first two), then sendMessage');
await chat.sendMessage({ text: 'tres' });
await chat.regenerate({ messageId: chat.messages[3].id });
record('regenerate({messageId}) of the second answer');

process.stdout.write(JSON.stringify({ errors, steps }));

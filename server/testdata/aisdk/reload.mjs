// Drives POST /api/chat with the real AI SDK client (AbstractChat and
// DefaultChatTransport, as useChat does), then loads the conversation back
// with GET /api/chat/{id}, validates it with the package's own
// safeValidateUIMessages, and goes on with it in a second chat started
// from the loaded messages (useChat({id, messages})): the paused approval
// answered, a regenerate and a new question. It prints what each chat
// shows and what each load returned, for the Go test to compare.
//
// usage: node reload.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, safeValidateUIMessages } from 'ai';
import { isDeepStrictEqual } from 'node:util';
import { Chat, settle } from './memorychat.mjs';

const api = process.argv[2];
const id = 'aisdk-reload';
const errors = [];

function newChat(messages) {
  return new Chat({
    id,
    messages,
    transport: new DefaultChatTransport({ api }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => errors.push(String(e && e.message || e)),
  });
}

async function answer(chat, approved, reason) {
  const part = chat.lastMessage.parts.find((p) => p.state === 'approval-requested');
  if (!part) throw new Error('no approval requested: ' + JSON.stringify(chat.lastMessage));
  await chat.addToolApprovalResponse({ id: part.approval.id, approved, reason });
  await settle(chat);
}

// load fetches the stored conversation and validates it. The schema drops
// what it does not know, so the validated messages equal the loaded ones
// only when every field is one the AI SDK defines.
async function load() {
  const res = await fetch(api + '/' + id);
  const body = await res.json();
  const v = await safeValidateUIMessages({ messages: body.messages });
  return {
    status: res.status,
    id: body.id,
    messages: body.messages,
    valid: v.success,
    validError: v.success ? '' : String(v.error && v.error.message),
    unchanged: v.success && isDeepStrictEqual(JSON.parse(JSON.stringify(v.data)), body.messages),
  };
}

// What a chat shows, as JSON would store it (undefined fields left out).
const shown = (chat) => JSON.parse(JSON.stringify(chat.messages));

const first = newChat([]);
await first.sendMessage({ text: 'hello world' });
await first.sendMessage({ text: '/call get_time {}' });
await first.sendMessage({ text: '/call save_note {"text":"milk"}' });
await answer(first, true);
await first.sendMessage({ text: '/call save_note {"text":"eggs"}' });
await answer(first, false, 'no eggs');
await first.sendMessage({ text: '/call save_note {"text":"bread"}' }); // left waiting
const firstShown = shown(first);
const loaded = await load();

// A new page: the chat starts from what was loaded and goes on.
const second = newChat(loaded.messages);
await answer(second, true);
await second.sendMessage({ text: 'one more' });
await second.regenerate();
const secondShown = shown(second);
const reloaded = await load();

process.stdout.write(JSON.stringify({ errors, first: firstShown, loaded, second: secondShown, reloaded }));

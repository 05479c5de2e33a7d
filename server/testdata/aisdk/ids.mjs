// Drives POST /api/chat with the real AI SDK client and checks that a user
// message keeps one id: the id useChat generated for it is the id GET
// /api/chat/{id} returns, and editing (sendMessage({text, messageId})) or
// regenerating (regenerate({messageId})) a question addressed by that id
// does the same whether the chat is live or was reloaded. Each flow runs
// with the stock DefaultChatTransport (the whole list sent) and with one
// that sends only the newest message, as the AI SDK's persistence guide
// shows (prepareSendMessagesRequest), where only the id places the
// message. It prints, per flow, the ids the client held and the load
// returned, and the conversation the chat shows and the server stored.
//
// usage: node ids.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport } from 'ai';
import { Chat } from './memorychat.mjs';

const api = process.argv[2];
const errors = [];

function transport(kind) {
  if (kind === 'whole') return new DefaultChatTransport({ api });
  return new DefaultChatTransport({
    api,
    prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
      body: { id, messages: messages.slice(-1), trigger, messageId },
    }),
  });
}

function newChat(id, kind, messages) {
  return new Chat({
    id,
    messages,
    transport: transport(kind),
    onError: (e) => errors.push(id + ': ' + String(e && e.message || e)),
  });
}

async function load(id) {
  const res = await fetch(api + '/' + id);
  return (await res.json()).messages;
}

const line = (m) => m.role + ': ' + m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const userIds = (msgs) => msgs.filter((m) => m.role === 'user').map((m) => m.id);

const flows = [];
for (const kind of ['whole', 'newest']) {
  for (const mode of ['live', 'reloaded']) {
    const id = `aisdk-ids-${kind}-${mode}`;
    let chat = newChat(id, kind);
    await chat.sendMessage({ text: 'one' });
    await chat.sendMessage({ text: 'two' });
    await chat.sendMessage({ text: 'three' });
    const sent = userIds(chat.messages);
    const loaded = await load(id);
    if (mode === 'reloaded') chat = newChat(id, kind, loaded);
    // Edit the second question by the id the chat holds for it, ask
    // another, then regenerate the answer to the edited question by its id.
    await chat.sendMessage({ text: 'TWO', messageId: chat.messages[2].id });
    await chat.sendMessage({ text: 'four' });
    await chat.regenerate({ messageId: chat.messages[2].id });
    const stored = await load(id);
    flows.push({
      name: kind + ' ' + mode,
      status: chat.status,
      sent,
      loadedIds: userIds(loaded),
      shown: chat.messages.map(line),
      shownIds: userIds(chat.messages),
      stored: stored.map(line),
      storedIds: userIds(stored),
    });
  }
}

process.stdout.write(JSON.stringify({ errors, flows }));

// Drives POST /api/chat of a spool server with the real AI SDK client
// (AbstractChat and DefaultChatTransport of the "ai" package, as useChat
// does), approvals included, and prints the resulting UI messages as JSON.
// Every chunk passes the client's own uiMessageChunkSchema and stream
// processor, or the client records an error, which is printed too.
//
// usage: node chat.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Chat, settle } from './memorychat.mjs';

const errors = [];
const chat = new Chat({
  id: 'aisdk-chat',
  transport: new DefaultChatTransport({ api: process.argv[2] }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (e) => errors.push(String(e && e.message || e)),
});

function approvalPart() {
  return chat.lastMessage.parts.find((p) => p.state === 'approval-requested');
}

await chat.sendMessage({ text: 'hello world' });
await chat.sendMessage({ text: '/call get_time {}' });
await chat.sendMessage({ text: '/call save_note {"text":"milk"}' });
let part = approvalPart();
if (!part) throw new Error('no approval requested: ' + JSON.stringify(chat.lastMessage) + ' ' + errors.join('; '));
await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
await settle(chat);
await chat.sendMessage({ text: '/call save_note {"text":"eggs"}' });
part = approvalPart();
if (!part) throw new Error('no second approval requested');
await chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: 'no eggs' });
await settle(chat);

process.stdout.write(JSON.stringify({ status: chat.status, errors, messages: chat.messages }));

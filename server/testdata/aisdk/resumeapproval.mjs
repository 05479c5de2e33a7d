// Drives the AI SDK resume of a run that a person's answer to an approval
// began, with the real client: a chat asks for a call that needs
// approval, answers it (allowed in one chat, denied in another), drops
// the connection while the model answers the call's result (stop()), and
// a new chat with the messages the first had, as a page reload makes it,
// calls resumeStream() (what useChat({resume: true}) does on mount). The
// resumed stream is a replay of the whole assistant message, so it has to
// carry the call that the earlier run of the turn streamed.
//
// usage: node resumeapproval.mjs http://127.0.0.1:PORT/api/chat
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Chat } from './memorychat.mjs';

const api = process.argv[2];
const errors = [];
const onError = (e) => errors.push(String(e && e.message || e));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const long = Array.from({ length: 30 }, (_, i) => 'word' + i).join(' ');

// answered is the text the chat shows after the call's tool part.
function answered(chat) {
  const m = chat.lastMessage;
  if (!m || m.role !== 'assistant') return '';
  const at = m.parts.findIndex((p) => p.type === 'tool-save_note');
  return m.parts.slice(at + 1).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

async function dropAndResume(id, approved) {
  const transport = new DefaultChatTransport({ api });
  const first = new Chat({ id, transport, onError, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  await first.sendMessage({ text: '/call save_note {"text":"' + long + '"}' });
  const part = first.lastMessage.parts.find((p) => p.state === 'approval-requested');
  if (!part) throw new Error('no approval requested: ' + JSON.stringify(first.lastMessage) + ' ' + errors.join('; '));
  await first.addToolApprovalResponse({ id: part.approval.id, approved, reason: approved ? undefined : 'no ' + long });
  for (let i = 0; i < 2000 && answered(first).split(' ').length < 4; i++) await sleep(5);
  await first.stop();
  const dropped = answered(first);

  const second = new Chat({ id, transport: new DefaultChatTransport({ api }), onError });
  second.messages = structuredClone(first.messages);
  await second.resumeStream();
  return { dropped, status: second.status, messages: JSON.parse(JSON.stringify(second.messages)) };
}

const allowed = await dropAndResume('resume-allowed', true);
const denied = await dropAndResume('resume-denied', false);
process.stdout.write(JSON.stringify({ errors, allowed, denied }));

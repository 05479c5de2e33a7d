// A minimal chat on the AI SDK's useChat against spool serve: it streams
// from POST /api/chat, answers tool approvals, regenerates, and loads a
// stored conversation with GET /api/chat/{id}. The chat id (the spool
// session id) is in the address, ?chat=ID, so a reload shows the same
// conversation; with resume: true, a reload while an answer streams picks
// that answer up again from GET /api/chat/{id}/stream (spool runs the turn
// on when the page goes away).
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

// chatID returns the chat id of the address, making one when it has none.
function chatID() {
  const url = new URL(location.href);
  let id = url.searchParams.get('chat');
  if (!id) {
    id = 'chat-' + crypto.randomUUID();
    url.searchParams.set('chat', id);
    history.replaceState(null, '', url);
  }
  return id;
}

function App() {
  const [id] = useState(chatID);
  const [initial, setInitial] = useState(null); // the stored messages, once loaded
  const [loadError, setLoadError] = useState('');
  useEffect(() => {
    fetch('/api/chat/' + encodeURIComponent(id))
      .then(async (res) => {
        if (res.status === 404) return setInitial([]); // a new chat
        const body = await res.json();
        if (!res.ok) throw new Error(body.error ? body.error.message : res.statusText);
        setInitial(body.messages);
      })
      .catch((e) => setLoadError(String(e.message || e)));
  }, [id]);
  if (loadError) return <p className="error" role="alert">Could not load the chat: {loadError}</p>;
  if (!initial) return <p aria-busy="true">Loading…</p>;
  return <Chat id={id} initial={initial} />;
}

function Chat({ id, initial }) {
  const { messages, sendMessage, status, error, stop, regenerate, addToolApprovalResponse } = useChat({
    id,
    messages: initial,
    // On mount, GET /api/chat/{id}/stream: the running answer's stream
    // from its start, or 204 when nothing runs.
    resume: true,
    transport: new DefaultChatTransport({ api: '/api/chat' }),
    // An answered approval goes back to the server at once, which resumes the turn.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const busy = status === 'submitted' || status === 'streaming';
  const last = messages[messages.length - 1];
  // Regenerate answers the newest question again; not while it waits on a person.
  const canRegenerate = !busy && last && last.role === 'assistant' &&
    !last.parts.some((p) => p.state === 'approval-requested');

  // Stop ends the turn on the server too: useChat's stop() only drops
  // this page's request, and spool runs a turn on when its client goes
  // away (--on-disconnect continue, the default, which resume needs).
  function stopTurn() {
    stop();
    fetch('/v1/sessions/' + encodeURIComponent(id) + '/stop', { method: 'POST' }).catch(() => {});
  }

  function submit(e) {
    e.preventDefault();
    if (!input.trim() || busy) return;
    sendMessage({ text: input });
    setInput('');
  }

  return (
    <div className="app">
      <header>
        <h1>spool · useChat</h1>
        <span>chat <code>{id}</code></span>
        <a href="?">new chat</a>
      </header>
      <main className="messages" data-status={status} aria-live="polite">
        {messages.map((m) => (
          <article key={m.id} className={'msg ' + m.role} data-id={m.id}>
            {m.parts.map((p, i) => <Part key={i} part={p} answer={addToolApprovalResponse} />)}
            {m.role === 'assistant' && <Meta metadata={m.metadata} />}
          </article>
        ))}
        {error && <p className="error" role="alert">{error.message}</p>}
      </main>
      <form onSubmit={submit}>
        <input id="prompt" aria-label="Message" value={input} onChange={(e) => setInput(e.target.value)}
          placeholder="Ask, or /call save_note {&quot;text&quot;:&quot;milk&quot;}" autoComplete="off" />
        {busy
          ? <button type="button" id="stop" onClick={stopTurn}>Stop</button>
          : <button type="submit" id="send" className="primary">Send</button>}
        {canRegenerate &&
          <button type="button" id="regenerate" onClick={() => regenerate()}>Regenerate</button>}
      </form>
    </div>
  );
}

function Part({ part, answer }) {
  if (part.type === 'text') return <div className="text">{part.text}</div>;
  if (!part.type.startsWith('tool-')) return null; // step-start and others show nothing
  const name = part.type.slice('tool-'.length);
  return (
    <div className="tool" data-state={part.state}>
      <div><strong>{name}</strong> <code>{JSON.stringify(part.input)}</code> · {label(part)}</div>
      {part.state === 'output-available' && <div>→ <code>{String(part.output)}</code></div>}
      {part.state === 'output-error' && <div className="error">{part.errorText}</div>}
      {part.state === 'approval-requested' && (
        <div className="buttons">
          <button className="allow primary" onClick={() => answer({ id: part.approval.id, approved: true })}>Allow</button>
          <button className="deny" onClick={() => answer({ id: part.approval.id, approved: false, reason: 'denied in the example app' })}>Deny</button>
        </div>
      )}
    </div>
  );
}

function label(part) {
  switch (part.state) {
    case 'approval-requested': return 'needs approval';
    case 'approval-responded': return part.approval.approved ? 'allowed' : 'denied';
    case 'output-available': return part.approval ? 'allowed, done' : 'done';
    case 'output-denied': return 'denied' + (part.approval.reason ? ': ' + part.approval.reason : '');
    case 'output-error': return 'failed';
    default: return 'running';
  }
}

// Meta shows what spool's messageMetadata says of an answer: the model,
// its tokens, how long it took, and how it ended when not well.
function Meta({ metadata }) {
  if (!metadata) return null;
  const bits = [];
  if (metadata.model) bits.push(metadata.model);
  if (metadata.usage) bits.push(metadata.usage.inputTokens + ' in / ' + metadata.usage.outputTokens + ' out tokens');
  if (metadata.durationMs !== undefined) bits.push(metadata.durationMs + ' ms');
  if (metadata.status && metadata.status !== 'ok') bits.push(metadata.status.replace('_', ' '));
  if (metadata.error) bits.push(metadata.error.message);
  return <div className="meta">{bits.join(' · ')}</div>;
}

createRoot(document.getElementById('root')).render(<App />);

// The chat UI: wiring of the list, the conversation view, the message
// box, the delete dialog and the API key form. Routes live in the URL's
// fragment (#/c/<id>, #/new, #/), so a reload reopens what was open.

import * as api from './api.js';
import { ApiError, friendly } from './api.js';
import { apiKey, setKey, forgetKey, remembered } from './auth.js';
import { $ } from './dom.js';
import { SessionList } from './list.js';
import { Conversation } from './conversation.js';

const app = $('app');
const prompt = $('prompt');
const composer = $('composer');
const sendButton = $('send');
const stopButton = $('stop');
const composerError = $('composer-error');
const title = $('conv-title');
const deleteButton = $('delete');
const deleteDialog = $('delete-dialog');
const authPanel = $('auth');
const authForm = $('auth-form');
const authKey = $('auth-key');
const authError = $('auth-error');

const list = new SessionList({
  ul: $('session-list'),
  end: $('list-end'),
  scroller: $('list-scroller'),
  onError: handleError,
});
const conv = new Conversation({
  scroller: $('scroller'),
  log: $('log'),
  ol: $('messages'),
  older: $('older'),
  empty: $('empty'),
  onError: handleError,
  onRunning: updateComposer,
});

let currentTitle = '';

// announce tells assistive technology something that has no place on
// screen.
function announce(text) {
  const s = $('status');
  s.textContent = '';
  setTimeout(() => (s.textContent = text), 50);
}

// handleError deals with errors that are not tied to one place: a 401
// asks for a key. It returns true when it handled err.
function handleError(err) {
  if (err instanceof ApiError && err.status === 401) {
    askKey();
    return true;
  }
  return false;
}

function setTitle(text) {
  currentTitle = text;
  title.textContent = text;
  document.title = `${text} · spool`;
}

function updateComposer() {
  const running = conv.isRunning();
  sendButton.hidden = running;
  stopButton.hidden = !running;
  app.dataset.running = running ? 'true' : 'false';
}

function showComposerError(text) {
  composerError.textContent = text;
}

// --- routes

async function route(focus) {
  showComposerError('');
  const m = /^#\/c\/(.+)$/.exec(location.hash);
  if (m) {
    let id = m[1];
    try {
      id = decodeURIComponent(id);
    } catch {
      // keep it as written
    }
    await openConversation(id, focus);
  } else if (location.hash === '#/new') {
    newConversation(focus);
  } else {
    showList(focus);
  }
}

function showList(focus) {
  // Wide screens show the list beside an empty conversation.
  const left = list.current;
  conv.showNew();
  list.setCurrent(null);
  setTitle('New conversation');
  deleteButton.disabled = true;
  app.dataset.pane = 'list';
  updateComposer();
  // Back from a conversation: focus returns to its entry.
  if (focus && !list.focusItem(left)) $('new-chat').focus();
}

function newConversation(focus) {
  conv.showNew();
  list.setCurrent(null);
  setTitle('New conversation');
  deleteButton.disabled = true;
  app.dataset.pane = 'conversation';
  updateComposer();
  if (focus) prompt.focus();
}

async function openConversation(id, focus) {
  app.dataset.pane = 'conversation';
  list.setCurrent(id);
  setTitle('Loading…');
  deleteButton.disabled = true;
  const info = api.sessionInfo(id);
  info.catch(() => {}); // reported through open below
  const opening = conv.open(id);
  updateComposer();
  if (focus) prompt.focus();
  try {
    await opening;
    const s = await info;
    if (conv.id !== id) return;
    setTitle((s.title || '').trim() || 'Untitled conversation');
    deleteButton.disabled = false;
  } catch (err) {
    if (err.name === 'AbortError' || conv.id !== id) return;
    if (handleError(err)) return;
    setTitle(err.code === 'session_not_found' ? 'Conversation not found' : 'Conversation');
    conv.showError(friendly(err));
  }
}

// --- sending

async function send() {
  const text = prompt.value;
  if (!text.trim()) {
    showComposerError('Write a message first.');
    return;
  }
  if (conv.isRunning()) {
    showComposerError('Wait for the answer to finish, or stop it.');
    return;
  }
  showComposerError('');
  prompt.value = '';
  autosize();
  const id = conv.id;
  const item = conv.addUser(text);
  const res = await conv.run(
    (signal) => api.chat(id, text, signal),
    (sid, adopted) => {
      if (!adopted) return;
      // The server chose the id: make the URL name it, without a reload.
      history.replaceState(null, '', `#/c/${encodeURIComponent(sid)}`);
      // Listed at once; refresh puts the server's entry in its place.
      list.upsert({ id: sid, title: text, lastActivity: new Date().toISOString(), messageCount: 1 });
      list.setCurrent(sid);
      setTitle(text.trim().slice(0, 80));
      deleteButton.disabled = false;
    },
  );
  if (!res.ok && !res.shown) {
    // Nothing was recorded: give the text back.
    item.remove();
    if (!prompt.value) {
      prompt.value = text;
      autosize();
    }
    if (!handleError(res.err)) showComposerError(friendly(res.err));
  }
  if (res.id) refresh(res.id);
  if (document.activeElement === document.body) prompt.focus();
}

// refresh updates a session's entry in the list (and the title) after a
// turn.
async function refresh(id) {
  try {
    const s = await api.sessionInfo(id);
    list.upsert(s);
    if (conv.id === id) {
      setTitle((s.title || '').trim() || 'Untitled conversation');
      deleteButton.disabled = false;
    }
  } catch (err) {
    handleError(err);
  }
}

function autosize() {
  prompt.style.height = 'auto';
  prompt.style.height = `${Math.min(prompt.scrollHeight, 200)}px`;
}

composer.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    composer.requestSubmit();
  }
});
prompt.addEventListener('input', () => {
  autosize();
  if (composerError.textContent) showComposerError('');
});
stopButton.addEventListener('click', () => {
  conv.stop();
  prompt.focus();
});

// --- delete

deleteButton.addEventListener('click', () => {
  if (!conv.id) return;
  $('delete-name').textContent = currentTitle;
  deleteDialog.returnValue = '';
  deleteDialog.showModal();
});

deleteDialog.addEventListener('close', async () => {
  if (deleteDialog.returnValue !== 'delete' || !conv.id) return;
  const id = conv.id;
  try {
    await api.deleteSession(id);
  } catch (err) {
    if (!handleError(err)) showComposerError(`Could not delete the conversation: ${friendly(err)}`);
    return;
  }
  list.remove(id);
  announce('Conversation deleted.');
  if (location.hash === '#/') route(true);
  else location.hash = '#/';
  $('new-chat').focus();
});

// --- API key

function updateKeyState() {
  const has = apiKey() !== '';
  $('key-state').textContent = has
    ? remembered()
      ? 'API key remembered on this device'
      : 'API key kept for this tab'
    : '';
  $('forget-key').hidden = !has;
}

function askKey() {
  if (!authPanel.hidden) return;
  const had = apiKey() !== '';
  forgetKey();
  updateKeyState();
  $('auth-reason').textContent = had
    ? 'The server no longer accepts the saved API key. Enter a valid key.'
    : 'This server needs an API key. Enter the key you were given.';
  authError.textContent = '';
  authPanel.hidden = false;
  app.inert = true;
  authKey.focus();
}

authForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  const key = authKey.value.trim();
  if (!key) {
    authError.textContent = 'Enter the API key.';
    authKey.focus();
    return;
  }
  setKey(key, $('auth-remember').checked);
  $('auth-submit').disabled = true;
  authError.textContent = '';
  try {
    await api.listSessions(1);
  } catch (err) {
    forgetKey();
    authError.textContent =
      err instanceof ApiError && err.status === 401
        ? 'The server did not accept this key. Check it and try again.'
        : `Could not check the key: ${friendly(err)}`;
    authKey.select();
    return;
  } finally {
    $('auth-submit').disabled = false;
  }
  authKey.value = '';
  authPanel.hidden = true;
  app.inert = false;
  updateKeyState();
  start(true);
});

$('forget-key').addEventListener('click', () => {
  forgetKey();
  updateKeyState();
  announce('API key forgotten.');
  start(true);
});

// --- start

async function start(focus) {
  updateKeyState();
  try {
    await list.reset();
  } catch (err) {
    if (handleError(err)) return;
  }
  await route(focus);
}

window.addEventListener('hashchange', () => route(true));
// The skip link moves focus without touching the route in the fragment.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  if (app.dataset.pane === 'list') newConversation(true);
  else prompt.focus();
});
// A link to the route already shown changes no hash: route anyway, so
// that "New conversation" always starts afresh.
$('new-chat').addEventListener('click', (e) => {
  if (location.hash === '#/new') {
    e.preventDefault();
    route(true);
  }
});
start(false);

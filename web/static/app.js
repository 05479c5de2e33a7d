// The chat UI: wiring of the list, the search, the conversation view, the
// "what the model sees" panel, the message box, the rename and delete
// dialogs, the colour scheme and the API key form. Routes live in the
// URL's fragment (#/c/<id>, #/c/<id>/m/<entry id> for a message found by
// search, #/new, #/), so a reload reopens what was open.

import * as api from './api.js';
import { ApiError, friendly } from './api.js';
import { apiKey, setKey, forgetKey, remembered } from './auth.js';
import { $ } from './dom.js';
import { SessionList, titleOf } from './list.js';
import { Conversation } from './conversation.js';
import { Follower } from './live.js';
import { HistoryPanel } from './history.js';
import { Search } from './search.js';

const app = $('app');
const prompt = $('prompt');
const composer = $('composer');
const sendButton = $('send');
const stopButton = $('stop');
const composerError = $('composer-error');
const title = $('conv-title');
const renameButton = $('rename');
const deleteButton = $('delete');
const deleteDialog = $('delete-dialog');
const renameDialog = $('rename-dialog');
const historyButton = $('show-history');
const authPanel = $('auth');
const authForm = $('auth-form');
const authKey = $('auth-key');
const authError = $('auth-error');

const list = new SessionList({
  ul: $('session-list'),
  end: $('list-end'),
  scroller: $('list-scroller'),
  onError: handleError,
  onDelete: askDelete,
});
const conv = new Conversation({
  scroller: $('scroller'),
  log: $('log'),
  ol: $('messages'),
  older: $('older'),
  empty: $('empty'),
  onError: handleError,
  onRunning: updateComposer,
  onTurnEnd: (id) => {
    refresh(id);
    if (conv.id === id) panel.refresh();
  },
  onOwn: () => follower.flush(),
  // Focus on a Regenerate or an edit's Send, taken off with the answer
  // they replace, goes to the message box, as after sending.
  onFocusLost: () => prompt.focus(),
  // A turn whose stream broke off is shown again from the transcript and
  // followed from its run's beginning, as after a reload. One that broke
  // off before it began may still be waiting to: its session, when the
  // turn is its first, is not stored until then.
  onLost: (id, begun) => {
    if (conv.id === id) openConversation(id, false, '', begun ? 0 : Date.now() + storeWait);
  },
});
// The open conversation shows the turns other tabs and devices start, as
// they stream.
const follower = new Follower(conv, {
  onLive: (on) => (app.dataset.live = on ? 'on' : 'off'),
  onActivity: (id) => {
    refresh(id);
    if (conv.id === id) panel.refresh();
  },
});
const panel = new HistoryPanel({
  panel: $('history-panel'),
  list: $('history-list'),
  status: $('history-status'),
  compactButton: $('compact'),
  compactStatus: $('compact-status'),
  onError: handleError,
  onCompacted: (id) => {
    if (conv.id === id) conv.reload();
  },
});
const search = new Search({
  form: $('search-form'),
  input: $('search'),
  panel: $('search-panel'),
  list: $('search-results'),
  status: $('search-status'),
  listView: $('list-scroller'),
  onError: handleError,
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

// A phone's keyboard has no Shift+Enter: there Enter starts a new line
// and the Send button sends.
const touch = () => matchMedia('(pointer: coarse)').matches;

function updateComposer() {
  const running = conv.isRunning();
  sendButton.hidden = running;
  stopButton.hidden = !running;
  app.dataset.running = running ? 'true' : 'false';
  const missing = conv.missing;
  prompt.disabled = missing;
  sendButton.disabled = missing;
  $('prompt-hint').textContent = missing
    ? 'This conversation does not exist (it may have been deleted): start a new one.'
    : touch()
      ? 'Enter starts a new line; the Send button sends.'
      : 'Enter sends; Shift+Enter starts a new line. Escape stops an answer.';
}

function showComposerError(text) {
  composerError.textContent = text;
}

function setOpenActions(enabled) {
  deleteButton.disabled = !enabled;
  renameButton.disabled = !enabled;
}

// --- routes

async function route(focus) {
  showComposerError('');
  const m = /^#\/c\/([^/]+)(?:\/m\/([^/]+))?$/.exec(location.hash);
  if (m) {
    const dec = (s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s; // keep it as written
      }
    };
    await openConversation(dec(m[1]), focus, m[2] ? dec(m[2]) : '');
  } else if (location.hash === '#/new') {
    newConversation(focus);
  } else {
    showList(focus);
  }
}

function showList(focus) {
  // Wide screens show the list beside an empty conversation.
  const left = list.current;
  follower.stop();
  conv.showNew();
  list.setCurrent(null);
  setTitle('New conversation');
  setOpenActions(false);
  app.dataset.pane = 'list';
  updateComposer();
  panel.show(null);
  // Back from a conversation: focus returns to its entry.
  if (focus && !list.focusItem(left)) $('new-chat').focus();
}

function newConversation(focus) {
  follower.stop();
  conv.showNew();
  list.setCurrent(null);
  setTitle('New conversation');
  setOpenActions(false);
  app.dataset.pane = 'conversation';
  updateComposer();
  panel.show(null);
  if (focus) prompt.focus();
}

const notShown = 'That message is not on the version of the conversation shown.';

// storeWait is how long a conversation whose first turn's stream broke off
// before the turn began is looked for before the page says it is not
// found: the server stores the session when the turn begins, which a busy
// server may put off.
const storeWait = 10000;

// openConversation shows conversation id (focusing the composer when
// focus is set, revealing message entryId when given). A conversation not
// found is looked for again, less and less often, until the time waitUntil
// (ms since the epoch; 0 to say at once that it is not found).
async function openConversation(id, focus, entryId, waitUntil = 0, delay = 250) {
  app.dataset.pane = 'conversation';
  if (conv.id === id && entryId && !conv.missing) {
    // A search hit in the open conversation: no need to load it again.
    if ((await conv.reveal(entryId)) === false) announce(notShown);
    return;
  }
  follower.stop();
  list.setCurrent(id);
  setTitle('Loading…');
  setOpenActions(false);
  const info = api.sessionInfo(id);
  info.catch(() => {}); // reported through open below
  const opening = conv.open(id);
  updateComposer();
  panel.show(id);
  if (focus && !entryId) prompt.focus();
  try {
    await opening;
    // Followed once shown: a turn that runs from now on streams in
    // after what the page holds.
    if (conv.id === id && !conv.missing) follower.start(id);
    const s = await info;
    if (conv.id !== id) return;
    setTitle(titleOf(s));
    setOpenActions(true);
    if (entryId && (await conv.reveal(entryId)) === false) announce(notShown);
  } catch (err) {
    if (err.name === 'AbortError' || conv.id !== id) return;
    if (err.code === 'session_not_found' && Date.now() + delay < waitUntil) {
      const gen = conv.gen;
      await new Promise((r) => setTimeout(r, delay));
      // Unless the page has moved on meanwhile.
      if (conv.gen === gen && conv.id === id) openConversation(id, focus, entryId, waitUntil, Math.min(2 * delay, 2000));
      return;
    }
    updateComposer();
    if (handleError(err)) return;
    setTitle(err.code === 'session_not_found' ? 'Conversation not found' : 'Conversation');
    conv.showError(friendly(err));
  }
}

// --- sending

async function send() {
  const text = prompt.value;
  if (conv.missing) {
    showComposerError('This conversation does not exist: start a new one.');
    return;
  }
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
      setOpenActions(true);
      panel.show(sid);
      follower.start(sid);
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
  if (document.activeElement === document.body) prompt.focus();
}

// refresh updates a session's entry in the list (and the title) after a
// turn or an approval.
async function refresh(id) {
  try {
    const s = await api.sessionInfo(id);
    list.upsert(s);
    if (conv.id === id) {
      setTitle(titleOf(s));
      setOpenActions(true);
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
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey && !touch()) {
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

// --- keyboard: Escape stops, Ctrl+Shift+O starts anew, Ctrl+K searches

document.addEventListener('keydown', (e) => {
  const mod = e.ctrlKey || e.metaKey;
  if (e.key === 'Escape' && !e.defaultPrevented && conv.isRunning() && !document.querySelector('dialog[open]')) {
    e.preventDefault();
    conv.stop();
    prompt.focus();
  } else if (mod && e.shiftKey && (e.key === 'O' || e.key === 'o')) {
    e.preventDefault();
    if (location.hash === '#/new') route(true);
    else location.hash = '#/new';
  } else if (mod && !e.shiftKey && (e.key === 'k' || e.key === 'K')) {
    e.preventDefault();
    app.dataset.pane = 'list';
    search.focus();
  }
});

// --- the history panel

function setPanel(open) {
  $('history-panel').hidden = !open;
  historyButton.setAttribute('aria-expanded', String(open));
  app.dataset.panel = open ? 'open' : 'closed';
  if (open) {
    panel.show(conv.id);
    $('close-history').focus();
  }
}
historyButton.addEventListener('click', () => setPanel($('history-panel').hidden));
$('close-history').addEventListener('click', () => {
  setPanel(false);
  historyButton.focus();
});

// --- rename

renameButton.addEventListener('click', () => {
  if (!conv.id) return;
  $('rename-title').value = currentTitle;
  $('rename-error').textContent = '';
  renameDialog.returnValue = '';
  renameDialog.showModal();
  $('rename-title').select();
});

$('rename-form').addEventListener('submit', async (e) => {
  if (e.submitter?.value !== 'rename') return; // Cancel closes the dialog
  e.preventDefault();
  const id = conv.id;
  const text = $('rename-title').value.trim();
  if (!text) {
    $('rename-error').textContent = 'Enter a title.';
    return;
  }
  $('rename-confirm').disabled = true;
  try {
    const s = await api.rename(id, text);
    list.update(s);
    if (conv.id === id) setTitle(titleOf(s));
    renameDialog.close('rename');
    announce('Conversation renamed.');
  } catch (err) {
    if (!handleError(err)) $('rename-error').textContent = `Could not rename: ${friendly(err)}`;
  } finally {
    $('rename-confirm').disabled = false;
  }
});

// --- delete, from the conversation or from its entry in the list

let doomed = null;

function askDelete(id, name) {
  doomed = id;
  $('delete-name').textContent = name;
  deleteDialog.returnValue = '';
  deleteDialog.showModal();
}

deleteButton.addEventListener('click', () => {
  if (conv.id) askDelete(conv.id, currentTitle);
});

deleteDialog.addEventListener('close', async () => {
  // (The close event comes a task later: a Cancel's may arrive after the
  // dialog opened again, so it leaves doomed as it is.)
  const id = doomed;
  if (deleteDialog.returnValue !== 'delete' || !id) return;
  doomed = null;
  try {
    await api.deleteSession(id);
  } catch (err) {
    if (!handleError(err)) {
      if (conv.id === id) showComposerError(`Could not delete the conversation: ${friendly(err)}`);
      else announce(`Could not delete the conversation: ${friendly(err)}`);
    }
    return;
  }
  list.remove(id);
  search.forget(id);
  announce('Conversation deleted.');
  if (conv.id === id) {
    if (location.hash === '#/') route(true);
    else location.hash = '#/';
  }
  $('new-chat').focus();
});

// --- colour scheme: the system's, or light or dark as chosen

const schemes = ['system', 'light', 'dark'];
const schemeNames = { system: 'as the system', light: 'light', dark: 'dark' };

function scheme() {
  return document.documentElement.dataset.theme || 'system';
}

function showScheme() {
  const s = scheme();
  const b = $('theme');
  b.textContent = s === 'dark' ? '☾' : s === 'light' ? '☀' : '◐';
  b.setAttribute('aria-label', `Colour scheme: ${schemeNames[s]}`);
  b.title = `Colour scheme: ${schemeNames[s]} (click to change)`;
}

$('theme').addEventListener('click', () => {
  const next = schemes[(schemes.indexOf(scheme()) + 1) % schemes.length];
  if (next === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = next;
  try {
    if (next === 'system') localStorage.removeItem('spool.theme');
    else localStorage.setItem('spool.theme', next);
  } catch {
    // not kept: storage is unavailable
  }
  showScheme();
  announce(`Colour scheme: ${schemeNames[next]}.`);
});
showScheme();

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

// clearShown takes off the page everything read with a key: the open
// conversation, the list, the search's hits and the model view. The key
// form's backdrop is translucent, and on a shared device the next person
// may enter another key: what the last one read must not stay. The route
// stays, so that the same key entered again reopens what was open.
function clearShown() {
  follower.stop();
  conv.showNew();
  list.clear();
  search.clear();
  panel.show(null);
  setTitle('New conversation');
  setOpenActions(false);
  updateComposer();
}

function askKey() {
  if (!authPanel.hidden) return;
  const had = apiKey() !== '';
  forgetKey();
  updateKeyState();
  clearShown();
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
  // The person leaves: neither what was open nor a draft stays.
  clearShown();
  prompt.value = '';
  autosize();
  history.replaceState(null, '', '#/');
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

// The list follows the other tabs and devices by polling its first page
// (GET /v1/sessions) every LIST_POLL ms while the tab is visible, and at
// once when it becomes visible again: new conversations, counts, titles
// and approvals waiting. A session followed in the open conversation
// updates its entry at once (refresh).
const LIST_POLL = 5000;
const syncList = () => {
  if (document.visibilityState === 'visible' && authPanel.hidden) list.sync().catch(handleError);
};
setInterval(syncList, LIST_POLL);
document.addEventListener('visibilitychange', syncList);

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

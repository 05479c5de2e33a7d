// The API key of a server that needs one. It is kept in sessionStorage
// (it survives reloads of the tab and is forgotten when the tab closes)
// unless the user asks to remember it on this device, which keeps it in
// localStorage. Where storage is unavailable it lives in memory only.

const NAME = 'spool.apiKey';
let memory = '';

function read(store) {
  try {
    return store.getItem(NAME) || '';
  } catch {
    return '';
  }
}

function write(store, value) {
  try {
    if (value) store.setItem(NAME, value);
    else store.removeItem(NAME);
    return true;
  } catch {
    return false;
  }
}

// apiKey returns the key to send, or ''.
export function apiKey() {
  return read(sessionStorage) || read(localStorage) || memory;
}

// remembered reports whether the key is kept beyond the tab.
export function remembered() {
  return read(localStorage) !== '';
}

// setKey keeps key, on this device when remember is true.
export function setKey(key, remember) {
  forgetKey();
  if (!write(remember ? localStorage : sessionStorage, key)) memory = key;
}

// forgetKey drops the key from everywhere it may be kept.
export function forgetKey() {
  memory = '';
  write(sessionStorage, '');
  write(localStorage, '');
}

// DOM helpers. Content is only ever added as text: h appends strings as
// Text nodes and sets attributes with setAttribute, so nothing a model, a
// tool or a session title says can become markup.

// h returns a new element: props are attributes (class, dataset and
// on<event> handled specially), children are nodes or strings.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c != null && c !== false) el.append(c);
  }
  return el;
}

// $ returns the element with the given id.
export const $ = (id) => document.getElementById(id);

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const yearFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'medium' });
const relFmt = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'long' });

// relative says how long ago d was: "now", "5 minutes ago", "yesterday".
export function relative(d, now = new Date()) {
  const s = Math.round((d.getTime() - now.getTime()) / 1000);
  const a = Math.abs(s);
  if (a < 45) return relFmt.format(0, 'second');
  if (a < 45 * 60) return relFmt.format(Math.round(s / 60), 'minute');
  if (a < 22 * 3600) return relFmt.format(Math.round(s / 3600), 'hour');
  if (a < 26 * 86400) return relFmt.format(Math.round(s / 86400), 'day');
  if (a < 320 * 86400) return relFmt.format(Math.round(s / (30 * 86400)), 'month');
  return relFmt.format(Math.round(s / (365 * 86400)), 'year');
}

function label(d, now) {
  const date = d.toDateString() === now.toDateString()
    ? timeFmt.format(d)
    : d.getFullYear() === now.getFullYear() ? dayFmt.format(d) : yearFmt.format(d);
  return `${date} · ${relative(d, now)}`;
}

// when returns a <time> for an ISO timestamp: its date (or the time,
// today) and how long ago it was, kept current by a timer; the title
// has the full date.
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return h('time', { datetime: d.toISOString(), title: fullFmt.format(d) }, label(d, new Date()));
}

// Relative times move on: every minute each <time> says anew how long ago.
setInterval(() => {
  const now = new Date();
  for (const t of document.querySelectorAll('time[datetime]')) {
    const text = label(new Date(t.dateTime), now);
    if (t.textContent !== text) t.textContent = text;
  }
}, 60_000);

// compactJSON shows tool arguments on one line.
export function compactJSON(v) {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

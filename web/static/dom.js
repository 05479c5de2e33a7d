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

const sameDay = (a, b) => a.toDateString() === b.toDateString();
const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dateFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

// when returns a <time> for an ISO timestamp: the time today, else the day.
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const label = sameDay(d, new Date()) ? timeFmt.format(d) : dateFmt.format(d);
  return h('time', { datetime: d.toISOString(), title: fullFmt.format(d) }, label);
}

// compactJSON shows tool arguments on one line.
export function compactJSON(v) {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

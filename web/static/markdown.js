// Markdown of model answers, made safe: marked parses GitHub-flavoured
// Markdown, highlight.js colours fenced code, and DOMPurify sanitizes the
// result into a DocumentFragment before it touches the page. Raw HTML in
// an answer is shown as the text it is, images become links (an answer
// cannot make the browser fetch anything), and only http(s) and mailto
// links survive, each opening in a new tab with rel="noopener
// noreferrer". The page's Trusted Types policy admits DOMPurify's own
// policy only (see web.ContentSecurityPolicy): no other code can parse a
// string as HTML.

import { Marked } from './vendor/marked.js';
import DOMPurify from './vendor/purify.js';
import hljs from './vendor/highlight.js';
import { h } from './dom.js';

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => escapes[c]);

// Languages are named by the fence's info string; highlight.js names
// them in lower case.
const languageOf = (lang) => (/^[\w+#.-]{1,32}/.exec(lang || '')?.[0] || '').toLowerCase();

const md = new Marked({
  gfm: true,
  renderer: {
    code({ text, lang }) {
      const language = languageOf(lang);
      const known = language && hljs.getLanguage(language);
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHTML(text);
      const cls = `hljs${language ? ` language-${escapeHTML(language)}` : ''}`;
      return `<pre><code class="${cls}">${body}</code></pre>\n`;
    },
    html({ text }) {
      return escapeHTML(text);
    },
    image({ href, text }) {
      return `<a href="${escapeHTML(href)}">${escapeHTML(text || href)}</a>`;
    },
  },
});

const safeURL = /^(?:https?:|mailto:)/i;

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') || '';
    if (!safeURL.test(href)) node.removeAttribute('href');
    node.setAttribute('rel', 'noopener noreferrer');
    node.setAttribute('target', '_blank');
  }
});

const purifyConfig = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_URI_REGEXP: safeURL,
  ALLOW_DATA_ATTR: false,
  ADD_ATTR: ['target'],
  FORBID_TAGS: ['img', 'style', 'form', 'button', 'textarea', 'select', 'iframe', 'svg', 'math'],
  FORBID_ATTR: ['style', 'id', 'name'],
};

// render returns the sanitized DOM of Markdown text, its fenced code
// blocks with a language label and a Copy button.
export function render(text) {
  const frag = DOMPurify.sanitize(md.parse(text || '').trim(), purifyConfig);
  for (const pre of frag.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const lang = /language-([\w+#.-]+)/.exec(code?.className || '')?.[1] || '';
    const copy = h('button', { type: 'button', class: 'copy', 'aria-label': lang ? `Copy the ${lang} code` : 'Copy the code' }, 'Copy');
    copy.addEventListener('click', () => copyText(copy, code ? code.textContent : pre.textContent));
    const block = h('div', { class: 'codeblock' }, h('div', { class: 'code-head' }, h('span', { class: 'lang' }, lang || 'text'), copy));
    pre.replaceWith(block);
    block.append(pre);
  }
  return frag;
}

async function copyText(button, text) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  setTimeout(() => (button.textContent = 'Copy'), 2000);
}

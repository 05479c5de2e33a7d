// Serves the built page and passes /api/ (and POST
// /v1/sessions/{id}/stop) to a spool server, so that the page and
// /api/chat share one origin (as they would behind your own
// reverse proxy). Responses stream through unbuffered.
//
// usage: SPOOL_URL=http://127.0.0.1:8080 [SPOOL_API_KEY=…] [PORT=5173] node serve.mjs
import { createReadStream } from 'node:fs';
import { createServer, request } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const upstream = new URL(process.env.SPOOL_URL || 'http://127.0.0.1:8080');
const key = process.env.SPOOL_API_KEY || '';
const root = fileURLToPath(new URL('.', import.meta.url));
const files = { '/': 'index.html', '/style.css': 'style.css', '/dist/app.js': 'dist/app.js' };
const types = { '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript' };

const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  // The AI SDK's routes, and the stop route the Stop button calls.
  if (path.startsWith('/api/') || (req.method === 'POST' && /^\/v1\/sessions\/[^/]+\/stop$/.test(path))) return proxy(req, res);
  const file = files[path];
  if (!file || req.method !== 'GET') {
    res.writeHead(404).end('not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': types[extname(file)], 'Cache-Control': 'no-cache' });
  createReadStream(join(root, file)).pipe(res);
});

function proxy(req, res) {
  // The key stays on this side: the page never sees it.
  const headers = { ...req.headers, host: upstream.host };
  delete headers.cookie;
  if (key) headers.authorization = 'Bearer ' + key;
  const up = request(new URL(req.url, upstream), { method: req.method, headers }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
    res.end('spool is not reachable: ' + e.message);
  });
  res.on('close', () => up.destroy()); // the page went away: so does the request
  req.pipe(up);
}

server.listen(Number(process.env.PORT ?? 5173), '127.0.0.1', () => {
  const { port } = server.address();
  console.log(`usechat example on http://127.0.0.1:${port} (spool at ${upstream.origin})`);
});

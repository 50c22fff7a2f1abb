// The admin UI's files over real HTTP (server/http/static.ts): types, CSP, SPA fallback
// for navigations, JSON 404 for /api/* and missing assets, traversal refused.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createHttpServer } from '../../../server/http/app.js';
import { cleanPath, loadStaticUi, UI_CSP, UI_STATIC_ROUTE } from '../../../server/http/static.js';
import { rawExchange } from '../../helpers/rawSocket.js';
import { JSON_TYPE } from './fixture.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-1a2b.js"></script></head><body><div id="root"></div></body></html>';

function fixtureDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ui-dist-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'app-1a2b.js'), 'console.log(1)');
  writeFileSync(join(dir, 'assets', 'style-3c4d.css'), 'body{}');
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(dir, '.hidden'), 'never served');
  return dir;
}

async function serve(t: Test, dir: string) {
  const ui = loadStaticUi(dir);
  t.ok(ui, 'the build loads');
  const server = createHttpServer({ onNotFound: ui!.handler });
  server.router.get('/api/status', () => ({ body: { message: 'Ok' } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  return { port, url: `http://127.0.0.1:${port}`, ui: ui! };
}

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

t.test('files are served with their types and the strict CSP', async (t) => {
  const { url, ui } = await serve(t, fixtureDir(t));
  t.same([...ui.paths].sort(), ['/assets/app-1a2b.js', '/assets/style-3c4d.css', '/favicon.svg', '/index.html'], 'dotfiles are not loaded');
  const cases: [string, string, string][] = [
    ['/', 'text/html; charset=utf-8', INDEX],
    ['/index.html', 'text/html; charset=utf-8', INDEX],
    ['/assets/app-1a2b.js', 'text/javascript; charset=utf-8', 'console.log(1)'],
    ['/assets/style-3c4d.css', 'text/css; charset=utf-8', 'body{}'],
    ['/favicon.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"/>'],
  ];
  for (const [path, type, body] of cases) {
    const res = await fetch(url + path);
    t.equal(res.status, 200, path);
    t.equal(res.headers.get('content-type'), type, `${path} type`);
    t.equal(res.headers.get('content-security-policy'), UI_CSP, `${path} CSP`);
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.equal(res.headers.get('x-frame-options'), 'DENY');
    t.equal(await res.text(), body);
  }
  t.match(UI_CSP, /script-src 'self';/);
  t.notMatch(UI_CSP, /unsafe-inline|unsafe-eval/);
  const index = await fetch(`${url}/`);
  t.equal(index.headers.get('cache-control'), 'no-store', 'index.html is never cached');
  // Hashed assets replace the default, once: a second Cache-Control would be ambiguous.
  const asset = await fetch(`${url}/assets/app-1a2b.js`);
  t.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable', 'hashed assets are cached for good');
  const api = await fetch(`${url}/api/status`);
  t.equal(api.headers.get('cache-control'), 'no-store', 'API answers are never cached');
});

t.test('client-side routes fall back to index.html for navigations only', async (t) => {
  const { url } = await serve(t, fixtureDir(t));
  for (const path of ['/projects', '/projects/abc/secrets?env=prod&path=%2Fa', '/login', '/identities/x']) {
    const res = await fetch(url + path, { headers: HTML });
    t.equal(res.status, 200, path);
    t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(res.headers.get('content-security-policy'), UI_CSP);
    t.equal(await res.text(), INDEX);
  }
  // A script's fetch or a missing asset is a 404, not the app.
  for (const [path, headers] of [
    ['/projects', { accept: 'application/json' }],
    ['/assets/missing-0000.js', HTML],
    ['/nothing', {}],
  ] as const) {
    const res = await fetch(url + path, { headers });
    t.equal(res.status, 404, `${path} ${JSON.stringify(headers)}`);
    t.equal(res.headers.get('content-type'), JSON_TYPE);
    t.equal(((await res.json()) as { error: string }).error, 'NotFound');
  }
});

t.test('/api/* keeps the JSON 404; other methods are not served', async (t) => {
  const { url } = await serve(t, fixtureDir(t));
  t.equal((await fetch(`${url}/api/status`)).status, 200, 'routes still win');
  for (const path of ['/api/v9/nothing', '/api', '/api/index.html']) {
    const res = await fetch(url + path, { headers: HTML });
    t.equal(res.status, 404, path);
    t.equal(res.headers.get('content-type'), JSON_TYPE);
    const body = (await res.json()) as { error: string; message: string };
    t.equal(body.error, 'NotFound');
    t.equal(body.message, `Route GET:${path} not found`);
  }
  const post = await fetch(`${url}/index.html`, { method: 'POST', headers: HTML });
  t.equal(post.status, 404);
  t.equal(post.headers.get('content-type'), JSON_TYPE);
});

t.test('path traversal is refused', async (t) => {
  const { port, url } = await serve(t, fixtureDir(t));
  // fetch normalises dot segments, so these go over a raw socket as written.
  for (const path of ['/../package.json', '/assets/../../package.json', '/%2e%2e/package.json', '/assets/%2E%2E/%2e%2e/etc/passwd', '/assets/..%2f..%2fpackage.json', '/..%5c..%5cpackage.json', '/a%00b', '/%zz']) {
    const { data } = await rawExchange(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nConnection: close\r\n\r\n`);
    t.match(data, /^HTTP\/1\.1 400 /, `${path} -> 400`);
    t.notMatch(data, /"name"\s*:\s*"vault-standalone"|root:x:0/, `${path} leaks nothing`);
  }
  const ok = await fetch(`${url}/assets/app-1a2b.js`);
  t.equal(ok.status, 200);
  t.throws(() => cleanPath('/a/./b'));
  t.equal(cleanPath('/a%20b/c'), '/a b/c');
});

t.test('no build: no handler, the service keeps its JSON 404', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ui-empty-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(loadStaticUi(dir), undefined, 'empty folder');
  t.equal(loadStaticUi(join(dir, 'absent')), undefined, 'missing folder');
});

t.test('the UI files answer under the route label ui-static; a miss has none', async (t) => {
  const ui = loadStaticUi(fixtureDir(t));
  const seen: { path: string; route: string | undefined; status: number }[] = [];
  const server = createHttpServer({ onNotFound: ui!.handler, onResponse: (r) => seen.push({ path: r.req.path, route: r.route, status: r.status }) });
  server.router.get('/api/status', () => ({ body: { message: 'Ok' } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  const url = `http://127.0.0.1:${port}`;
  t.equal((await fetch(`${url}/assets/app-1a2b.js`)).status, 200);
  t.equal((await fetch(`${url}/projects/x`, { headers: HTML })).status, 200, 'a client-side route gets the app');
  t.equal((await fetch(`${url}/assets/missing.js`)).status, 404);
  t.equal((await fetch(`${url}/api/nothing`)).status, 404);
  t.same(
    seen.map((s) => [s.path, s.route ?? null, s.status]),
    [
      ['/assets/app-1a2b.js', UI_STATIC_ROUTE, 200],
      ['/projects/x', UI_STATIC_ROUTE, 200],
      ['/assets/missing.js', null, 404],
      ['/api/nothing', null, 404],
    ],
  );
  t.equal(UI_STATIC_ROUTE, 'ui-static');
});

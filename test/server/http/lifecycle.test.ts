// The HTTP front's part of fault tolerance: a request deadline, a drain that lets
// in-flight requests finish and closes keep-alive connections after their answer, and
// an exclusive port.
import { connect } from 'node:net';
import t from 'tap';
import { createHttpServer } from '../../../server/http/app.js';
import type { HttpReply } from '../../../server/http/types.js';

/** One raw keep-alive connection: send requests, read whole answers (JSON bodies). */
function rawClient(port: number) {
  const s = connect(port, '127.0.0.1');
  let data = '';
  let waiting: (() => void) | undefined;
  s.on('data', (c) => {
    data += c.toString('latin1');
    waiting?.();
  });
  const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
  s.on('error', () => {});
  return {
    closed,
    async get(path: string): Promise<string> {
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      for (;;) {
        const m = /content-length: (\d+)\r\n/i.exec(data);
        const head = data.indexOf('\r\n\r\n');
        if (m && head >= 0 && data.length >= head + 4 + Number(m[1])) {
          const answer = data.slice(0, head + 4 + Number(m[1]));
          data = data.slice(answer.length);
          return answer;
        }
        await new Promise<void>((resolve) => (waiting = resolve));
      }
    },
    end: () => s.destroy(),
  };
}

t.test('a handler slower than the deadline is answered 503 with Retry-After', async (t) => {
  const server = createHttpServer({ deadlineMs: 200, logger: { error() {} } });
  let release!: (r: HttpReply) => void;
  server.router.get('/hang', () => new Promise<HttpReply>((resolve) => (release = resolve)));
  server.router.get('/fast', () => ({ body: { ok: true } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/hang`);
  const took = performance.now() - started;
  t.equal(res.status, 503);
  t.equal(res.headers.get('retry-after'), '2');
  const body = (await res.json()) as { error: string; message: string };
  t.equal(body.error, 'ServiceUnavailable');
  t.match(body.message, /within 200 ms/);
  t.ok(took >= 190 && took < 1500, `answered at the deadline (${took.toFixed(0)} ms)`);
  // The late reply is dropped; the server keeps serving.
  release({ body: { late: true } });
  t.equal(server.inFlight, 0, 'the answered request is no longer in flight');
  t.equal((await fetch(`http://127.0.0.1:${port}/fast`)).status, 200);
});

t.test('drain: in-flight requests finish, every later answer closes its connection, new connections are refused', async (t) => {
  const server = createHttpServer();
  const pending: Array<() => void> = [];
  server.router.get('/slow', () => new Promise<HttpReply>((resolve) => pending.push(() => resolve({ body: { slow: true } }))));
  server.router.get('/fast', () => ({ body: { ok: true } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));

  const idleKeepAlive = rawClient(port);
  t.match(await idleKeepAlive.get('/fast'), /^HTTP\/1\.1 200/);
  const busy = rawClient(port);
  const slowAnswer = busy.get('/slow');
  while (pending.length === 0) await new Promise((r) => setImmediate(r));
  t.equal(server.inFlight, 1);

  server.close();
  const drained = server.drain(5_000);
  await t.rejects(fetch(`http://127.0.0.1:${port}/fast`), 'a new connection is refused');

  // A keep-alive connection opened before the close is still served, and told to go.
  const late = await idleKeepAlive.get('/fast');
  t.match(late, /^HTTP\/1\.1 200/);
  t.match(late, /\r\nConnection: close\r\n/i, 'Connection: close on an answer sent while draining');
  await idleKeepAlive.closed;

  pending[0]!();
  const answer = await slowAnswer;
  t.match(answer, /^HTTP\/1\.1 200/, 'the in-flight request finished');
  t.match(answer, /\{"slow":true\}$/);
  t.match(answer, /\r\nConnection: close\r\n/i);
  t.equal((answer.match(/\r\nconnection:/gi) ?? []).length, 1, 'one Connection header');
  t.equal(await drained, true, 'drained');
  await busy.closed;
});

t.test('drain gives up after its timeout', async (t) => {
  const server = createHttpServer();
  server.router.get('/never', () => new Promise<HttpReply>(() => {}));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  const c = rawClient(port);
  void c.get('/never').catch(() => {});
  while (server.inFlight === 0) await new Promise((r) => setImmediate(r));
  server.close();
  t.equal(await server.drain(100), false);
  server.close(true);
  await c.closed;
});

t.test('the port is exclusive: a second server on it is refused with a message naming the port', async (t) => {
  const a = createHttpServer();
  const port = await a.listen(0, '127.0.0.1');
  t.teardown(() => a.close(true));
  const b = createHttpServer();
  t.teardown(() => b.close(true));
  await t.rejects(b.listen(port, '127.0.0.1'), { name: 'ListenError', message: new RegExp(`127\\.0\\.0\\.1:${port}\\b.*in use`) });
});

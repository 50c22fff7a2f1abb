// Clients that never read a large reply (issue 31 point 6): what the front holds for them is
// counted and capped across connections, a reply that makes no progress for
// slowClientTimeoutMs has its connection closed, and normal clients are served meanwhile.
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { RETRY_AFTER_SECONDS } from '../../../server/errors.js';
import { createHttpServer, STREAM_MIN_BYTES, type HttpServer } from '../../../server/http/app.js';

const BIG = Buffer.alloc(8 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz');
const BIG_SHA = createHash('sha256').update(BIG).digest('hex');
// A JSON body as a string (the usual reply): streamed as its UTF-8 bytes.
const ITEMS = Array.from({ length: 20_000 }, (_, i) => ({ key: `KEY_${i}`, value: `välue-${i}-€` }));
const TIMEOUT_MS = 1000;
const CAP = 10 * 1024 * 1024;

async function start(t: Test): Promise<{ server: HttpServer; url: string; port: number }> {
  const server = createHttpServer({ slowClientTimeoutMs: TIMEOUT_MS, maxUnsentBytes: CAP, logger: { error: () => {} } });
  server.router.get('/big', () => ({ raw: true, body: BIG, headers: { 'Content-Type': 'application/octet-stream' } }));
  server.router.get('/list', () => ({ body: { secrets: ITEMS } }));
  server.router.get('/ok', () => ({ body: { ok: true } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  return { server, url: `http://127.0.0.1:${port}`, port };
}

/** Waits for a condition on the server's counters (bounded; no fixed sleep). */
async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A client that asks for `path` and reads nothing until `drain()`, which then reads what
 * reached it up to the end of the connection (a closed connection ends; an open one would not).
 */
function nonReader(port: number, path: string): { socket: Socket; drain: () => Promise<number> } {
  const socket = connect({ port, host: '127.0.0.1' });
  socket.pause();
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  const drain = () =>
    new Promise<number>((resolve) => {
      let n = 0;
      socket.on('data', (chunk: Buffer) => (n += chunk.length));
      socket.once('close', () => resolve(n));
      socket.resume();
    });
  return { socket, drain };
}

t.test('a normal client gets large replies whole, and nothing stays counted', async (t) => {
  const { server, url } = await start(t);
  t.ok(BIG.length > STREAM_MIN_BYTES);
  const res = await fetch(`${url}/big`);
  t.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  t.equal(bytes.length, BIG.length);
  t.equal(createHash('sha256').update(bytes).digest('hex'), BIG_SHA);
  const list = await fetch(`${url}/list`);
  t.same(((await list.json()) as { secrets: unknown[] }).secrets, ITEMS, 'a large JSON string reply arrives intact (UTF-8)');
  await until('nothing unsent', () => server.unsentBytes === 0);
  t.equal(server.slowClientCloses, 0);
});

t.test('a client that never reads is closed after slowClientTimeoutMs; the total stays under the cap; others are served', async (t) => {
  const { server, url, port } = await start(t);
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, server.unsentBytes)), 1);
  t.teardown(() => clearInterval(sample));

  const stalled = nonReader(port, '/big');
  t.teardown(() => stalled.socket.destroy());
  await until('the reply to wait for its client', () => server.unsentBytes > 0);
  t.ok(server.unsentBytes <= CAP, `unsent ${server.unsentBytes} within the cap`);

  // Over the cap: another large reply is refused, not buffered.
  const refused = await fetch(`${url}/big`);
  t.equal(refused.status, 503, 'a large reply over the cap is 503');
  t.equal(refused.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
  t.match(await refused.json(), { statusCode: 503, error: 'ServiceUnavailable' });
  t.equal(server.unsentRefusals, 1);
  // Small replies are not affected.
  const ok = await fetch(`${url}/ok`);
  t.same(await ok.json(), { ok: true });

  await until('the slow-client timeout to close it', () => server.slowClientCloses === 1);
  const got = await stalled.drain();
  t.ok(got < BIG.length, `the client saw the connection end after ${got} bytes, before the whole reply`);
  t.equal(server.unsentBytes, 0, 'its bytes are released');
  t.ok(peak <= CAP, `peak ${peak} within the cap`);

  // And large replies are served again.
  const res = await fetch(`${url}/big`);
  t.equal(createHash('sha256').update(Buffer.from(await res.arrayBuffer())).digest('hex'), BIG_SHA);
});

t.test('many non-reading clients: at most the cap is held, every one is closed', async (t) => {
  const { server, port } = await start(t);
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, server.unsentBytes)), 1);
  t.teardown(() => clearInterval(sample));
  const clients = Array.from({ length: 20 }, () => nonReader(port, '/list'));
  t.teardown(() => clients.forEach((c) => c.socket.destroy()));
  const bigOnes = Array.from({ length: 5 }, () => nonReader(port, '/big'));
  t.teardown(() => bigOnes.forEach((c) => c.socket.destroy()));
  await until('every reply to be written or refused', () => server.unsentBytes > 0);
  // Those that got a (small) 503 stay open as idle keep-alive connections; those held are closed.
  await until('the held replies to be dropped', () => server.slowClientCloses > 0 && server.unsentBytes === 0);
  t.ok(peak <= CAP, `peak ${peak} within the cap`);
  t.ok(server.unsentRefusals + server.slowClientCloses >= 1);
});

// A real HTTP front on an ephemeral port with tiny routes, for the tests in this folder.
import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import { AppError } from '../../../server/errors.js';
import { createHttpServer, type HttpServerOptions } from '../../../server/http/app.js';
import { parseJsonBody } from '../../../server/http/body.js';
import type { HttpReply } from '../../../server/http/types.js';

export interface Fixture {
  port: number;
  url: string;
  /** Handler invocations by route name. */
  calls: Record<string, number>;
  logs: { obj: Record<string, unknown>; msg: string }[];
  /** Resolves /slow requests; set once a /slow handler is running. */
  slow: { started: Promise<void>; release: (reply: HttpReply) => void };
}

export async function startFixture(t: Test, opts: HttpServerOptions = {}): Promise<Fixture> {
  const logs: Fixture['logs'] = [];
  const server = createHttpServer({ logger: { error: (obj, msg) => logs.push({ obj, msg }) }, ...opts });
  const calls: Record<string, number> = Object.create(null);
  const hit = (name: string) => {
    calls[name] = (calls[name] ?? 0) + 1;
  };
  let markStarted!: () => void;
  let release!: (reply: HttpReply) => void;
  const slow = {
    started: new Promise<void>((r) => (markStarted = r)),
    release: (reply: HttpReply) => release(reply),
  };

  const r = server.router;
  r.get('/ok', () => {
    hit('ok');
    return { body: { ok: true } };
  });
  r.get('/count', () => {
    hit('count');
    return { body: { n: calls.count } };
  });
  r.post('/count', () => {
    hit('count');
    return { body: { n: calls.count } };
  });
  r.post('/echo', (req) => {
    hit('echo');
    return {
      body: {
        length: req.body.length,
        sha: req.body.subarray(0, 8).toString('latin1'),
        sha256: createHash('sha256').update(req.body).digest('hex'),
        // The body's bytes are all its memory holds (not a slice of a shared slab).
        owned: req.body.byteOffset === 0 && req.body.buffer.byteLength === req.body.length,
      },
    };
  });
  r.post('/json', (req) => ({ body: { parsed: parseJsonBody(req) } }));
  r.get('/req', (req) => ({
    body: {
      reqId: req.reqId,
      method: req.method,
      path: req.path,
      query: Object.fromEntries(req.query),
      headers: { ...req.headers },
      bodyLength: req.body.length,
      remoteAddress: req.remoteAddress,
    },
  }));
  r.get('/params/:a/:b', (req) => ({ body: { params: req.params } }));
  r.put('/params/:a', async (req) => ({ status: 201, body: { params: req.params } }));
  r.patch('/patch', () => ({ body: { patched: true } }));
  r.delete('/thing/:id', () => ({ status: 204 }));
  r.get('/app-error', () => {
    throw new AppError('FORBIDDEN', 'Not allowed here', { headers: { 'Retry-After': '7' } });
  });
  r.get('/missing/:name', (req) => {
    throw new AppError('NOT_FOUND', `Thing '${req.params.name}' not found`);
  });
  r.get('/boom', () => {
    throw new Error('database password is hunter2');
  });
  r.get('/async-boom', async () => {
    await Promise.resolve();
    throw new Error('async hunter2');
  });
  r.get('/bad-header', () => ({ body: {}, headers: { 'X-Evil': 'a\r\nSet-Cookie: x=1' } }));
  r.get('/raw', () => ({ raw: true, body: 'plain text', headers: { 'Content-Type': 'text/plain; charset=utf-8' } }));
  r.get('/raw-json', () => ({ raw: true, body: Buffer.from('{"pre":1}') }));
  r.get('/slow', async () => {
    hit('slow');
    markStarted();
    return new Promise<HttpReply>((resolve) => (release = resolve));
  });

  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  return { port, url: `http://127.0.0.1:${port}`, calls, logs, slow };
}

export const JSON_TYPE = 'application/json; charset=utf-8';
export const REQ_ID = /^req-[0-9A-Za-z]{14}$/;

/** Asserts the contract's error shape and the JSON content type. */
export async function expectError(t: Test, res: Response, status: number, error: string): Promise<Record<string, unknown>> {
  t.equal(res.status, status, `status ${status}`);
  t.equal(res.headers.get('content-type'), JSON_TYPE, 'json content type');
  const body = (await res.json()) as Record<string, unknown>;
  t.match(body, { reqId: REQ_ID, statusCode: status, message: String, error });
  t.equal(body.reqId, res.headers.get('x-request-id'), 'reqId matches X-Request-Id');
  return body;
}

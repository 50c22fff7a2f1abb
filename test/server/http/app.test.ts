// The HTTP front over real sockets: reply shape and headers, errors, params, body cap, aborts.
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { countResponses, rawExchange } from '../../helpers/rawSocket.js';
import { MAX_MESSAGE_CHARS, printableMessage } from '../../../server/http/app.js';
import { expectError, JSON_TYPE, REQ_ID, startFixture } from './fixture.js';

const SECURITY = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

t.test('200 JSON reply carries the content type, security headers and a request id', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/ok`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), JSON_TYPE);
  for (const [k, v] of Object.entries(SECURITY)) t.equal(res.headers.get(k), v, k);
  t.match(res.headers.get('x-request-id'), REQ_ID);
  t.same(await res.json(), { ok: true });

  const ids = new Set<string>();
  for (let i = 0; i < 20; i++) ids.add((await fetch(`${f.url}/ok`)).headers.get('x-request-id')!);
  t.equal(ids.size, 20, 'request ids are unique');
});

t.test('every method routes; other statuses and bodies', async (t) => {
  const f = await startFixture(t);
  const put = await fetch(`${f.url}/params/x`, { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(put.status, 201);
  t.same(await put.json(), { params: { a: 'x' } });
  const patch = await fetch(`${f.url}/patch`, { method: 'PATCH' });
  t.same(await patch.json(), { patched: true });
  const del = await fetch(`${f.url}/thing/1`, { method: 'DELETE' });
  t.equal(del.status, 204);
  t.equal(del.headers.get('content-type'), null, 'no body, no content type');
  t.equal(await del.text(), '');
});

t.test('the plain request: method, path, query, lower-case headers, remote address', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/req?workspaceId=&a=1&a=2&x=%2F+y`, { headers: { 'X-Custom': 'Yes', 'Accept-Encoding': 'gzip' } });
  t.equal(res.status, 200);
  const body = (await res.json()) as any;
  t.equal(body.method, 'GET');
  t.equal(body.path, '/req');
  t.same(body.query, { workspaceId: '', a: '2', x: '/ y' });
  t.equal(body.headers['x-custom'], 'Yes');
  t.equal(body.headers['accept-encoding'], 'gzip');
  t.equal(body.remoteAddress, '127.0.0.1');
  t.equal(body.reqId, res.headers.get('x-request-id'));
  t.equal(body.bodyLength, 0);
});

t.test('readAddressOnArrival false: a GET reads its address while open and not after; other methods read it on arrival', async (t) => {
  const records: Array<{ method: string; address: string }> = [];
  const f = await startFixture(t, {
    readAddressOnArrival: false,
    onResponse: (r) => records.push({ method: r.req.method, address: r.req.remoteAddress }),
  });
  const get = await fetch(`${f.url}/req`);
  t.equal(((await get.json()) as { remoteAddress: string }).remoteAddress, '127.0.0.1', 'asked while open: the socket\'s address');
  const untouched = await fetch(`${f.url}/ok`);
  t.equal(untouched.status, 200);
  const post = await fetch(`${f.url}/count`, { method: 'POST' });
  t.equal(post.status, 200);
  t.same(
    records,
    [
      { method: 'GET', address: '127.0.0.1' },
      { method: 'GET', address: '' },
      { method: 'POST', address: '127.0.0.1' },
    ],
    'after the answer an unread GET address is unknown; a POST\'s was read on arrival',
  );
});

t.test('by default every request\'s address is read on arrival (the request log names it after the answer)', async (t) => {
  const addresses: string[] = [];
  const f = await startFixture(t, { onResponse: (r) => addresses.push(r.req.remoteAddress) });
  t.equal((await fetch(`${f.url}/ok`)).status, 200);
  t.same(addresses, ['127.0.0.1']);
});

t.test('a JSON body {} on GET is tolerated', async (t) => {
  const f = await startFixture(t);
  const res = await rawExchange(
    f.port,
    'GET /req HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
  );
  t.match(res.data, /^HTTP\/1\.1 200 OK\r\n/);
  t.match(res.data, /"bodyLength":2/);
});

t.test('unknown route: 404 in the contract shape', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/api/v9/nothing?x=1`);
  const body = await expectError(t, res, 404, 'NotFound');
  t.equal(body.message, 'Route GET:/api/v9/nothing not found');
  for (const [k, v] of Object.entries(SECURITY)) t.equal(res.headers.get(k), v, k);

  const wrongMethod = await fetch(`${f.url}/ok`, { method: 'DELETE' });
  t.equal((await expectError(t, wrongMethod, 404, 'NotFound')).message, 'Route DELETE:/ok not found');
  const withBody = await fetch(`${f.url}/nope`, { method: 'POST', body: '{"a":1}' });
  await expectError(t, withBody, 404, 'NotFound');
  const root = await fetch(`${f.url}/`);
  await expectError(t, root, 404, 'NotFound');
  const head = await fetch(`${f.url}/nope`, { method: 'HEAD' });
  t.equal(head.status, 404);
  t.equal(f.calls.ok, undefined, 'no route ran');
});

/** A raw reply split into its header block and what follows it, status and headers parsed. */
function splitReply(data: string): { status: number; headers: Record<string, string>; rest: string } {
  const end = data.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = data.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, rest: data.slice(end + 4) };
}

t.test('HEAD: the GET reply without its body, and the connection stays usable', async (t) => {
  const f = await startFixture(t);
  const cases: [path: string, status: number, name: string][] = [
    ['/ok', 200, 'a GET route'],
    ['/params/x/y', 200, 'a GET route with params'],
    ['/app-error', 403, 'a GET route that throws'],
    ['/nope', 404, 'no route'],
  ];
  for (const [path, status, name] of cases) {
    const get = await fetch(`${f.url}${path}`);
    const getBody = Buffer.from(await get.arrayBuffer());
    // HEAD, then a GET pipelined on the same connection: had HEAD sent a body, the
    // second reply would not start right after the first one's headers.
    const raw = await rawExchange(
      f.port,
      `HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    t.equal(countResponses(raw.data), 2, `${name}: two replies on one connection`);
    const head = splitReply(raw.data);
    t.equal(head.status, status, `${name}: the GET's status`);
    t.equal(head.headers['content-type'], JSON_TYPE, `${name}: JSON content type`);
    t.equal(head.headers['content-length'], String(getBody.length), `${name}: the GET body's length`);
    t.equal(head.headers['x-content-type-options'], 'nosniff', `${name}: security headers`);
    t.match(head.headers['x-request-id'], REQ_ID);
    t.ok(head.rest.startsWith('HTTP/1.1 200 OK\r\n'), `${name}: no body before the next reply`);
    const next = splitReply(head.rest);
    t.equal(next.rest, '{"ok":true}', `${name}: the next request is served whole`);
  }
  t.equal(f.calls.ok, 2 + 4, 'HEAD ran the GET handler');
});

t.test('HEAD refused for its framing: the error\'s headers, no body, connection closed', async (t) => {
  const f = await startFixture(t);
  const raw = await rawExchange(f.port, 'HEAD /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
  t.ok(raw.closedByServer);
  const head = splitReply(raw.data);
  t.equal(head.status, 411);
  t.equal(head.headers['content-type'], JSON_TYPE);
  t.equal(head.rest, '', 'no body');
  t.equal(f.calls.ok, undefined);
});

t.test('error messages never carry control characters, and are bounded', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/missing/a%00b%1B%5B2Jc%7Fd%C2%9Be`);
  const body = await expectError(t, res, 404, 'NotFound');
  t.equal(body.message, "Thing 'a\\u0000b\\u001b[2Jc\\u007fd\\u009be' not found", 'shown escaped, as text');
  t.notMatch(body.message as string, /[\u0000-\u001f\u007f-\u009f]/);

  const long = await fetch(`${f.url}/missing/${'a'.repeat(3000)}`);
  const longBody = await expectError(t, long, 404, 'NotFound');
  t.equal((longBody.message as string).length, MAX_MESSAGE_CHARS);
  t.ok((longBody.message as string).endsWith('…'), 'cut, and says so');
});

t.test('printableMessage keeps surrogate pairs whole when it cuts', async (t) => {
  const cut = printableMessage(`${'a'.repeat(MAX_MESSAGE_CHARS - 2)}😀😀`);
  t.ok(cut.length <= MAX_MESSAGE_CHARS);
  t.equal(cut, `${'a'.repeat(MAX_MESSAGE_CHARS - 2)}…`);
  t.equal(printableMessage('plain message'), 'plain message');
});

t.test('thrown AppError: its status, name, message and headers', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/app-error`);
  const body = await expectError(t, res, 403, 'PermissionDenied');
  t.equal(body.message, 'Not allowed here');
  t.equal(res.headers.get('retry-after'), '7');
  t.equal(f.logs.length, 0, '4xx is not logged');
});

t.test('thrown plain Error: generic 500, logged without request secrets', async (t) => {
  const f = await startFixture(t);
  for (const path of ['/boom', '/async-boom', '/bad-header']) {
    const res = await fetch(`${f.url}${path}`, { headers: { authorization: 'Bearer top-secret-token' } });
    const body = await expectError(t, res, 500, 'InternalServerError');
    t.equal(body.message, 'Something went wrong', `${path}: no internal message leaks`);
    t.equal(res.headers.get('x-evil'), null);
    t.equal(res.headers.get('set-cookie'), null);
  }
  t.equal(f.logs.length, 3);
  const logged = JSON.stringify(f.logs);
  t.notMatch(logged, /top-secret-token/);
  // The route template (none here: a bare router), never the raw path, which names things.
  t.match(f.logs[0]!.obj, { reqId: REQ_ID, status: 500, route: null });
  t.notOk('path' in f.logs[0]!.obj, 'no raw path');
});

t.test('raw replies keep their own content type; raw defaults to JSON', async (t) => {
  const f = await startFixture(t);
  const raw = await fetch(`${f.url}/raw`);
  t.equal(raw.headers.get('content-type'), 'text/plain; charset=utf-8');
  t.equal(raw.headers.get('x-content-type-options'), 'nosniff');
  t.equal(await raw.text(), 'plain text');
  const rawJson = await fetch(`${f.url}/raw-json`);
  t.equal(rawJson.headers.get('content-type'), JSON_TYPE);
  t.same(await rawJson.json(), { pre: 1 });
});

t.test('route params are percent-decoded; a malformed escape is a 400', async (t) => {
  const f = await startFixture(t);
  const res = await fetch(`${f.url}/params/a%2Fb/%C3%A9%20x`);
  t.same(await res.json(), { params: { a: 'a/b', b: 'é x' } });
  for (const bad of ['/params/%E0%A4%A/x', '/params/ok/%', '/params/%ZZ/x', '/params/%C3/x']) {
    const r = await fetch(`${f.url}${bad}`);
    await expectError(t, r, 400, 'BadRequest');
  }
});

t.test('duplicate Authorization is refused', async (t) => {
  const f = await startFixture(t);
  const res = await rawExchange(f.port, 'GET /ok HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nConnection: close\r\n\r\n');
  t.match(res.data, /^HTTP\/1\.1 400 Bad Request\r\n/);
  t.match(res.data, /"error":"BadRequest"/);
  t.equal(f.calls.ok, undefined);
});

t.test('body cap', async (t) => {
  const f = await startFixture(t, { maxBodyBytes: 1024 });

  t.test('exactly at the cap is accepted', async (t) => {
    const res = await fetch(`${f.url}/echo`, { method: 'POST', body: 'a'.repeat(1024) });
    t.equal(res.status, 200);
    t.match(await res.json(), { length: 1024, sha: 'aaaaaaaa' });
  });

  t.test('one byte over, declared by Content-Length: 413 without reading', async (t) => {
    const before = f.calls.echo ?? 0;
    const res = await fetch(`${f.url}/echo`, { method: 'POST', body: 'a'.repeat(1025) });
    await expectError(t, res, 413, 'PayloadTooLarge');
    t.equal(f.calls.echo ?? 0, before, 'handler not called');
  });

  t.test('far over (2 MiB): 413', async (t) => {
    const res = await fetch(`${f.url}/echo`, { method: 'POST', body: Buffer.alloc(2 * 1024 * 1024, 1) });
    await expectError(t, res, 413, 'PayloadTooLarge');
  });

  t.test('declared too large but never sent: 413 at once, connection closed', async (t) => {
    const res = await rawExchange(f.port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n');
    t.match(res.data, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
    t.match(res.data, /content-type: application\/json; charset=utf-8\r\n/i);
    t.match(res.data, /"statusCode":413,.*"error":"PayloadTooLarge"/);
    t.ok(res.closedByServer);
  });

  t.test('an absurd Content-Length: connection closed', async (t) => {
    const res = await rawExchange(f.port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n');
    t.ok(res.closedByServer);
    t.notMatch(res.data, /200 OK/);
  });

  t.test('nothing pipelined behind a refused body is served', async (t) => {
    const before = f.calls.count ?? 0;
    const res = await rawExchange(
      f.port,
      `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n${'a'.repeat(2000)}GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    t.ok(res.closedByServer);
    t.ok(countResponses(res.data) <= 1, 'at most the 413');
    t.notMatch(res.data, /200 OK/);
    t.equal(f.calls.count ?? 0, before, 'the pipelined request never ran');
  });

  t.test('a body arriving in many pieces is reassembled', async (t) => {
    const head = 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n';
    const res = await rawExchange(f.port, Buffer.concat([Buffer.from(head), Buffer.alloc(1000, 0x62)]));
    t.match(res.data, /"length":1000,"sha":"bbbbbbbb"/);
  });

  t.test('a small body is in memory of its own, not in a slab other Buffers share (issue 28, point 6)', async (t) => {
    // A slab stays reachable, with the request's plaintext, while any Buffer cut from it lives.
    const res = await fetch(`${f.url}/echo`, { method: 'POST', body: JSON.stringify({ password: 'p'.repeat(40) }) });
    t.match(await res.json(), { length: 55, owned: true });
  });

  t.test('the server still works', async (t) => {
    t.equal((await fetch(`${f.url}/ok`)).status, 200);
  });
});

t.test('default cap (1 MiB): a body in many TCP chunks arrives intact; one byte more is 413', async (t) => {
  const f = await startFixture(t);
  const body = randomBytes(1024 * 1024);
  const res = await fetch(`${f.url}/echo`, { method: 'POST', body });
  t.equal(res.status, 200);
  t.match(await res.json(), { length: body.length, sha256: createHash('sha256').update(body).digest('hex') });
  const over = await fetch(`${f.url}/echo`, { method: 'POST', body: Buffer.concat([body, Buffer.from('x')]) });
  await expectError(t, over, 413, 'PayloadTooLarge');
  t.equal(f.calls.echo, 1);
});

t.test('chunked request body: 411 JSON and the connection closes', async (t) => {
  const f = await startFixture(t);
  const res = await rawExchange(f.port, 'POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
  t.match(res.data, /^HTTP\/1\.1 411 Length Required\r\n/);
  t.match(res.data, /content-type: application\/json; charset=utf-8\r\n/i);
  t.match(res.data, /"statusCode":411,.*"error":"LengthRequired"/);
  t.equal(countResponses(res.data), 1);
  t.ok(res.closedByServer);
  t.equal(f.calls.count, undefined, 'no handler ran');

  const headersOnly = await rawExchange(f.port, 'POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  t.match(headersOnly.data, /^HTTP\/1\.1 411 Length Required\r\n/);
  t.ok(headersOnly.closedByServer);
});

t.test('nothing pipelined behind a chunked body is served', async (t) => {
  const f = await startFixture(t);
  const hidden = 'GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  for (const chunked of ['5\r\nhello\r\n0\r\n\r\n', '\r\n\r\n', ';x\r\n\r\n']) {
    const res = await rawExchange(f.port, `POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}${hidden}`);
    t.ok(res.closedByServer);
    t.ok(countResponses(res.data) <= 1, 'at most the 411');
    t.notMatch(res.data, /200 OK/);
  }
  t.equal(f.calls.count, undefined, 'no handler ran');
});

t.test('a client aborting mid-body does not hurt the server', async (t) => {
  const f = await startFixture(t);
  await new Promise<void>((resolve, reject) => {
    import('node:net').then(({ connect }) => {
      const s = connect(f.port, '127.0.0.1', () => {
        s.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789', () => {
          s.destroy();
        });
      });
      s.on('close', () => resolve());
      s.on('error', reject);
    }, reject);
  });
  const res = await fetch(`${f.url}/echo`, { method: 'POST', body: 'hello' });
  t.equal(res.status, 200);
  t.match(await res.json(), { length: 5, sha: 'hello' });
  t.equal(f.calls.echo, 1, 'the aborted request never reached the handler');
});

t.test('a client leaving while the handler awaits: the late reply is dropped', async (t) => {
  const f = await startFixture(t);
  const { connect } = await import('node:net');
  const s = connect(f.port, '127.0.0.1');
  s.on('error', () => {});
  const closed = new Promise((r) => s.on('close', r));
  s.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  await f.slow.started;
  s.destroy();
  await closed;
  // A full round trip lets the server process the disconnect before the reply is released.
  t.equal((await fetch(`${f.url}/ok`)).status, 200);
  f.slow.release({ body: { late: true } });
  t.equal((await fetch(`${f.url}/ok`)).status, 200, 'still serving');
  t.equal(f.logs.length, 0, 'nothing went wrong');
});

t.test('close() stops accepting connections', async (t) => {
  const { createHttpServer } = await import('../../../server/http/app.js');
  const { get } = await import('node:http');
  const server = createHttpServer();
  server.router.get('/ok', () => ({ body: {} }));
  const port = await server.listen(0, '127.0.0.1');
  t.ok(port > 0);
  // agent: false: a fresh connection each time, closed after the reply.
  const status = (): Promise<number> =>
    new Promise((resolve, reject) => {
      get({ port, host: '127.0.0.1', path: '/ok', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      }).on('error', reject);
    });
  t.equal(await status(), 200);
  server.close();
  server.close();
  await t.rejects(status(), { code: 'ECONNREFUSED' });
  await t.rejects(server.listen(0), /closed/);
});

t.test('close(true) also drops open keep-alive connections', async (t) => {
  const { createHttpServer } = await import('../../../server/http/app.js');
  const server = createHttpServer();
  server.router.get('/ok', () => ({ body: {} }));
  const port = await server.listen(0, '127.0.0.1');
  const { connect } = await import('node:net');
  const s = connect(port, '127.0.0.1');
  let data = '';
  const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
  const answered = new Promise<void>((resolve) =>
    s.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.endsWith('{}')) resolve();
    }),
  );
  s.on('error', () => {});
  s.write('GET /ok HTTP/1.1\r\nHost: x\r\n\r\n');
  await answered;
  server.close(true);
  await closed;
  t.match(data, /^HTTP\/1\.1 200 OK/);
  server.close(true);
});

t.test('one trailing slash routes as without it (Infisical ignores it); the route is the template', async (t) => {
  const f = await startFixture(t);
  const ok = await fetch(`${f.url}/ok/`);
  t.equal(ok.status, 200);
  t.same(await ok.json(), { ok: true });
  const params = await fetch(`${f.url}/params/x/y/`);
  t.same(await params.json(), { params: { a: 'x', b: 'y' } }, 'parameters keep their values, the slash is not part of the last one');
  const put = await fetch(`${f.url}/params/x/`, { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(put.status, 201);
  t.same(await put.json(), { params: { a: 'x' } });
  const head = await fetch(`${f.url}/ok/`, { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD of a GET route with a slash');
  t.equal((await fetch(`${f.url}/ok//`)).status, 404, 'two slashes are another path');
  t.equal((await fetch(`${f.url}/params/x/`)).status, 404, 'an empty last segment is not a parameter');
});

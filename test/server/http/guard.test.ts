// Request smuggling: uWS (this version) serves a request hidden behind a duplicate
// Content-Length. The header guard closes such connections before any handler runs.
import t from 'tap';
import { countResponses, rawExchange } from '../../helpers/rawSocket.js';
import { startFixture } from './fixture.js';

// The hidden request asks to close, so a broken guard fails fast instead of hanging.
const HIDDEN = 'GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

const cases: [string, string][] = [
  ['two Content-Length headers', `POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: ${HIDDEN.length}\r\n\r\n${HIDDEN}`],
  ['two equal Content-Length headers', `POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n${HIDDEN}`],
  ['Content-Length with Transfer-Encoding', `POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${HIDDEN}`],
  ['Transfer-Encoding with Content-Length', `POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n${HIDDEN}`],
  ['two Transfer-Encoding headers', `POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${HIDDEN}`],
  ['two Host headers', `GET /count HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n${HIDDEN}`],
  ['two Content-Length headers to an unknown route', `POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: ${HIDDEN.length}\r\n\r\n${HIDDEN}`],
  ['a non-numeric Content-Length', `POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 1a\r\n\r\n${HIDDEN}`],
  ['a signed Content-Length', `POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n${HIDDEN}`],
];

for (const [name, bytes] of cases) {
  t.test(`${name}: connection closed, no handler runs, no response`, async (t) => {
    const f = await startFixture(t);
    const res = await rawExchange(f.port, bytes);
    t.ok(res.closedByServer, 'server closed the connection');
    t.equal(countResponses(res.data), 0, 'no HTTP response at all');
    t.equal(f.calls.count, undefined, 'handler never invoked');
    // The server keeps serving others.
    t.equal((await fetch(`${f.url}/count`)).status, 200);
    t.equal(f.calls.count, 1);
  });
}

t.test('control: a single Content-Length body is not parsed as a request', async (t) => {
  const f = await startFixture(t);
  const body = HIDDEN;
  const res = await rawExchange(
    f.port,
    `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  );
  t.equal(countResponses(res.data), 2, 'two pipelined requests, two responses');
  t.equal(f.calls.echo, 1);
  t.equal(f.calls.count, undefined, 'the body was a body');
  t.equal(f.calls.ok, 1);
});

t.test('control: the same body on an unmatched route is discarded, not served', async (t) => {
  const f = await startFixture(t);
  const res = await rawExchange(
    f.port,
    `POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: ${HIDDEN.length}\r\n\r\n${HIDDEN}GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  );
  t.equal(countResponses(res.data), 2);
  t.match(res.data, /^HTTP\/1\.1 404 Not Found/);
  t.equal(f.calls.count, undefined);
  t.equal(f.calls.ok, 1);
});

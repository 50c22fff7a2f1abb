// The paced load the bench's (b½) row reads: requests leave on schedule whether or not
// earlier ones were answered, their latency counts from when they were due, and every
// answer is checked.
import t, { type Test } from 'tap';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pacedLoad } from '../../bench/paced.js';

const BODY = '{"secrets":[]}';

async function serve(t: Test, answer: (n: number, res: ServerResponse) => void): Promise<string> {
  let n = 0;
  const server: Server = createServer((req, res) => answer(n++, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
}

const ok = (res: ServerResponse, body = BODY, status = 200) =>
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);

t.test('every request is sent at its rate and answered; bodies and statuses are checked', async (t) => {
  const url = await serve(t, (n, res) => (n % 10 === 3 ? ok(res, '{"other":1}') : n % 10 === 7 ? ok(res, BODY, 503) : ok(res)));
  const r = await pacedLoad({ url, headers: { authorization: 'Bearer x' }, expectBody: BODY, rate: 200, seconds: 1, connections: 4, warmupSeconds: 0 });
  t.equal(r.requests, 200, 'rate × seconds requests answered');
  t.equal(r.unanswered, 0);
  t.equal(r.mismatches, 20, 'a 200 with another body is a mismatch');
  t.equal(r.non2xx, 20, 'a 503 is counted');
  t.equal(r.errors, 0);
});

t.test('latency counts from when a request was due, not from when it went out', async (t) => {
  // One connection, a server that takes 20 ms per answer, 100 requests due within 1 s:
  // they queue behind each other, so the last waits ~2 s although each answer took 20 ms.
  const url = await serve(t, (_n, res) => setTimeout(() => ok(res), 20));
  const r = await pacedLoad({ url, headers: {}, expectBody: BODY, rate: 100, seconds: 1, connections: 1, warmupSeconds: 0 });
  t.equal(r.requests, 100);
  t.ok(r.latencyMs.max > 900, `the last request's wait is counted (max ${r.latencyMs.max.toFixed(0)} ms)`);
  t.ok(r.latencyMs.p50 > 200, `so is the queue's middle (p50 ${r.latencyMs.p50.toFixed(0)} ms)`);
});

t.test('the warm-up is paced on the same connections, not measured, and what went wrong in it is reported', async (t) => {
  // The first 100 requests (0.5 s at 200/s) are the warm-up's: each a 503 after 300 ms.
  // Measured, they would be 100 non-2xx and a p99 over 300 ms.
  const sockets = new Set<unknown>();
  const url = await serve(t, (n, res) => {
    sockets.add(res.socket);
    if (n < 100) setTimeout(() => ok(res, BODY, 503), 300);
    else ok(res);
  });
  const r = await pacedLoad({ url, headers: {}, expectBody: BODY, rate: 200, seconds: 1, connections: 4, warmupSeconds: 0.5 });
  t.same(r.warmup, { requests: 100, non2xx: 100, errors: 0, mismatches: 0, unanswered: 0 }, 'the warm-up: 100 requests, each a 503');
  t.equal(r.requests, 200, 'the measured run: rate × seconds');
  t.equal(r.non2xx, 0, 'no warm-up answer is counted in the measured run');
  t.ok(r.latencyMs.max < 300, `no warm-up latency is either (max ${r.latencyMs.max.toFixed(0)} ms)`);
  t.equal(sockets.size, 4, 'both passes use the same four connections');
});

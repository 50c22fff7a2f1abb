// HEAD /api/status (probes and uptime monitors send it): the GET's status and headers,
// JSON content type included, with no body, on a connection that stays usable.
import t from 'tap';
import { JSON_TYPE, request } from '../../helpers/http.js';
import { countResponses, rawExchange } from '../../helpers/rawSocket.js';
import { startTestService, testEnv } from '../../helpers/service.js';

t.test('HEAD /api/status', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const raw = await rawExchange(
    svc.port,
    'HEAD /api/status HTTP/1.1\r\nHost: x\r\n\r\nGET /api/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  );
  t.equal(countResponses(raw.data), 2, 'both requests answered on one connection');
  const end = raw.data.indexOf('\r\n\r\n');
  const head = raw.data.slice(0, end);
  t.match(head, /^HTTP\/1\.1 200 OK\r\n/);
  t.match(head, new RegExp(`\r\nContent-Type: ${JSON_TYPE.replace(/[;]/g, '\\$&')}(\r\n|$)`, 'i'));
  t.match(head, /\r\nContent-Length: [1-9]\d*(\r\n|$)/i, 'the length the GET body has');
  t.ok(raw.data.slice(end + 4).startsWith('HTTP/1.1 200 OK\r\n'), 'no body: the next reply follows the headers');
  t.match(raw.data.slice(end + 4), /"message":"Ok"/, 'and the GET after it is served whole');
});

t.test('GET /api/health/live and /api/health/ready', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const live = await request(`${svc.url}/api/health/live`);
  t.equal(live.status, 200);
  t.same(live.body, { status: 'ok' });
  const ready = await request(`${svc.url}/api/health/ready`);
  t.equal(ready.status, 200);
  t.same(ready.body, { status: 'ready', checks: { database: 'ok', migrations: 'ok', redis: 'not configured', crypto: 'ok', shutdown: 'ok', disk: 'ok', auditTrail: 'ok' } });

  // Shutting down: not ready at once, still alive.
  svc.services.lifecycle.shuttingDown = true;
  const notReady = await request(`${svc.url}/api/health/ready`);
  t.equal(notReady.status, 503);
  t.equal(notReady.headers.get('retry-after'), '2');
  t.match(notReady.body, { statusCode: 503, error: 'ServiceUnavailable', message: 'Not ready: shutdown', checks: { shutdown: 'shutting down', database: 'ok' } });
  t.match(notReady.body.reqId, /^req-/);
  t.equal((await request(`${svc.url}/api/health/live`)).status, 200);
  svc.services.lifecycle.shuttingDown = false;

  // A schema behind the code's migrations: not ready, naming them.
  await svc.services.db.sql`delete from schema_migrations where version = (select max(version) from schema_migrations)`;
  const res = await request(`${svc.url}/api/health/ready`);
  t.equal(res.status, 503);
  t.match(res.body.checks, { migrations: /^at \d+, expected \d+$/, database: 'ok' });
});

t.test('GET /api/health/dependencies: the database and Redis every replica shares', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const ok = await request(`${svc.url}/api/health/dependencies`);
  t.equal(ok.status, 200);
  t.same(ok.body, { status: 'ok', checks: { database: 'ok', redis: 'ok' } });
});


// Change events under faults (issue 30 points 2-3): a replica cut off from Redis catches up
// from the event table (nothing lost, nothing twice), and a subscriber that stops reading is
// disconnected at the stream's buffer bound while everyone else is served.
// Both run on a PostgreSQL database of the test's own and a Redis of the test's own
// (test/helpers/redis.ts); the shared Redis is never touched.
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { SYSTEM } from '../../../../server/domain/access.js';
import { CuttableProxy, linkIs, testRedis } from '../../../helpers/redis.js';
import { login, quietLog, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

const ALL = [{ event: 'secret:create' }, { event: 'secret:update' }, { event: 'secret:delete' }, { event: 'secret:import-mutation' }];
const SUBSCRIBE = '/api/v1/events/subscribe/project-events';

/** An SSE subscriber on a raw socket: `ids()` resolves with the next `n` event ids (pings skipped). */
class RawSubscriber {
  status = 0;
  private buf = '';
  private readonly seen: number[] = [];
  private waiters: Array<() => void> = [];
  private constructor(readonly socket: Socket) {}

  static open(port: number, token: string, body: unknown, opts: { read: boolean }): Promise<RawSubscriber> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const s = new RawSubscriber(socket);
      const payload = JSON.stringify(body);
      socket.once('error', reject);
      socket.once('connect', () =>
        socket.write(
          `POST ${SUBSCRIBE} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
        ),
      );
      let head = '';
      const onHead = (chunk: Buffer) => {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onHead);
        s.status = Number(head.slice(9, 12));
        s.take(head.slice(end + 4));
        if (opts.read) socket.on('data', (c: Buffer) => s.take(c.toString('utf8')));
        // A subscriber that never reads again: the kernel's buffers fill, then the server's.
        else socket.pause();
        resolve(s);
      };
      socket.on('data', onHead);
    });
  }

  private take(text: string) {
    this.buf += text;
    for (const m of this.buf.matchAll(/^id: (\d+)$/gm)) this.seen.push(Number(m[1]));
    const cut = this.buf.lastIndexOf('\n');
    if (cut >= 0) this.buf = this.buf.slice(cut + 1);
    for (const w of this.waiters.splice(0)) w();
  }

  async ids(n: number): Promise<number[]> {
    while (this.seen.length < n) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.seen.splice(0, n);
  }

  /** Ids that arrived beyond what was taken. */
  get extra(): number[] {
    return [...this.seen];
  }

  close() {
    this.socket.destroy();
  }
}

t.test('a replica cut off from Redis catches up from the event table: nothing lost, nothing twice', async (t) => {
  const redis = await testRedis(t);
  const proxy = await CuttableProxy.open(t, redis.port);
  const env = await testEnv(t, 'postgres+redis', { REDIS_URL: redis.url, EVENTS_POLL_MS: '200', EVENTS_PING_MS: '60000' });
  const A = await startTestService(t, env);
  const B = await startService(parseConfig({ ...env, REDIS_URL: proxy.url }), quietLog);
  t.teardown(() => B.close());
  const seeded = await seedHomelab(A.services, { role: 'admin' });
  const token = await login(A.url, seeded);
  const where = { project: { id: seeded.projectId }, environment: 'prod', secretPath: '/' };
  const last = async () => Number((await A.services.store.sql`select coalesce(max(id), 0)::int as n from events where project_id = ${seeded.projectId}`)[0]!.n);

  await linkIs(B.services.bus, true);
  const sub = await RawSubscriber.open(B.port, token, { projectId: seeded.projectId, register: ALL }, { read: true });
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);
  const start = await last();

  await A.services.secrets.create(SYSTEM, { ...where, key: 'LIVE_BEFORE_CUT', value: 'v1' });
  t.same(await sub.ids(1), [start + 1], 'delivered through Redis');

  proxy.cut();
  await linkIs(B.services.bus, false);
  await A.services.secrets.create(SYSTEM, { ...where, key: 'WHILE_CUT_1', value: 'v2' });
  await A.services.secrets.update(SYSTEM, { ...where, key: 'WHILE_CUT_1', value: 'v3' });
  t.same(await sub.ids(2), [start + 2, start + 3], 'delivered by the poll of the event table while Redis is unreachable');

  proxy.restore();
  await linkIs(B.services.bus, true);
  await A.services.secrets.remove(SYSTEM, { ...where, key: 'WHILE_CUT_1' });
  t.same(await sub.ids(1), [start + 4], 'live again after the link returns');
  await A.services.secrets.create(SYSTEM, { ...where, key: 'MARKER', value: 'v4' });
  t.same(await sub.ids(1), [start + 5]);
  t.same(sub.extra, [], 'no id delivered twice across the cut, the reset and the poll');
  t.equal(await last(), start + 5);
});

t.test('a subscriber that stops reading is cut off at the bound; the others are served meanwhile', async (t) => {
  const redis = await testRedis(t);
  const env = await testEnv(t, 'postgres+redis', { REDIS_URL: redis.url, EVENTS_MAX_CONNECTIONS_PER_ACTOR: '2', EVENTS_PING_MS: '60000' });
  const A = await startTestService(t, env);
  const seeded = await seedHomelab(A.services, { role: 'admin' });
  const token = await login(A.url, seeded);
  const body = { projectId: seeded.projectId, register: ALL };
  const where = { project: { id: seeded.projectId }, environment: 'prod', secretPath: '/' };

  const slow = await RawSubscriber.open(A.port, token, body, { read: false });
  t.teardown(() => slow.close());
  t.equal(slow.status, 200);
  const reader = await RawSubscriber.open(A.port, token, body, { read: true });
  t.teardown(() => reader.close());
  t.equal(reader.status, 200);
  const third = await RawSubscriber.open(A.port, token, body, { read: true });
  t.equal(third.status, 429, 'the per-caller cap (2) is taken by the slow and the reading subscriber');
  third.close();

  // Batches of long keys make large frames (each key appears twice in Infisical's payload):
  // ~0.5 MB per batch, so the kernel's socket buffers fill within a few dozen batches.
  const pad = 'X'.repeat(180);
  let cutAfter = -1;
  for (let batch = 0; batch < 200 && cutAfter < 0; batch++) {
    const secrets = Array.from({ length: 1000 }, (_, i) => ({ key: `K${batch}_${i}_${pad}`, value: 'v' }));
    await A.services.secrets.createMany(SYSTEM, { ...where, secrets });
    // The reading subscriber keeps up with every batch, whatever the slow one does.
    t.equal((await reader.ids(1)).length, 1);
    const res = await fetch(`${A.url}/api/v3/secrets/raw?workspaceId=${seeded.projectId}&environment=prod&secretPath=/&include_imports=false`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (res.status !== 200) t.fail(`read during the slow subscriber: ${res.status}`);
    await res.arrayBuffer();
    // The slow stream's slot comes back once the server has closed it.
    const probe = await RawSubscriber.open(A.port, token, body, { read: true });
    probe.close();
    if (probe.status === 200) cutAfter = batch;
    else t.equal(probe.status, 429);
  }
  t.ok(cutAfter >= 0, `the slow subscriber was disconnected (after batch ${cutAfter})`);
  // What the slow socket holds is what the kernel buffered before the server gave up: it ends there.
  slow.socket.resume();
  await new Promise<void>((resolve) => (slow.socket.destroyed ? resolve() : slow.socket.once('close', () => resolve())));
  t.pass('the slow subscriber\'s connection is closed by the server');
});

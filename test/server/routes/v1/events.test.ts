// Change events (issue 30 points 1-3): rows written with the change, through the pipeline;
// the SSE stream at Infisical's path over a real socket, across two replicas (PostgreSQL +
// Redis) and on the embedded default; Last-Event-ID replay and resync; path scoping;
// membership removal cuts a stream off; caps; shutdown ends streams.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import t from 'tap';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { SYSTEM } from '../../../../server/domain/access.js';
import { INVENTORY, login, quietLog, seedHomelab, startTestService, testEnv, type Backend } from '../../../helpers/service.js';

interface Frame {
  id?: string;
  event?: string;
  data?: any;
}

/** A subscriber over a real socket: frames are queued and taken in order with next(). */
class Subscriber {
  status = 0;
  headers: IncomingMessage['headers'] = {};
  ended = false;
  private frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  private buf = '';
  private res?: IncomingMessage;
  private req?: ReturnType<typeof httpRequest>;
  body = '';

  static open(url: string, token: string, json: unknown, lastEventId?: string): Promise<Subscriber> {
    const s = new Subscriber();
    return new Promise((resolve, reject) => {
      const payload = JSON.stringify(json);
      const req = httpRequest(`${url}/api/v1/events/subscribe/project-events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      });
      s.req = req;
      req.on('response', (res) => {
        s.res = res;
        s.status = res.statusCode ?? 0;
        s.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          s.body += chunk;
          s.buf += chunk;
          let at: number;
          while ((at = s.buf.indexOf('\n\n')) >= 0) {
            const block = s.buf.slice(0, at);
            s.buf = s.buf.slice(at + 2);
            const f: Frame = {};
            let any = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const i = line.indexOf(': ');
              const [k, v] = i >= 0 ? [line.slice(0, i), line.slice(i + 2)] : [line, ''];
              any = true;
              if (k === 'id') f.id = v;
              else if (k === 'event') f.event = v;
              else if (k === 'data') f.data = JSON.parse(v);
            }
            if (any) s.frames.push(f);
          }
          s.wake();
        });
        res.on('end', () => {
          s.ended = true;
          s.wake();
        });
        res.on('error', () => {
          s.ended = true;
          s.wake();
        });
        resolve(s);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next frame that is not a ping (rejects after a generous bound, or when the stream ended). */
  async next(ms = 10_000): Promise<Frame> {
    const until = Date.now() + ms;
    for (;;) {
      const f = this.frames.shift();
      if (f && f.event === 'ping') continue;
      if (f) return f;
      if (this.ended) throw new Error('stream ended');
      const left = until - Date.now();
      if (left <= 0) throw new Error('no frame in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async untilEnded(ms = 10_000): Promise<Frame[]> {
    const seen: Frame[] = [];
    for (;;) {
      try {
        seen.push(await this.next(ms));
      } catch (err) {
        if (this.ended) return seen;
        throw err;
      }
    }
  }

  close() {
    this.res?.destroy();
    this.req?.destroy();
  }
}

const ALL = [{ event: 'secret:create' }, { event: 'secret:update' }, { event: 'secret:delete' }, { event: 'secret:import-mutation' }];

for (const backend of ['postgres+redis', 'embedded'] as Backend[]) {
  t.test(`events on ${backend}`, async (t) => {
    const env = await testEnv(t, backend, { EVENTS_RECHECK_MS: '60000', EVENTS_PING_MS: '200', EVENTS_MAX_CONNECTIONS_PER_ACTOR: '3' });
    const A = await startTestService(t, env);
    // A second replica on the same PostgreSQL and Redis (the embedded default has one process).
    let urlB = A.url;
    if (backend === 'postgres+redis') {
      const B = await startService(parseConfig(env), quietLog);
      t.teardown(() => B.close());
      urlB = `http://127.0.0.1:${B.port}`;
    }
    const seeded = await seedHomelab(A.services, { role: 'admin' });
    const pid = seeded.projectId;
    const token = await login(A.url, seeded);
    const sql = A.services.store.sql;
    const svc = A.services;
    const where = { project: { id: pid }, environment: 'prod', secretPath: '/' };
    const rows = async () => (await sql`select id::int as id, type, environment, secret_path, secret_keys from events where project_id = ${pid} order by id`) as any[];
    const keysOf = (r: any) => (typeof r.secretKeys === 'string' ? JSON.parse(r.secretKeys) : r.secretKeys);

    await t.test('each write adds exactly its events, in the same transaction; never a value', async (t) => {
      let all = await rows();
      t.same(all.map((r) => r.id), Array.from({ length: 14 }, (_, i) => i + 1), 'one event per seeded create, ids 1..14');
      t.ok(all.every((r) => r.type === 'secret:create' && r.environment === 'prod' && r.secretPath === '/'));
      t.same(all.map((r) => keysOf(r)[0]), Object.keys(INVENTORY));
      const n0 = all.length;
      await svc.secrets.createMany(SYSTEM, { ...where, secrets: [{ key: 'B1', value: 'v-b1' }, { key: 'B2', value: 'v-b2' }] });
      await svc.secrets.update(SYSTEM, { ...where, key: 'B1', value: 'v-b1-2' });
      await svc.secrets.update(SYSTEM, { ...where, key: 'B2', newKey: 'B3' });
      await svc.secrets.remove(SYSTEM, { ...where, key: 'B3' });
      // Refused writes add nothing.
      await t.rejects(svc.secrets.create(SYSTEM, { ...where, key: 'B1', value: 'dup' }));
      await t.rejects(svc.secrets.remove(SYSTEM, { ...where, key: 'NOPE' }));
      await svc.folders.create(SYSTEM, { project: { id: pid }, environment: 'prod', parentPath: '/', name: 'apps' });
      await svc.secrets.create(SYSTEM, { ...where, secretPath: '/apps', key: 'APP', value: 'v-app' });
      await svc.folders.rename(SYSTEM, { project: { id: pid }, environment: 'prod', path: '/', folder: 'apps', name: 'svc' });
      all = await rows();
      t.same(
        all.slice(n0).map((r) => [r.id, r.type, r.secretPath, keysOf(r)]),
        [
          [n0 + 1, 'secret:create', '/', ['B1', 'B2']],
          [n0 + 2, 'secret:update', '/', ['B1']],
          [n0 + 3, 'secret:update', '/', ['B2', 'B3']],
          [n0 + 4, 'secret:delete', '/', ['B3']],
          [n0 + 5, 'secret:create', '/apps', ['APP']],
          [n0 + 6, 'secret:delete', '/apps', ['APP']],
          [n0 + 7, 'secret:create', '/svc', ['APP']],
        ],
      );
      const text = JSON.stringify(await sql`select * from events`);
      for (const v of [...Object.values(INVENTORY), 'v-b1', 'v-b1-2', 'v-app']) t.notOk(text.includes(v), 'no value in the table');
    });

    await t.test('a change in an imported folder tells every folder importing it (import-mutation), transitively', async (t) => {
      const project = { id: pid };
      await svc.folders.create(SYSTEM, { project, environment: 'dev', parentPath: '/', name: 'base' });
      const i1 = await svc.secretImports.create(SYSTEM, { project, environment: 'staging', path: '/', import: { environment: 'dev', path: '/base' } });
      const i2 = await svc.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/' } });
      const sub = await Subscriber.open(urlB, token, { projectId: pid, register: [{ event: 'secret:import-mutation', conditions: { environmentSlug: 'prod', secretPath: '/' } }] });
      t.teardown(() => sub.close());
      const n0 = (await rows()).at(-1)!.id;
      await svc.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/base', key: 'BASE_KEY', value: 'v-base' });
      t.same(
        (await rows()).filter((r) => r.id > n0).map((r) => [r.type, r.environment, r.secretPath, keysOf(r)]),
        [
          ['secret:create', 'dev', '/base', ['BASE_KEY']],
          ['secret:import-mutation', 'prod', '/', []],
          ['secret:import-mutation', 'staging', '/', []],
        ],
      );
      const f = await sub.next();
      t.same([f.event, f.data.data.payload], ['secret:import-mutation', { environment: 'prod', secretPath: '/' }]);
      // A folder nothing imports gives no import-mutation.
      const n1 = (await rows()).at(-1)!.id;
      await svc.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'NOT_IMPORTED', value: 'x' });
      t.same((await rows()).filter((r) => r.id > n1).map((r) => r.type), ['secret:create']);
      await svc.secretImports.remove(SYSTEM, { project, environment: 'prod', path: '/', id: i2.id });
      await svc.secretImports.remove(SYSTEM, { project, environment: 'staging', path: '/', id: i1.id });
    });

    await t.test('a write acknowledged on one replica reaches a subscriber of the other', async (t) => {
      const sub = await Subscriber.open(urlB, token, { projectId: pid, register: ALL });
      t.teardown(() => sub.close());
      t.equal(sub.status, 200);
      t.match(sub.headers, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
      const before = (await rows()).at(-1)!.id;
      await svc.secrets.create(SYSTEM, { ...where, key: 'LIVE1', value: 'x-live-1' });
      await svc.secrets.update(SYSTEM, { ...where, key: 'LIVE1', value: 'x-live-2' });
      const a = await sub.next();
      const b = await sub.next();
      t.same([a.id, a.event], [String(before + 1), 'secret:create']);
      t.same(a.data, { type: 'secret-manager', data: { eventType: 'secret:create', payload: [{ environment: 'prod', secretPath: '/', secretKey: 'LIVE1', secretKeys: 'LIVE1' }] } });
      t.same([b.id, b.event], [String(before + 2), 'secret:update']);
      t.notOk(sub.body.includes('x-live'), 'no value on the wire');
    });

    await t.test('Last-Event-ID replays exactly the missed ids; too far ahead: resync', async (t) => {
      const last = (await rows()).at(-1)!.id;
      const sub = await Subscriber.open(urlB, token, { projectId: pid, register: ALL }, String(last - 3));
      t.teardown(() => sub.close());
      const got = [await sub.next(), await sub.next(), await sub.next()].map((f) => Number(f.id));
      t.same(got, [last - 2, last - 1, last]);
      await svc.secrets.remove(SYSTEM, { ...where, key: 'LIVE1' });
      t.same(Number((await sub.next()).id), last + 1, 'then live, nothing twice');
      const ahead = await Subscriber.open(urlB, token, { projectId: pid, register: ALL }, '999999');
      t.teardown(() => ahead.close());
      t.equal((await ahead.next()).event, 'resync');
    });

    await t.test('a subscriber scoped to one path never sees another path\'s keys', async (t) => {
      const sub = await Subscriber.open(urlB, token, { projectId: pid, register: [{ event: 'secret:create', conditions: { environmentSlug: 'prod', secretPath: '/svc' } }] });
      t.teardown(() => sub.close());
      await svc.secrets.create(SYSTEM, { ...where, key: 'ROOT_ONLY', value: 'r' });
      await svc.secrets.create(SYSTEM, { ...where, secretPath: '/svc', key: 'SVC_ONLY', value: 's' });
      const f = await sub.next();
      t.same(f.data.data.payload.map((p: any) => p.secretKey), ['SVC_ONLY']);
      t.notOk(sub.body.includes('ROOT_ONLY'));
    });

    await t.test('bad input is a 4xx; caps give 429', async (t) => {
      for (const body of [{ projectId: pid, register: [] }, { projectId: pid, register: [{ event: 'secret:nope' }] }, { projectId: pid }, { projectId: pid, register: ALL, extra: 1 }]) {
        const s = await Subscriber.open(urlB, token, body);
        t.equal(s.status, 422, JSON.stringify(body));
        s.close();
      }
      const bad = await Subscriber.open(urlB, token, { projectId: pid, register: ALL }, 'abc');
      t.equal(bad.status, 400);
      bad.close();
      const open = [];
      for (let i = 0; i < 3; i++) open.push(await Subscriber.open(urlB, token, { projectId: pid, register: ALL }));
      const over = await Subscriber.open(urlB, token, { projectId: pid, register: ALL });
      t.equal(over.status, 429);
      over.close();
      for (const s of open) s.close();
    });

    await t.test('a subscriber whose membership is removed is cut off with an error event', async (t) => {
      const sub = await Subscriber.open(urlB, token, { projectId: pid, register: ALL });
      t.teardown(() => sub.close());
      await svc.memberships.remove(SYSTEM, { project: { id: pid }, member: { kind: 'identity', id: seeded.identityId } });
      const frames = await sub.untilEnded();
      t.equal(frames.at(-1)?.event, 'error');
      t.ok(sub.ended);
    });

    await t.test('shutdown ends open streams', async (t) => {
      await svc.memberships.upsertIdentity(SYSTEM, { project: { id: pid }, identityId: seeded.identityId, role: 'admin' });
      // The embedded database admits one process: there, the replica itself shuts down (last test).
      const own = backend === 'embedded' ? A : await startTestService(t, env);
      const sub = await Subscriber.open(own.url, token, { projectId: pid, register: ALL });
      t.equal(sub.status, 200);
      await sub.next(5000).catch(() => undefined);
      const done = sub.untilEnded();
      await own.shutdown(5000);
      await done;
      t.ok(sub.ended);
    });
  });
}

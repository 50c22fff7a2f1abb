// The read-through cache never keeps a value loaded across an invalidation, and the
// Redis bus carries invalidations between replicas.
import { Redis } from 'ioredis';
import t from 'tap';
import { ReadThroughCache, memoryBus, redisBus } from '../../storage/cache.js';
import { REDIS_URL } from '../helpers/db.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

t.test('concurrent gets share one load', async (t) => {
  const c = new ReadThroughCache<number>();
  let loads = 0;
  const d = deferred<number>();
  const load = () => (loads++, d.promise);
  const both = Promise.all([c.get('k', load), c.get('k', load)]);
  d.resolve(7);
  t.same(await both, [7, 7]);
  t.equal(loads, 1);
  t.equal(await c.get('k', async () => 99), 7, 'served from cache');
});

t.test('a load that raced an invalidation is returned but not stored', async (t) => {
  const c = new ReadThroughCache<string>();
  const d = deferred<string>();
  const p = c.get('k', () => d.promise);
  c.invalidate('k');
  d.resolve('stale');
  t.equal(await p, 'stale');
  t.equal(await c.get('k', async () => 'fresh'), 'fresh', 'the stale value was not kept');
});

t.test('invalidateWhere also stops loads in flight from storing', async (t) => {
  const c = new ReadThroughCache<string>();
  const d = deferred<string>();
  const p = c.get('env1:f:/', () => d.promise);
  c.invalidateWhere((k) => k.startsWith('env1:'));
  d.resolve('stale');
  await p;
  t.equal(await c.get('env1:f:/', async () => 'fresh'), 'fresh');
});

t.test('bounded: the oldest entry goes first', async (t) => {
  const c = new ReadThroughCache<number>(2);
  await c.get('a', async () => 1);
  await c.get('b', async () => 2);
  await c.get('c', async () => 3);
  t.equal(c.size, 2);
  t.equal(await c.get('a', async () => 10), 10, 'a was evicted');
});

t.test('memory bus delivers to local subscribers', async (t) => {
  const bus = memoryBus();
  const seen: string[] = [];
  bus.subscribe((topic, key) => seen.push(`${topic}/${key}`));
  await bus.publish('membership', 'p:identity:i');
  t.same(seen, ['membership/p:identity:i']);
});

t.test('redis bus carries an invalidation to another replica', async (t) => {
  const namespace = `test-${Math.random()}`;
  const a = await redisBus(REDIS_URL, { namespace });
  const b = await redisBus(REDIS_URL, { namespace });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const arrived = new Promise<string>((resolve) => b.subscribe((topic, key) => topic === 'test-topic' && resolve(key)));
  const local: string[] = [];
  a.subscribe((topic, key) => topic === 'test-topic' && local.push(key));
  const key = `k-${Math.random()}`;
  await a.publish('test-topic', key);
  t.equal(await arrived, key, 'replica b heard it');
  t.same(local, [key], 'replica a applied it locally exactly once');
});

t.test('redis bus: publish resolves only after every other replica applied it', async (t) => {
  const namespace = `test-${Math.random()}`;
  const replicas = await Promise.all([0, 1, 2].map(() => redisBus(REDIS_URL, { namespace })));
  t.teardown(async () => {
    for (const r of replicas) await r.close();
  });
  const applied = replicas.map(() => [] as string[]);
  replicas.forEach((r, i) => r.subscribe((topic, key) => topic === 'role' && applied[i]!.push(key)));
  for (let n = 0; n < 20; n++) {
    const key = `k${n}`;
    await replicas[n % 3]!.publish('role', key);
    // No waiting here: when publish() returned, every replica must already have it.
    t.same(applied.map((a) => a.at(-1)), [key, key, key], `invalidation ${n} applied everywhere before publish resolved`);
  }
});

t.test('redis bus: installations sharing a Redis do not hear each other', async (t) => {
  const a = await redisBus(REDIS_URL, { namespace: `one-${Math.random()}` });
  const b = await redisBus(REDIS_URL, { namespace: `two-${Math.random()}` });
  const c = await redisBus(REDIS_URL, { namespace: 'three' + Math.random() });
  t.teardown(async () => {
    for (const r of [a, b, c]) await r.close();
  });
  const heard: string[] = [];
  b.subscribe((_topic, key) => heard.push(key));
  await a.publish('role', 'x');
  // A round trip through b's own namespace proves b's subscriber has caught up.
  await b.publish('role', 'own');
  t.same(heard, ['own']);
});

t.test('redis bus: a replica that never confirms delays publish by the timeout only', async (t) => {
  const namespace = `test-${Math.random()}`;
  const logs: string[] = [];
  const a = await redisBus(REDIS_URL, { namespace, ackTimeoutMs: 200, log: (m) => logs.push(m) });
  // A subscriber that hears invalidations but never answers (a hung replica).
  const mute = new Redis(REDIS_URL);
  await mute.subscribe(`vault-standalone:${namespace}:invalidate`);
  t.teardown(async () => {
    mute.disconnect();
    await a.close();
  });
  await a.publish('role', 'k');
  t.match(logs, [/1 of 1 replicas did not confirm an invalidation within 200 ms/]);
});

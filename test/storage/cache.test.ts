// The read-through cache never keeps a value loaded across an invalidation, and the
// Redis bus carries invalidations between replicas.
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
  const a = await redisBus(REDIS_URL);
  const b = await redisBus(REDIS_URL);
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

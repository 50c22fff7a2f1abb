// The read-through cache never keeps a value loaded across an invalidation, and the
// Redis bus carries invalidations between replicas; while a replica cannot hear Redis
// its caches are bypassed, and writes still go through.
import { Redis } from 'ioredis';
import t from 'tap';
import { ACK_TIMEOUT_MS, HEARTBEAT_MS, ReadThroughCache, STALE_AFTER_MS, estimateBytes, memoryBus, redisBus } from '../../storage/cache.js';
import { REDIS_URL } from '../helpers/db.js';
import { CuttableProxy, TestRedis, freePort, linkIs, testRedis } from '../helpers/redis.js';

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

t.test('bound to a feed, a cache is bypassed while the feed is not live and forgets older epochs', async (t) => {
  const feed = { live: true, epoch: 0 };
  const c = new ReadThroughCache<number>(10, 60_000, feed);
  t.equal(await c.get('k', async () => 1), 1);
  t.equal(await c.get('k', async () => 2), 1, 'cached while live');
  feed.live = false;
  feed.epoch++;
  t.equal(await c.get('k', async () => 3), 3, 'not served from the cache while not live');
  t.equal(await c.get('k', async () => 4), 4, 'and nothing was stored meanwhile');
  feed.live = true;
  feed.epoch++;
  t.equal(await c.get('k', async () => 5), 5, 'the entry from before the outage is gone');
  t.equal(await c.get('k', async () => 6), 5, 'caching again');

  const d = deferred<string>();
  const s = new ReadThroughCache<string>(10, 60_000, feed);
  const p = s.get('x', () => d.promise);
  feed.epoch++; // the link dropped and came back while the load was in flight
  d.resolve('loaded before');
  t.equal(await p, 'loaded before');
  t.equal(await s.get('x', async () => 'fresh'), 'fresh', 'a load that spanned an epoch change was not stored');
});

t.test('redis bus: Redis killed; publish still resolves, links drop and come back', async (t) => {
  const redis = await testRedis(t);
  const namespace = `test-${Math.random()}`;
  const logs: string[] = [];
  const flushAsked = deferred<void>();
  const log = (m: string) => (logs.push(m), /asked every replica to flush/.test(m) && flushAsked.resolve());
  const a = await redisBus(redis.url, { namespace, log });
  const b = await redisBus(redis.url, { namespace });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const heardByB: string[] = [];
  b.subscribe((topic, key) => topic === 'role' && heardByB.push(key));
  const appliedOnA: string[] = [];
  a.subscribe((topic, key) => topic === 'role' && appliedOnA.push(key));
  t.ok(a.live && b.live, 'both subscribed after start');

  const epochB = b.epoch;
  await redis.stop();
  await Promise.all([linkIs(a, false), linkIs(b, false)]);
  t.not(b.epoch, epochB, 'dropping the link starts a new epoch (every cache bound to it forgets)');
  await a.publish('role', 'while-down');
  t.same(appliedOnA, ['while-down'], 'applied locally even though Redis is gone');
  t.match(logs, [/redis: invalidation link lost/, /could not send an invalidation to the other replicas \(not connected\); the change stands/]);
  t.notOk(logs.some((l) => l.includes('while-down')), 'keys are not logged');

  await redis.start();
  await Promise.all([linkIs(a, true), linkIs(b, true), flushAsked.promise]);
  await a.publish('role', 'after');
  t.same(heardByB, ['after'], 'b is subscribed again and confirmed the next invalidation');
});

t.test('redis bus: a publisher cut off alone asks every replica to flush once it is back', async (t) => {
  const redis = await testRedis(t);
  const proxy = await CuttableProxy.open(t, redis.port);
  const namespace = `test-${Math.random()}`;
  const logs: string[] = [];
  const flushAsked = deferred<void>();
  const log = (m: string) => (logs.push(m), /asked every replica to flush/.test(m) && flushAsked.resolve());
  const a = await redisBus(proxy.url, { namespace, log });
  const b = await redisBus(redis.url, { namespace });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const heardByB: string[] = [];
  b.subscribe((_topic, key) => heardByB.push(key));

  proxy.cut();
  await linkIs(a, false);
  t.ok(b.live, 'b still hears Redis');
  await a.publish('role', 'unsent');
  const flushed = new Promise<void>((resolve) => b.onReset(resolve));
  proxy.restore();
  await flushed;
  t.ok(b.live, 'b flushed on request, not because its own link dropped');
  await flushAsked.promise;
  t.same(heardByB, [], 'the invalidation itself never reached b: the flush stands for it');
  t.match(logs.filter((l) => !/link back/.test(l)), [/invalidation link lost/, /could not send an invalidation/, /asked every replica to flush its caches \(1 invalidation\(s\) could not be sent\)/]);
});

t.test('redis bus: a hung Redis is noticed by the heartbeat and publish does not hang', async (t) => {
  const redis = await testRedis(t);
  const namespace = `test-${Math.random()}`;
  const opts = { namespace, heartbeatMs: 100, ackTimeoutMs: 300 };
  const flushAsked = deferred<void>();
  const a = await redisBus(redis.url, { ...opts, log: (m) => /asked every replica to flush/.test(m) && flushAsked.resolve() });
  const b = await redisBus(redis.url, opts);
  t.teardown(async () => {
    redis.thaw();
    await a.close();
    await b.close();
  });
  const heardByB: string[] = [];
  b.subscribe((_topic, key) => heardByB.push(key));
  redis.freeze();
  await Promise.all([linkIs(a, false), linkIs(b, false)]);
  await a.publish('role', 'frozen'); // resolves: PUBLISH's answer is waited for ackTimeoutMs at most
  redis.thaw();
  // The heartbeat finds Redis answering again and sends the flush that stands for 'frozen'.
  await Promise.all([linkIs(a, true), linkIs(b, true), flushAsked.promise]);
  // The PUBLISH sent while frozen may arrive late; what matters is the bus works again.
  await a.publish('role', 'thawed');
  t.equal(heardByB.at(-1), 'thawed');
});

t.test('redis bus: start-up waits with backoff for a Redis that comes up later', async (t) => {
  const redis = new TestRedis(await freePort());
  t.teardown(() => redis.stop());
  const waiting = deferred<string>();
  const starting = redisBus(redis.url, { namespace: `test-${Math.random()}`, waitMs: 60_000, log: (m) => waiting.resolve(m) });
  t.match(await waiting.promise, /^redis not reachable yet \(ECONNREFUSED\); retrying in 250 ms$/);
  await redis.start();
  const bus = await starting;
  t.teardown(() => bus.close());
  t.ok(bus.live, 'subscribed once Redis is up');
});

t.test('redis bus: start-up gives up after the wait, naming the failure', async (t) => {
  const url = `redis://127.0.0.1:${await freePort()}`;
  const retries: string[] = [];
  await t.rejects(redisBus(url, { waitMs: 1_000, log: (m) => retries.push(m) }), /redis unreachable after 1 s: ECONNREFUSED/);
  t.match(retries, [/retrying in 250 ms/, /retrying in 500 ms/]);
});

t.test('redis bus: fail closed within the bound on a hung Redis; an unconfirmed write waits past it', async (t) => {
  const redis = await testRedis(t);
  const namespace = `test-${Math.random()}`;
  const a = await redisBus(redis.url, { namespace });
  const b = await redisBus(redis.url, { namespace });
  t.teardown(async () => {
    redis.thaw();
    await a.close();
    await b.close();
  });
  t.ok(b.live);
  // b's last confirmed PING was sent before the freeze: it is not live 1 s later at most.
  const frozenAt = performance.now();
  redis.freeze();
  await a.publish('role', 'k').then(() => {
    const took = performance.now() - frozenAt;
    t.ok(took >= ACK_TIMEOUT_MS - 5, `the write waited ${took.toFixed(0)} ms (>= ${ACK_TIMEOUT_MS})`);
  });
  t.notOk(b.live, 'b is no longer live when the write is answered');
  t.ok(ACK_TIMEOUT_MS > STALE_AFTER_MS + HEARTBEAT_MS, 'the ack wait covers the bound and one heartbeat');
  redis.thaw();
  await Promise.all([linkIs(a, true), linkIs(b, true)]);
  t.ok(b.live, 'live again once Redis answers');
});

t.test('peek answers only what get would serve from the cache, without a promise', async (t) => {
  const feed = { live: true, epoch: 0 };
  const c = new ReadThroughCache<number>(10, 60_000, feed);
  t.equal(c.peek('k'), undefined, 'nothing held before a load');
  const d = deferred<number>();
  const p = c.get('k', () => d.promise);
  t.equal(c.peek('k'), undefined, 'nor while the load is in flight');
  d.resolve(1);
  await p;
  const hits = c.counts.hits;
  t.equal(c.peek('k'), 1, 'held once loaded');
  t.equal(c.counts.hits, hits + 1, 'and counted as a hit');
  c.invalidate('k');
  t.equal(c.peek('k'), undefined, 'gone once invalidated');
  await c.get('k', async () => 2);
  feed.live = false;
  t.equal(c.peek('k'), undefined, 'not served while the feed is not live');
  feed.live = true;
  feed.epoch++;
  t.equal(c.peek('k'), undefined, 'nor after the link dropped and came back');
  t.equal(await c.get('k', async () => 3), 3, 'get loads afresh then');
  t.equal(c.peek('k'), 3);

  const expired = new ReadThroughCache<number>(10, 0);
  await expired.get('k', async () => 1);
  t.equal(expired.peek('k'), undefined, 'an entry whose time is up is not served');
});

t.test('sweep drops expired entries; values refused by keep are never stored', async (t) => {
  const c = new ReadThroughCache<number | null>(100, 1_000, undefined, (v) => v !== null);
  await c.get('a', async () => 1);
  await c.get('b', async () => 2);
  t.equal(c.size, 2);
  t.equal(c.sweep(Date.now()), 0, 'nothing expired yet');
  t.equal(c.sweep(Date.now() + 1_001), 2, 'both expired entries swept');
  t.equal(c.size, 0);
  t.equal(await c.get('revoked', async () => null), null);
  t.equal(c.size, 0, 'a null (revoked token) is not cached');
  t.equal(await c.get('revoked', async () => 3), 3, 'and is loaded afresh');
});

t.test('the least recently loaded entry is evicted at the bound', async (t) => {
  const c = new ReadThroughCache<number>(2, 60_000);
  await c.get('a', async () => 1);
  await c.get('b', async () => 2);
  await c.get('c', async () => 3);
  t.equal(c.size, 2);
  t.equal(await c.get('a', async () => 10), 10, 'a was evicted');
  t.equal(await c.get('c', async () => 30), 3, 'c stayed');
});

t.test('invalidations of keys nobody is loading leave nothing behind; a racing load is still not stored', async (t) => {
  const c = new ReadThroughCache<string>(10, 60_000);
  for (let i = 0; i < 1_000; i++) c.invalidate(`revoked-${i}`);
  t.equal(c.trackedKeys, 0, 'no generation kept for 1,000 revoked token ids');
  const d = deferred<string>();
  const p = c.get('k', () => d.promise);
  c.invalidate('k');
  t.equal(c.trackedKeys, 1, 'a generation while its load runs');
  d.resolve('old');
  t.equal(await p, 'old');
  t.equal(c.trackedKeys, 0, 'dropped once the load settled');
  t.equal(await c.get('k', async () => 'new'), 'new', 'the racing load was not stored');
});

t.test('bounded by bytes: filling past the bound evicts the least recently used and keeps bytes within it', async (t) => {
  const c = new ReadThroughCache<string>({ maxEntries: 1_000, maxBytes: 10_000, sizeOf: (_k, v) => (v as string).length }, 60_000);
  for (let i = 0; i < 9; i++) await c.get(`k${i}`, async () => 'x'.repeat(1_000));
  t.equal(c.bytes, 9_000, 'nine entries of 1,000 bytes');
  t.equal(await c.get('k0', async () => 'reloaded'), 'x'.repeat(1_000), 'k0 used again: the most recently used now');
  t.equal(c.peek('k1'), 'x'.repeat(1_000), 'k1 used again too (peek)');
  for (let i = 9; i < 30; i++) {
    await c.get(`k${i}`, async () => 'y'.repeat(1_500));
    t.ok(c.bytes <= 10_000, `bytes within the bound after entry ${i} (${c.bytes})`);
  }
  t.equal(c.bytes, 9_000, 'six entries of 1,500 bytes');
  t.equal(c.size, 6);
  t.ok(c.counts.evicted > 0, 'evictions counted');
  t.equal(await c.get('k29', async () => 'z'), 'y'.repeat(1_500), 'the newest stayed');
  t.equal(await c.get('k2', async () => 'z'), 'z', 'the least recently used left first');

  const before = c.bytes;
  t.equal(await c.get('huge', async () => 'h'.repeat(20_000)), 'h'.repeat(20_000), 'an entry larger than the bound is answered');
  t.equal(c.bytes, before, 'and not stored (nothing evicted for it)');
  t.equal(c.counts.tooLarge, 1);
  c.invalidate('k29');
  t.equal(c.bytes, before - 1_500, 'an invalidation gives its bytes back');
  const held = c.size;
  t.equal(c.sweep(Date.now() + 60_001), held, 'a sweep after the TTL drops every entry');
  t.equal(c.bytes, 0, 'a sweep of everything leaves 0 bytes');
  await c.get('a', async () => 'abc');
  c.clear();
  t.equal(c.bytes, 0, 'clear leaves 0 bytes');
});

t.test('the default estimate counts what an entry holds', async (t) => {
  t.ok(estimateBytes('x'.repeat(10_000)) >= 10_000, 'a string: at least its characters');
  t.ok(estimateBytes('ж'.repeat(10_000)) >= 20_000, 'a two-byte string (beyond Latin-1): two bytes a character');
  t.ok(estimateBytes(Buffer.alloc(50_000)) >= 50_000, 'a buffer: at least its bytes');
  const rows = Array.from({ length: 2_000 }, (_, i) => ({ id: `id-${i}`, key: `KEY_${i}`, version: i, value: Buffer.alloc(100) }));
  const n = estimateBytes({ folders: [{ id: 'f', path: '/' }], rows });
  t.ok(n >= 2_000 * 100 && n < 2_000 * 1_000, `2,000 rows of 100-byte blobs: ${n} bytes`);
  const cyclic: Record<string, unknown> = { a: 'x'.repeat(100) };
  cyclic.self = cyclic;
  t.ok(estimateBytes(cyclic) < 1_000, 'a cycle is counted once');
  const c = new ReadThroughCache<unknown>({ maxBytes: 300_000 }, 60_000);
  for (let i = 0; i < 10; i++) await c.get(`folder-${i}`, async () => ({ rows: rows.slice(0, 500) }));
  t.ok(c.bytes <= 300_000 && c.size < 10, `folders of 500 rows fill the bound: ${c.size} held, ${c.bytes} bytes`);
});

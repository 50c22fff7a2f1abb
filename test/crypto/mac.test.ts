// The keyed hash of machine client secrets.
import t from 'tap';
import { Piscina } from 'piscina';
import { codeOf, cryptoFor } from './fixtures.js';

t.test('mac is deterministic per data key and differs across keys and messages', async (t) => {
  const c = await cryptoFor(t);
  const k1 = await c.generateDataKey('system');
  const k2 = await c.generateDataKey('system');
  const m1 = await c.mac(k1, 'system', 'client-secret');
  t.equal(m1.length, 32);
  t.same(await c.mac(k1, 'system', 'client-secret'), m1);
  t.notSame(await c.mac(k2, 'system', 'client-secret'), m1);
  t.notSame(await c.mac(k1, 'system', 'client-secreT'), m1);
});

t.test('mac survives a restart (same key, new pool)', async (t) => {
  const a = await cryptoFor(t);
  const k = await a.generateDataKey('system');
  const m = await a.mac(k, 'system', 'x');
  const b = await cryptoFor(t);
  t.same(await b.mac(k, 'system', 'x'), m);
});

t.test('macMany: the same MACs as one by one, in a single worker task', async (t) => {
  const c = await cryptoFor(t);
  const k = await c.generateDataKey('system');
  const messages = ['a', 'b', '', 'a'];
  const one = await Promise.all(messages.map((m) => c.mac(k, 'system', m)));
  const run = Piscina.prototype.run;
  let tasks = 0;
  Piscina.prototype.run = function (this: Piscina, ...args: Parameters<Piscina['run']>) {
    tasks++;
    return run.apply(this, args);
  };
  let many: Buffer[];
  try {
    many = await c.macMany(k, 'system', messages);
  } finally {
    Piscina.prototype.run = run;
  }
  t.equal(tasks, 1, 'one task');
  t.same(many, one);
  t.same(await c.macMany(k, 'system', []), [], 'nothing to MAC: nothing');
  t.equal(await codeOf(t, c.macMany(k, 'system', ['a', 1 as unknown as string])), 'BAD_TASK', 'only strings');
});

t.test('macChain: each link MACed over the hex of the MAC before it, in one task; final gets the last link\'s prev', async (t) => {
  const c = await cryptoFor(t);
  const k = await c.generateDataKey('system');
  const start = Buffer.alloc(32, 7);
  const links: Array<[string, string]> = [
    ['["e",1,"', '","x"]'],
    ['["e",2,"', '","ü ✓"]'],
    ['', ''],
  ];
  // One link at a time with mac(), as the fallback does.
  const expected: Buffer[] = [];
  let prev: Buffer = start;
  let lastPrev: Buffer = start;
  for (const [before, after] of links) {
    lastPrev = prev;
    prev = await c.mac(k, 'system', before + prev.toString('hex') + after);
    expected.push(prev);
  }
  const run = Piscina.prototype.run;
  let tasks = 0;
  Piscina.prototype.run = function (this: Piscina, ...args: Parameters<Piscina['run']>) {
    tasks++;
    return run.apply(this, args);
  };
  let chained: Awaited<ReturnType<typeof c.macChain>>;
  try {
    chained = await c.macChain(k, 'system', { start, links, final: ['["h",', ']'], extra: ['p', 'q'] });
  } finally {
    Piscina.prototype.run = run;
  }
  t.equal(tasks, 1, 'one task');
  t.same(chained.links, expected);
  t.same(chained.final, await c.mac(k, 'system', '["h",' + lastPrev.toString('hex') + ']'));
  t.same(chained.extra, await c.macMany(k, 'system', ['p', 'q']));
  const other = await c.generateDataKey('system');
  t.notSame((await c.macChain(other, 'system', { start, links, final: ['', ''], extra: [] })).links, expected, 'per key');
  t.equal(await codeOf(t, c.macChain(k, 'system', { start, links: [['a', 1 as unknown as string]], final: ['', ''], extra: [] })), 'BAD_TASK');
  t.equal(await codeOf(t, c.macChain(k, 'system', { start, links, final: ['x'] as unknown as [string, string], extra: [] })), 'BAD_TASK');
});

/** Counts the pool's tasks while `body` runs. */
async function countingTasks<T>(body: () => Promise<T>): Promise<{ value: T; tasks: number }> {
  const run = Piscina.prototype.run;
  let tasks = 0;
  Piscina.prototype.run = function (this: Piscina, ...args: Parameters<Piscina['run']>) {
    tasks++;
    return run.apply(this, args);
  };
  try {
    return { value: await body(), tasks };
  } finally {
    Piscina.prototype.run = run;
  }
}

t.test('macs asked while one under their key is out go to the worker together, each with its own answer', async (t) => {
  const c = await cryptoFor(t);
  const k1 = await c.generateDataKey('system');
  const k2 = await c.generateDataKey('system');
  const messages = Array.from({ length: 40 }, (_, i) => `client-secret-${i}`);
  const expected1 = await c.macMany(k1, 'system', messages);
  const expected2 = await c.macMany(k2, 'system', messages);

  const lone = await countingTasks(() => c.mac(k1, 'system', messages[3]!));
  t.equal(lone.tasks, 1, 'a lone mac is sent at once');
  t.same(lone.value, expected1[3]);

  const burst = await countingTasks(() =>
    Promise.all(messages.flatMap((m) => [c.mac(k1, 'system', m), c.mac(k2, 'system', m)])),
  );
  t.same(
    burst.value.filter((_, n) => n % 2 === 0),
    expected1,
    'each caller gets the MAC of its own message under its own key',
  );
  t.same(
    burst.value.filter((_, n) => n % 2 === 1),
    expected2,
  );
  t.equal(burst.tasks, 4, '80 macs under two keys: per key one sent at once, the rest together');
});

t.test('a batch shares its failure; another key\'s batch and a malformed call do not', async (t) => {
  const c = await cryptoFor(t);
  const good = await c.generateDataKey('system');
  const broken = Buffer.from(good);
  broken[broken.length - 1]! ^= 1;
  const right = await c.macMany(good, 'system', ['x', 'y']);
  const outcomes = await Promise.allSettled([
    c.mac(broken, 'system', 'a'),
    c.mac(good, 'system', 'x'),
    c.mac(broken, 'system', 'b'),
    c.mac(broken, 'system', 'c'),
    c.mac(good, 'system', 1 as unknown as string),
    c.mac(good, 'system', 'y'),
  ]);
  const codes = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'ok'));
  t.same(codes, ['UNWRAP_FAILED', 'ok', 'UNWRAP_FAILED', 'UNWRAP_FAILED', 'BAD_TASK', 'ok']);
  t.same(
    [outcomes[1], outcomes[5]].map((o) => (o as PromiseFulfilledResult<Buffer>).value),
    right,
  );
  t.same(await c.mac(good, 'system', 'x'), right[0], 'the key\'s next batch is sent as usual');
});

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

// The keyed hash of machine client secrets.
import t from 'tap';
import { cryptoFor } from './fixtures.js';

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

// Where key material is and is not: workers start with an empty environment and no
// workerData (piscina would keep it for the pool's life), one task at a time each;
// the worker module on the main thread holds no key and refuses to take one.
// (That the main thread's heap holds no key after start-up: mainHeap.test.ts.)
import t from 'tap';
import { poolOptions } from '../../crypto/index.js';
import handle from '../../crypto/worker.js';
import { KEY_A } from './fixtures.js';

t.test('pool settings: no workerData, empty env, fixed size, never idle-reaped, one task per worker', async (t) => {
  const o = poolOptions(3);
  t.notOk('workerData' in o, 'no workerData');
  t.same(o.env, {});
  t.equal(o.minThreads, 3);
  t.equal(o.maxThreads, 3);
  t.equal(o.idleTimeout, Infinity);
  t.equal(o.concurrentTasksPerWorker, 1);
});

t.test('the worker module on the main thread holds no key and does nothing', async (t) => {
  t.same(await handle({ op: 'generateDataKey', keyAad: 'x' }), { ok: false, code: 'KEY_UNAVAILABLE' });
});

t.test('the worker module on the main thread refuses keys, and zeroes the bytes it was handed', async (t) => {
  const keys = new Uint8Array(Buffer.from(KEY_A, 'hex'));
  const taken = new Int32Array(new SharedArrayBuffer(8));
  const init = { op: 'init', keys, roots: [{ provider: 'local', version: 1, secret: [0, 16] }], currentVersion: 1, taken, workers: 1 };
  t.same(await handle(init), { ok: false, code: 'BAD_TASK' });
  t.ok(keys.every((b) => b === 0), 'bytes zeroed');
  t.equal(Atomics.load(taken, 0), 0, 'not counted as a keyed worker');
  t.same(await handle({ op: 'generateDataKey', keyAad: 'x' }), { ok: false, code: 'KEY_UNAVAILABLE' });
});

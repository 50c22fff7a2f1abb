// Where key material is and is not: workers start with an empty environment, no node
// options (a module preloaded into the main thread does not run in them) and no
// workerData (piscina would keep it for the pool's life), one task at a time each;
// the worker module on the main thread holds no key and refuses to take one.
// (That the main thread's heap holds no key after start-up: mainHeap.test.ts.)
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { poolOptions } from '../../crypto/index.js';
import { nodeCommand } from '../helpers/process.js';
import handle from '../../crypto/worker.js';
import { KEY_A } from './fixtures.js';

t.test('pool settings: no workerData, empty env, fixed size, never idle-reaped, one task per worker', async (t) => {
  const o = poolOptions(3);
  t.notOk('workerData' in o, 'no workerData');
  t.same(o.env, {});
  // Built, workers get no node options; straight from TypeScript they inherit the loader.
  t.same(o.execArgv, import.meta.url.endsWith('.ts') ? undefined : [], 'no inherited node options');
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

t.test('a module preloaded into the main thread (--import) does not run in the crypto workers', async (t) => {
  const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url));
  const child = spawn(...nodeCommand(['--import', pathToFileURL(fixture('preloadMarker')).href, fixture('twoWorkers')]), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  t.equal(code, 0, stderr);
  t.same(stdout.trim().split('\n').sort(), ['done', 'preloaded on the main thread'], 'ran once, on the main thread only');
});

// patches/piscina+5.3.2.patch is applied: a worker's `interface` (asked for every task)
// is one object per worker, whose getters read the worker's live state.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t from 'tap';

const require = createRequire(import.meta.url);

t.test('a piscina worker hands out one interface object, reading its live state', async (t) => {
  // Not exported by the package: loaded by path, beside its main module (dist/index.js).
  const { WorkerInfo } = require(join(dirname(require.resolve('piscina')), 'worker_pool', 'index.js')) as { WorkerInfo: { prototype: object } };
  const get = Object.getOwnPropertyDescriptor(WorkerInfo.prototype, 'interface')!.get!;
  const worker = { worker: { threadId: 7 }, terminating: false, currentUsage: () => 3, isRunningAbortableTask: () => false } as Record<string, unknown>;
  const first = get.call(worker) as { id: number; currentUsage: number; terminating: boolean };
  t.equal(get.call(worker), first, 'the same object on every call');
  t.equal(first.id, 7);
  t.equal(first.currentUsage, 3);
  worker.currentUsage = () => 5;
  worker.terminating = true;
  t.equal(first.currentUsage, 5, 'its getters read the state as it is now');
  t.equal(first.terminating, true);
});

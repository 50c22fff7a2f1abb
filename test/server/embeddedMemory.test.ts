// The embedded default keeps V8's young generation at its initial size: loading the
// service used to grow it to 32 MB (16 MB semi-spaces), resident for the process's life.
// Under load only npm start's --max-semi-space-size keeps it small.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import { npmStartNodeFlags } from '../../bench/process.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

const FIXTURE = pathToFileURL(fileURLToPath(new URL('./fixtures/heapSpacesOnSignal.js', import.meta.url))).href;
const MiB = 2 ** 20;

/** The main thread's heap space sizes of the service on the embedded database, started with `nodeFlags`. */
async function heapSpaces(t: Test, nodeFlags: string[], env: Record<string, string> = {}): Promise<Record<string, number>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-young-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbeddedDataDir(dataDir);
  const main = runMain({ ...testKeys(), DATA_DIR: dataDir, ...env }, [...nodeFlags, `--import=${FIXTURE}`]);
  t.teardown(() => main.stop('SIGKILL'));
  await main.listening;
  const answer = main.output(/heap spaces: (\{.*\})\n/);
  main.kill('SIGUSR2');
  const spaces = JSON.parse((await answer)[1]!) as Record<string, number>;
  await main.stop();
  t.ok(spaces.new_space! > 0, 'the new space is reported');
  return spaces;
}

t.test('started without npm start\'s flags, on the embedded database: the young generation stays small after start', async (t) => {
  const spaces = await heapSpaces(t, []);
  t.ok(spaces.new_space! <= 8 * MiB, `new space ${(spaces.new_space! / MiB).toFixed(1)} MiB (32 MiB without the embedded setting)`);
});

t.test('npm start\'s node flags: the young generation stays at 4 MB under a burst of allocations', async (t) => {
  const flags = npmStartNodeFlags();
  t.ok(flags.includes('--max-semi-space-size=2'), `npm start passes the cap: ${flags.join(' ')}`);
  const spaces = await heapSpaces(t, flags, { HEAP_CHURN: '1' });
  t.ok(spaces.new_space! <= 4 * MiB, `new space ${(spaces.new_space! / MiB).toFixed(1)} MiB (32 MiB without the cap)`);
});

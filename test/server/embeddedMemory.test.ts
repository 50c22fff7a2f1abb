// The embedded default keeps V8's young generation at its initial size: loading the
// service used to grow it to 32 MB (16 MB semi-spaces), resident for the process's life.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

const FIXTURE = pathToFileURL(fileURLToPath(new URL('./fixtures/heapSpacesOnSignal.js', import.meta.url))).href;
const MiB = 2 ** 20;

t.test('npm start on the embedded database: the young generation stays small after start', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-young-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbeddedDataDir(dataDir);
  const main = runMain({ ...testKeys(), DATA_DIR: dataDir }, [`--import=${FIXTURE}`]);
  t.teardown(() => main.stop('SIGKILL'));
  await main.listening;
  const answer = main.output(/heap spaces: (\{.*\})\n/);
  main.kill('SIGUSR2');
  const spaces = JSON.parse((await answer)[1]!) as Record<string, number>;
  t.ok(spaces.new_space! > 0, 'the new space is reported');
  t.ok(spaces.new_space! <= 8 * MiB, `new space ${(spaces.new_space! / MiB).toFixed(1)} MiB (32 MiB without the embedded setting)`);
  await main.stop();
});

// The service runs with V8's allocation-site pretenuring off (server/gcTuning.ts): the
// short-lived objects of a site V8 saw outlive young collections are still born young.
// The same probe in a bare node shows the growth that the setting prevents.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { nodeCommand, runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

const FIXTURE = pathToFileURL(fileURLToPath(new URL('./fixtures/pretenuringOnSignal.js', import.meta.url))).href;
const MB = 1e6;
const GROWTH = /old space growth: (\d+) /;

t.test('a bare node pretenures the probe\'s site: the probe can tell', async (t) => {
  const child = spawn(...nodeCommand([`--import=${FIXTURE}`, '-e', 'process.stdout.write("ready\\n"); setInterval(() => {}, 1 << 30)']), { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  const seen = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m) resolve(m);
      };
      child.stdout!.on('data', (d: Buffer) => ((out += d.toString()), check()));
      check();
    });
  await seen(/ready\n/);
  child.kill('SIGUSR2');
  const growth = Number((await seen(GROWTH))[1]);
  t.ok(growth > 1 * MB, `old space grew ${(growth / MB).toFixed(1)} MB from short-lived objects`);
});

t.test('the service: short-lived objects of that site are born young', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-gc-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbeddedDataDir(dataDir);
  const main = runMain({ ...testKeys(), DATA_DIR: dataDir }, [`--import=${FIXTURE}`]);
  t.teardown(() => main.stop('SIGKILL'));
  await main.listening;
  const answer = main.output(GROWTH);
  main.kill('SIGUSR2');
  const growth = Number((await answer)[1]);
  await main.stop();
  t.ok(growth < 0.5 * MB, `old space grew ${(growth / MB).toFixed(2)} MB`);
});

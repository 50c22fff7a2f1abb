// The service runs with V8's allocation-site pretenuring off (server/gcTuning.ts): V8 weighs
// no pretenuring feedback in it, so no request path's site is ever pretenured. The probe
// (fixtures/pretenuringOnSignal.ts) traces that feedback while one site's objects outlive
// young collections; in a bare node it shows, which is what makes the service's silence
// mean something.
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
const FEEDBACK = /pretenuring: AllocationSite/;

t.test('a bare node weighs pretenuring feedback: the probe can tell', async (t) => {
  const script = 'process.on("SIGUSR2", () => setImmediate(() => process.exit(0))); process.kill(process.pid, "SIGUSR2"); setInterval(() => {}, 1 << 30)';
  const child = spawn(...nodeCommand([`--import=${FIXTURE}`, '-e', script]), { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  t.equal(code, 0);
  t.match(out, /probe done/);
  t.match(out, FEEDBACK, 'V8 traced the site\'s feedback');
});

t.test('the service weighs none', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-gc-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbeddedDataDir(dataDir);
  const main = runMain({ ...testKeys(), DATA_DIR: dataDir }, [`--import=${FIXTURE}`]);
  t.teardown(() => main.stop('SIGKILL'));
  await main.listening;
  const probed = main.output(/probe done/);
  main.kill('SIGUSR2');
  await probed;
  const { code, stdout } = await main.stop();
  t.equal(code, 0, 'stopped normally: V8\'s trace is complete');
  t.notMatch(stdout, FEEDBACK, 'no pretenuring feedback traced');
});

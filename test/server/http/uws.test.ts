// The native uWS binary is loaded directly and only when its sha256 matches the pin.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { binaryName, PINNED_BINARIES, uws, verifyBinary } from '../../../server/http/uws.js';

t.test('verifyBinary accepts the pinned hash and refuses anything else', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'uws-pin-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'fake.node');
  await writeFile(file, 'not a real binary');
  const sha = createHash('sha256').update('not a real binary').digest('hex');

  t.equal(verifyBinary(file, sha), sha);
  t.equal(verifyBinary(file, sha.toUpperCase()), sha);
  t.throws(() => verifyBinary(file, 'f158fb441f7e2e37b3ab9a56782fe37f4c0d33b5cd32e96ee5c0120ce7db7ced'), {
    message: /has sha256 [0-9a-f]{64}, expected f158fb44.*refusing to start/,
  });
  t.throws(() => verifyBinary(join(dir, 'missing.node'), sha), { message: /missing or unreadable/ });
});

t.test('the installed binary matches its pin and is what was loaded', async (t) => {
  const name = binaryName('linux', 'x64', '115');
  t.equal(name, 'uws_linux_x64_115.node');
  t.equal(PINNED_BINARIES[name], 'f158fb441f7e2e37b3ab9a56782fe37f4c0d33b5cd32e96ee5c0120ce7db7ced');
  // linux-arm64: the pinned hash is the one of the file the installed package ships.
  const arm64 = binaryName('linux', 'arm64', '115');
  t.equal(PINNED_BINARIES[arm64], 'fa46518766a985c6a79daef039f40cccd8e98e9a288f2ceaf31a0a18901bbfd5');
  t.equal(verifyBinary(createRequire(import.meta.url).resolve(`uWebSockets.js/binaries/${arm64}`), PINNED_BINARIES[arm64]!), PINNED_BINARIES[arm64]);
  t.same(Object.keys(PINNED_BINARIES).sort(), ['uws_linux_arm64_115.node', 'uws_linux_x64_115.node'], 'Linux x64 and arm64, Node 20 only');
  const require = createRequire(import.meta.url);
  const path = require.resolve(`uWebSockets.js/binaries/${binaryName()}`);
  t.equal(verifyBinary(path, PINNED_BINARIES[binaryName()]!), PINNED_BINARIES[binaryName()]);
  t.match(String(uws.App), /\[native code\]/, 'native App, not the JS fallback');
  t.notOk(Object.keys(require.cache).some((k) => k.endsWith('/src/uws.js')), 'the JS loader was never required');
});

t.test('UWS_USE_FALLBACK changes nothing', async (t) => {
  const mod = fileURLToPath(new URL('../../../server/http/uws.js', import.meta.url));
  const script = `
    import(${JSON.stringify(mod)}).then(({ uws }) => {
      const native = /\\[native code\\]/.test(String(uws.App));
      const loaders = Object.keys(require.cache).filter((k) => k.includes('uWebSockets.js') && k.endsWith('.js'));
      console.log(JSON.stringify({ native, loaders }));
    });`;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { env: { ...process.env, UWS_USE_FALLBACK: '1' } }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
  t.same(JSON.parse(out.trim()), { native: true, loaders: [] });
});

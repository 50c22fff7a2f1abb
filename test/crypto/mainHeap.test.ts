// After start-up the main thread's heap holds no root key: not the caller's hex
// string, not a copy of it, not its bytes as a string. Checked in a heap snapshot of
// a child process that made its keys in a scope that has ended.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeCommand } from '../helpers/process.js';
import { softhsmAvailable, softToken } from '../helpers/softhsm.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/mainHeapKeys.js', import.meta.url));
const PIN_FIXTURE = fileURLToPath(new URL('./fixtures/mainHeapPin.js', import.meta.url));

interface Report {
  file: string;
  control: string;
  keys: string[];
}

function runFixture(dir: string): Promise<Report> {
  const child = spawn(...nodeCommand(['--expose-gc', FIXTURE, dir]), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout) as Report) : reject(new Error(`fixture exited ${code}: ${stderr}`)))),
  );
}

t.test('no root key in a heap snapshot of the main thread after start-up', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-heap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const report = await runFixture(dir);
  const { strings } = JSON.parse(readFileSync(report.file, 'utf8')) as { strings: string[] };
  const holds = (needle: string) => strings.some((s) => s.includes(needle));

  t.ok(holds(report.control), 'the search finds a key-shaped string that is still reachable');
  t.equal(report.keys.length, 2);
  for (const [i, hex] of report.keys.entries()) {
    const name = i === 0 ? 'current key' : 'previous key';
    t.notOk(holds(hex), `${name}: not as the hex string`);
    t.notOk(holds(hex.toUpperCase()), `${name}: not as upper-case hex`);
    t.notOk(holds(Buffer.from(hex, 'hex').toString('latin1')), `${name}: not as its bytes in a string`);
  }
});

t.test('no PKCS#11 PIN in a heap snapshot of the main thread after start-up', { skip: !softhsmAvailable() }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-heap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tok = softToken(t);
  const child = spawn(...nodeCommand(['--expose-gc', PIN_FIXTURE, dir, tok.module, tok.tokenLabel, tok.keyLabel]), {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! },
  });
  child.stdin.end(Buffer.from(tok.pin)); // bytes: the child never makes it a string
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  t.equal(code, 0, stderr);
  const report = JSON.parse(stdout) as { file: string; control: string; zeroed: boolean };
  const { strings } = JSON.parse(readFileSync(report.file, 'utf8')) as { strings: string[] };
  const holds = (needle: string) => strings.some((s) => s.includes(needle));
  t.ok(holds(report.control), 'the search finds a PIN-shaped string that is still reachable');
  t.ok(report.zeroed, 'the PIN bytes handed to createCrypto are zeroed');
  t.notOk(holds(tok.pin), 'the PIN: not as a string');
  t.notOk(holds(tok.pin.toUpperCase()), 'not upper-cased');
  t.notOk(holds(Buffer.from(tok.pin).toString('base64')), 'not as base64');
});

// The embedded default on a small disk that fills up (issue 31, point 2): the service runs
// on a tmpfs of its own (mounted here; the test needs root), writers fill it, and then:
// writes answer 503 InsufficientStorage naming the disk (never a 500, never no answer),
// reads keep answering with every acknowledged value, readiness says why, the metric and
// the warning were there before; once the filler is deleted, writes succeed again without
// a restart and nothing acknowledged is lost; SIGTERM ends the process. A start on a disk
// that is already full is refused in one line. Before the disk guard, PGlite PANICked when
// its WAL could not get a new 16 MB segment and the process spun for good (no answer,
// SIGTERM ignored): the last test drives 4 KB and 20 KB values through a new WAL segment
// with the smallest reserve allowed.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { signupAdmin, ADMIN_LOGIN } from '../helpers/admin.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { request } from '../helpers/http.js';
import { runMain, type MainProcess } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

t.setTimeout(300_000);

const MiB = 1024 * 1024;
const DEADLINE_MS = 5000;

/** A tmpfs of `sizeMiB` under a fresh temporary folder, unmounted in teardown; undefined when mounting is not permitted. */
function smallDisk(t: Test, sizeMiB: number): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'vault-diskfull-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    t.plan(0, `mounting a tmpfs is not permitted here (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}): the disk-full tests need root`);
    return undefined;
  }
  t.teardown(() => {
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

const freeBytes = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

/** Writes a filler file until `leave` bytes (or a little less) are free; returns its path. */
function fill(dir: string, leave: number): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'a');
  const chunk = Buffer.alloc(256 * 1024, 0x5a);
  try {
    while (freeBytes(dir) > leave) writeSync(fd, chunk, 0, Math.min(chunk.length, Math.max(4096, freeBytes(dir) - leave)));
  } finally {
    closeSync(fd);
  }
  return path;
}

/** A request that gives up well after the deadline: a service that does not answer is a failure, not a hung test. */
async function call(url: string, init: Parameters<typeof request>[1] = {}) {
  try {
    return await request(url, { ...init, signal: AbortSignal.timeout(DEADLINE_MS * 3) });
  } catch (err) {
    return { status: 0, body: { error: `no answer: ${(err as Error).name}` }, headers: new Headers(), contentType: null };
  }
}

interface Run {
  url: string;
  main: MainProcess;
  dataDir: string;
  token: string;
}

async function start(t: Test, disk: string, env: Record<string, string> = {}): Promise<Run> {
  const dataDir = join(disk, 'data');
  await seedEmbeddedDataDir(dataDir);
  const main = runMain({ NODE_ENV: 'test', ...testKeys(), DATA_DIR: dataDir, REQUEST_DEADLINE_MS: String(DEADLINE_MS), METRICS_PORT: '0', ...env });
  t.teardown(() => main.stop('SIGKILL'));
  const url = await main.listening;
  const admin = await signupAdmin(url);
  t.equal((await call(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  return { url, main, dataDir, token: admin.token };
}

const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };

/**
 * `writers` clients create keys of `bytes`-character values until each has been refused;
 * returns every acknowledged key and value, and every answer that was not a 200.
 */
async function writeUntilRefused(run: Run, writers: number, bytes: number, tag: string) {
  const acked = new Map<string, string>();
  const refusals: Array<{ status: number; error: string; message: string; retryAfter: string | null }> = [];
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let n = 0; n < 100_000; n++) {
        const key = `${tag}_${w}_${n}`;
        const value = `${key}:`.padEnd(bytes, String.fromCharCode(97 + ((w * 7 + n) % 26)));
        const r = await call(`${run.url}/api/v3/secrets/raw/${key}`, { method: 'POST', token: run.token, json: { ...scope, secretValue: value } });
        if (r.status === 200) {
          acked.set(key, value);
          continue;
        }
        refusals.push({ status: r.status, error: String(r.body?.error), message: String(r.body?.message), retryAfter: r.headers.get('retry-after') });
        return;
      }
    }),
  );
  return { acked, refusals };
}

async function listed(run: Run): Promise<Map<string, string>> {
  const r = await call(`${run.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, { token: run.token });
  if (r.status !== 200) throw new Error(`list answered ${r.status}`);
  return new Map((r.body.secrets as Array<{ secretKey: string; secretValue: string }>).map((s) => [s.secretKey, s.secretValue]));
}

function allPresent(t: Test, have: Map<string, string>, acked: Map<string, string>, what: string) {
  const missing = [...acked].filter(([k, v]) => have.get(k) !== v).map(([k]) => k);
  t.same(missing, [], `${what}: every one of the ${acked.size} acknowledged writes is there with its value`);
}

t.test('a disk that fills up under writers: 503 naming it, reads go on, recovery without a restart', async (t) => {
  const disk = smallDisk(t, 160);
  if (!disk) return;
  const reserve = 64 * MiB; // the default DISK_RESERVE_BYTES
  const run = await start(t, disk);
  // 160 MiB is below the default DISK_WARN_BYTES (256 MiB): warned at start, before anything is full.
  const warned = await run.main.output(/\{[^\n]*"event":"disk"[^\n]*\}/);
  t.match(JSON.parse(warned[0]), { level: 'warn', event: 'disk', disk: 'low' }, 'a warning line before the disk is full');
  const metricsUrl = (await run.main.output(/metrics on (http:\/\/[\d.]+:\d+)\/metrics/))[1]!;
  const scrape = async () => {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    return Number(/^vaultstandalone_data_dir_free_bytes (\d+)/m.exec(text)?.[1] ?? NaN);
  };
  t.ok((await scrape()) > reserve, 'vaultstandalone_data_dir_free_bytes is above the reserve while there is room');

  const filler = fill(disk, reserve + 12 * MiB);
  const { acked, refusals } = await writeUntilRefused(run, 3, 20_000, 'K');
  t.ok(acked.size > 0, `${acked.size} writes acknowledged before the disk filled`);
  t.equal(refusals.length, 3, 'every writer was refused in the end');
  for (const r of refusals) {
    t.equal(r.status, 503, `refused with 503 (${r.error}: ${r.message})`);
    t.equal(r.error, 'InsufficientStorage');
    t.match(r.message, /disk holding the database \(DATA_DIR\) is full/);
    t.match(r.retryAfter, /^\d+$/, 'Retry-After');
  }

  // Full: every write is refused at once, reads answer with every acknowledged value.
  const again = await call(`${run.url}/api/v3/secrets/raw/ONE_MORE`, { method: 'POST', token: run.token, json: { ...scope, secretValue: 'x' } });
  t.equal(again.status, 503);
  t.equal(again.body.error, 'InsufficientStorage');
  allPresent(t, await listed(run), acked, 'while full');
  const login = await call(`${run.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN_LOGIN });
  t.equal(login.status, 503, 'a login (it writes) is refused, naming the disk');
  t.equal(login.body.error, 'InsufficientStorage');
  const ready = await call(`${run.url}/api/health/ready`);
  t.equal(ready.status, 503, 'not ready');
  t.match(ready.body.message, /disk/);
  t.match(ready.body.checks.disk, /^full: .* free, below the 64 MiB reserve/);
  t.equal((await call(`${run.url}/api/health/live`)).status, 200, 'alive');
  t.ok((await scrape()) < reserve, 'vaultstandalone_data_dir_free_bytes shows the disk below the reserve');
  t.match(JSON.parse((await run.main.output(/\{[^\n]*"event":"disk"[^\n]*"disk":"full"[^\n]*\}/))[0]), { level: 'error' }, 'an error line when writes stop');

  // Space freed: the next write is taken, without a restart.
  rmSync(filler);
  const after = await call(`${run.url}/api/v3/secrets/raw/AFTER`, { method: 'POST', token: run.token, json: { ...scope, secretValue: 'after' } });
  t.equal(after.status, 200, 'a write succeeds once space is freed');
  acked.set('AFTER', 'after');
  const readyAgain = await call(`${run.url}/api/health/ready`);
  t.equal(readyAgain.status, 200, 'ready again');
  allPresent(t, await listed(run), acked, 'after recovery');

  const { code } = await run.main.stop('SIGTERM');
  t.equal(code, 0, 'SIGTERM ends the process');
});

t.test('a start on a disk that is already full is refused in one line', async (t) => {
  const disk = smallDisk(t, 96);
  if (!disk) return;
  const dataDir = join(disk, 'data');
  await seedEmbeddedDataDir(dataDir);
  fill(disk, 8 * MiB);
  const main = runMain({ NODE_ENV: 'test', ...testKeys(), DATA_DIR: dataDir });
  t.teardown(() => main.stop('SIGKILL'));
  const { code, stderr } = await main.exit;
  t.equal(code, 1, 'exits non-zero');
  const lines = stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${stderr.trim()}`);
  t.match(lines[0], new RegExp(`^cannot start: the disk holding ${dataDir} is full: .* free, below the 64 MiB reserve \\(DISK_RESERVE_BYTES\\)`));
  t.notMatch(stderr, /Aborted/);
});

for (const bytes of [4_000, 20_000]) {
  t.test(`${bytes / 1000} KB values through a new WAL segment, with the smallest reserve`, async (t) => {
    const disk = smallDisk(t, 112);
    if (!disk) return;
    const reserve = 20 * MiB;
    const run = await start(t, disk, { DISK_RESERVE_BYTES: String(reserve), DISK_WARN_BYTES: String(2 * reserve) });
    const walDir = join(run.dataDir, 'pglite', 'pg_wal');
    const segments = () => new Set(readdirSync(walDir).filter((f) => /^[0-9A-F]{24}$/.test(f)));
    const before = segments();
    // Room for the writes to need a new 16 MB WAL segment before the reserve is reached.
    const filler = fill(disk, reserve + 24 * MiB);
    const { acked, refusals } = await writeUntilRefused(run, 4, bytes, `W${bytes}`);
    t.ok([...segments()].some((s) => !before.has(s)), 'the writes went into a new WAL segment');
    t.ok(acked.size > 0, `${acked.size} writes acknowledged`);
    t.same(
      refusals.map((r) => [r.status, r.error]),
      refusals.map(() => [503, 'InsufficientStorage']),
      'every writer ends with a 503 naming the disk (no 500, no request left unanswered)',
    );
    t.equal((await call(`${run.url}/api/health/live`)).status, 200, 'the process still answers');
    allPresent(t, await listed(run), acked, 'while full');
    rmSync(filler);
    const after = await call(`${run.url}/api/v3/secrets/raw/AFTER`, { method: 'POST', token: run.token, json: { ...scope, secretValue: 'after' } });
    t.equal(after.status, 200, 'writes resume once space is freed');
    acked.set('AFTER', 'after');
    allPresent(t, await listed(run), acked, 'after recovery');
    const { code } = await run.main.stop('SIGTERM');
    t.equal(code, 0, 'SIGTERM ends the process');
  });
}

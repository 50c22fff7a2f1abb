// Backups: the embedded database backed up WHILE the service runs (over its admin
// socket), restored into a fresh data folder, served by a second service, secrets read
// back over HTTP; and the operations guide's pg_dump / pg_restore path for PostgreSQL,
// restored into a fresh database and read back.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { adminSocketPath } from '../../../server/adminChannel.js';
import { ADMIN } from '../../helpers/admin.js';
import { freshDatabase } from '../../helpers/db.js';
import { request } from '../../helpers/http.js';
import { seedEmbeddedDataDir } from '../../helpers/embedded.js';
import { CLI, nodeCommand, runMain } from '../../helpers/process.js';
import { INVENTORY, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(...nodeCommand([CLI, ...args]), { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const tempDir = (t: { teardown(fn: () => unknown): void }) => {
  const d = mkdtempSync(join(tmpdir(), 'vault-backup-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

const valuesOf = (body: { secrets: Array<{ secretKey: string; secretValue: string }> }) =>
  Object.fromEntries(body.secrets.map((s) => [s.secretKey, s.secretValue]));

t.test('embedded: backup while the service runs, restore into a fresh DATA_DIR, read back over HTTP', async (t) => {
  const keys = { ENCRYPTION_KEY: randomBytes(16).toString('hex'), AUTH_SECRET: randomBytes(32).toString('base64') };
  const SETUP_TOKEN = randomBytes(16).toString('hex');
  const dirA = await seedEmbeddedDataDir(tempDir(t)); // from the initdb template; dirB stays empty for the restore
  const a = runMain({ NODE_ENV: 'production', ...keys, DATA_DIR: dirA, SETUP_TOKEN });
  t.teardown(() => a.stop('SIGKILL'));
  const urlA = await a.listening;
  const signup = await request(`${urlA}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, setupCode: SETUP_TOKEN } });
  t.equal(signup.status, 200);
  const token = signup.body.token as string;
  t.equal((await request(`${urlA}/api/v1/projects`, { method: 'POST', token, json: { projectName: 'homelab' } })).status, 200);
  const batch = await request(`${urlA}/api/v3/secrets/batch/raw`, {
    method: 'POST',
    token,
    json: { projectSlug: 'homelab', environment: 'prod', secretPath: '/', secrets: Object.entries(INVENTORY).map(([secretKey, secretValue]) => ({ secretKey, secretValue })) },
  });
  t.equal(batch.status, 200);
  t.ok(existsSync(adminSocketPath(dirA)), 'the running service listens on its admin socket');
  t.equal(statSync(adminSocketPath(dirA)).mode & 0o777, 0o600, 'socket 0600');

  const work = tempDir(t);
  const file = join(work, 'vault.backup');
  const b = await cli(['backup', '--out', file], { DATA_DIR: dirA });
  t.equal(b.code, 0, b.stderr);
  t.match(b.stderr, /from the running service/);
  t.equal(statSync(file).mode & 0o777, 0o600, 'backup file 0600');
  t.notOk(b.stderr.includes(keys.ENCRYPTION_KEY));
  t.equal((await request(`${urlA}/api/status`)).status, 200, 'the service kept serving');
  t.equal((await cli(['backup', '--out', file], { DATA_DIR: dirA })).code, 1, 'an existing file is not overwritten');

  // The running service's own folder is never a restore target.
  const intoLive = await cli(['restore', '--in', file], { DATA_DIR: dirA });
  t.equal(intoLive.code, 1);
  t.match(intoLive.stderr, /in use by process|already holds a database/);

  const dirB = tempDir(t);
  const r = await cli(['restore', '--in', file], { DATA_DIR: dirB });
  t.equal(r.code, 0, r.stderr);
  const again = await cli(['restore', '--in', file], { DATA_DIR: dirB });
  t.equal(again.code, 1, 'a folder that holds a database is refused');
  t.match(again.stderr, /already holds a database/);
  // Exact round trip: the restored folder, backed up in turn, gives the same backup.
  const roundTrip = join(work, 'round-trip.backup');
  const rt = await cli(['backup', '--out', roundTrip], { DATA_DIR: dirB });
  t.equal(rt.code, 0, rt.stderr);
  const first = gunzipSync(readFileSync(file));
  t.ok(first.subarray(0, 34).toString() === 'vault-standalone logical backup 1\n', 'a logical backup');
  t.ok(gunzipSync(readFileSync(roundTrip)).equals(first), 'backup -> restore -> backup: every table, row and sequence identical');

  const bProc = runMain({ NODE_ENV: 'production', ...keys, DATA_DIR: dirB });
  t.teardown(() => bProc.stop('SIGKILL'));
  const urlB = await bProc.listening;
  const loginB = await request(`${urlB}/api/v3/auth/login`, { method: 'POST', json: { email: ADMIN.email, password: ADMIN.password } });
  t.equal(loginB.status, 200, 'the restored accounts log in');
  const read = await request(`${urlB}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F`, { token: loginB.body.token });
  t.equal(read.status, 200);
  t.same(valuesOf(read.body), INVENTORY, 'every value read back from the restored copy');
  const verify = await request(`${urlB}/api/v1/organization/audit-logs/verify`, { token: loginB.body.token });
  t.equal(verify.body.ok, true, 'the restored audit chain verifies');
  t.equal((await bProc.stop('SIGTERM')).code, 0);

  // With the service stopped, the folder is opened directly.
  t.equal((await a.stop('SIGTERM')).code, 0);
  t.notOk(existsSync(adminSocketPath(dirA)), 'the socket goes with the service');
  const offline = await cli(['backup', '--out', join(work, 'offline.backup')], { DATA_DIR: dirA });
  t.equal(offline.code, 0, offline.stderr);
  t.match(offline.stderr, /with the service stopped/);
});

t.test('backup and restore refuse PostgreSQL and point to pg_dump', async (t) => {
  for (const cmd of [['backup', '--out', '/tmp/x'], ['restore', '--in', '/tmp/x']]) {
    const r = await cli(cmd, { DATABASE_URL: 'postgres://u@127.0.0.1:1/x' });
    t.equal(r.code, 1);
    t.match(r.stderr, /pg_dump/);
  }
});

t.test("PostgreSQL: the guide's pg_dump -Fc / pg_restore into a fresh database, read back", async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const source = await startTestService(t, env);
  const seeded = await seedHomelab(source.services);
  const dump = join(tempDir(t), 'vault.dump');
  // docs/operations.md section 4: pg_dump -Fc, then pg_restore --clean --if-exists --no-owner.
  const d = spawnSync('sh', ['-c', `pg_dump -d "$SRC" -Fc > "$OUT"`], { env: { ...process.env, SRC: env.DATABASE_URL!, OUT: dump } });
  t.equal(d.status, 0, d.stderr.toString());
  const target = await freshDatabase(t);
  const r = spawnSync('sh', ['-c', `pg_restore -d "$DST" --clean --if-exists --no-owner < "$IN"`], { env: { ...process.env, DST: target, IN: dump } });
  t.equal(r.status, 0, r.stderr.toString());
  await source.close();

  const restored = await startTestService(t, { ...env, DATABASE_URL: target });
  const token = await login(restored.url, seeded);
  const read = await request(`${restored.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F`, { token });
  t.equal(read.status, 200);
  t.same(valuesOf(read.body), INVENTORY, 'every value read back from the restored database');
});

// The real entry point as a process: configuration messages and exit codes, the
// development keys of a fresh clone, refusal to start with the wrong key, no
// ENCRYPTION_KEY left on the main thread after start-up, and an exit when a crypto
// worker is lost.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { request } from '../helpers/http.js';
import { runMain } from '../helpers/process.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url));
const run = runMain;

function tempDir(t: Tap): string {
  const dir = mkdtempSync(join(tmpdir(), 'vault-main-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
type Tap = { teardown(fn: () => unknown): void };

const key = () => randomBytes(16).toString('hex');
const secret = () => randomBytes(32).toString('base64');

t.test('ENCRYPTION_KEY of the wrong form: exit with the seed message', async (t) => {
  for (const bad of ['', 'abc', 'g'.repeat(32), 'a'.repeat(31), 'a'.repeat(64)]) {
    const r = await run({ NODE_ENV: 'production', ENCRYPTION_KEY: bad, AUTH_SECRET: secret(), DATA_DIR: tempDir(t) }).exit;
    t.not(r.code, 0, `exit non-zero for ${JSON.stringify(bad)}`);
    t.match(r.stderr, 'ENCRYPTION_KEY must be 32 hex characters');
  }
});

t.test('AUTH_SECRET missing or malformed: exit with "invalid AUTH_SECRET"', async (t) => {
  for (const bad of [undefined, '', 'short', Buffer.alloc(16).toString('base64'), '!!!not base64!!!'.repeat(4)]) {
    const env: Record<string, string> = { NODE_ENV: 'production', ENCRYPTION_KEY: key(), DATA_DIR: tempDir(t) };
    if (bad !== undefined) env.AUTH_SECRET = bad;
    const r = await run(env).exit;
    t.not(r.code, 0);
    t.match(r.stderr, 'invalid AUTH_SECRET');
  }
});

t.test('production generates nothing', async (t) => {
  const dir = tempDir(t);
  const r = await run({ NODE_ENV: 'production', DATA_DIR: dir }).exit;
  t.not(r.code, 0);
  t.match(r.stderr, 'ENCRYPTION_KEY must be 32 hex characters');
  t.notOk(existsSync(join(dir, 'dev-keys.env')), 'no key file written');
});

t.test('fresh clone: development keys generated once (0600), service up, wrong key refused later', async (t) => {
  const dir = tempDir(t);
  const first = run({ DATA_DIR: dir });
  const url = await Promise.race([first.listening, first.exit.then((r) => Promise.reject(new Error(r.stderr)))]);
  const status = await fetch(`${url}/api/status`);
  t.equal(status.status, 200);
  t.equal(((await status.json()) as { message: string }).message, 'Ok');
  first.kill();
  const firstExit = await first.exit;
  t.match(firstExit.stderr, /DEVELOPMENT KEYS GENERATED: .*dev-keys\.env/);
  t.match(firstExit.stderr, /BACK THIS FILE UP/);
  const file = join(dir, 'dev-keys.env');
  t.equal(statSync(file).mode & 0o777, 0o600, 'key file is 0600');
  const keys = readFileSync(file, 'utf8');
  t.match(keys, /^ENCRYPTION_KEY=[0-9a-f]{32}$/m);

  // Second start: same keys, no new generation, the canary opens.
  const second = run({ DATA_DIR: dir });
  const url2 = await Promise.race([second.listening, second.exit.then((r) => Promise.reject(new Error(r.stderr)))]);
  t.equal((await fetch(`${url2}/api/status`)).status, 200);
  second.kill();
  const secondExit = await second.exit;
  t.notMatch(secondExit.stderr, /GENERATED/);
  t.equal(readFileSync(file, 'utf8'), keys, 'keys unchanged');

  // A different ENCRYPTION_KEY over the same data: refused at start, clearly.
  const wrong = await run({ DATA_DIR: dir, ENCRYPTION_KEY: key() }).exit;
  t.not(wrong.code, 0);
  t.match(wrong.stderr, /ENCRYPTION_KEY does not match the key this database was encrypted with/);
});

t.test('development mode on a DATA_DIR that holds a database but no dev-keys.env: no keys generated, says what is missing', async (t) => {
  // A restored (or copied) folder without its key file: new keys could not open it.
  const dir = await seedEmbeddedDataDir(tempDir(t));
  const r = await run({ DATA_DIR: dir }).exit;
  t.equal(r.code, 1);
  t.equal(r.stderr.trimEnd().split('\n').length, 1, 'one line', { stderr: r.stderr });
  t.match(r.stderr, `${dir} holds a database but no dev-keys.env, and ENCRYPTION_KEY and AUTH_SECRET are not set`);
  t.match(r.stderr, /Put back the dev-keys\.env kept with this database/);
  t.notOk(existsSync(join(dir, 'dev-keys.env')), 'no key file written');
  const onlyAuth = await run({ DATA_DIR: dir, ENCRYPTION_KEY: key() }).exit;
  t.equal(onlyAuth.code, 1);
  t.match(onlyAuth.stderr, 'no dev-keys.env, and AUTH_SECRET is not set');
  t.notOk(existsSync(join(dir, 'dev-keys.env')), 'still none');
});

t.test('after start-up, neither ENCRYPTION_KEY nor AUTH_SECRET is in the main thread\'s heap', async (t) => {
  // The embedded database from the initdb template (the fresh-clone test starts on an empty folder).
  const dir = await seedEmbeddedDataDir(tempDir(t));
  const encryptionKey = key();
  const authSecret = secret();
  const server = run({ NODE_ENV: 'production', ENCRYPTION_KEY: encryptionKey, AUTH_SECRET: authSecret, DATA_DIR: dir }, [
    '--expose-gc',
    '--import',
    pathToFileURL(fixture('heapSnapshotOnSignal')).href,
  ], dir);
  t.teardown(() => server.kill());
  const url = await server.listening;
  t.equal((await fetch(`${url}/api/status`)).status, 200, 'serving');
  server.kill('SIGUSR2');
  const m = await server.output(/heap snapshot: (.*)\n/);
  const { file, control } = JSON.parse(m[1]!) as { file: string; control: string };
  const { strings } = JSON.parse(readFileSync(file, 'utf8')) as { strings: string[] };
  rmSync(file);
  const holds = (needle: string) => strings.some((s) => s.includes(needle));
  t.ok(holds(control), 'the search finds a key-shaped string that is still reachable');
  t.notOk(holds(encryptionKey), 'not as the hex string');
  t.notOk(holds(encryptionKey.toUpperCase()), 'not as upper-case hex');
  t.notOk(holds(Buffer.from(encryptionKey, 'hex').toString('latin1')), 'not as its bytes in a string');
  // AUTH_SECRET: only the keys derived from it at start remain (see server/auth/tokens.ts).
  const authBytes = Buffer.from(authSecret, 'base64');
  t.notOk(holds(authSecret), 'AUTH_SECRET: not as the base64 string');
  t.notOk(holds(authBytes.toString('base64url')), 'AUTH_SECRET: not as base64url');
  t.notOk(holds(authBytes.toString('hex')), 'AUTH_SECRET: not as hex');
  t.notOk(holds(authBytes.toString('latin1')), 'AUTH_SECRET: not as its bytes in a string');
  server.kill();
  t.equal((await server.exit).code, 0, 'and it still shuts down cleanly');
});

t.test('after requests end, no password, setup code, client secret or secret value is in the main thread\'s heap', async (t) => {
  const dir = await seedEmbeddedDataDir(tempDir(t));
  // Each a string that appears nowhere else: found only if the request's plaintext lingers.
  const setupCode = `setup-${randomBytes(12).toString('hex')}`;
  const password = `pass-${randomBytes(12).toString('hex')}`;
  const value = `value-${randomBytes(12).toString('hex')}`;
  const server = run({ NODE_ENV: 'production', ENCRYPTION_KEY: key(), AUTH_SECRET: secret(), DATA_DIR: dir, SETUP_TOKEN: setupCode }, [
    '--expose-gc',
    '--import',
    pathToFileURL(fixture('heapSnapshotOnSignal')).href,
  ], dir);
  t.teardown(() => server.kill());
  const url = await server.listening;
  const api = async (path: string, init: { method?: string; token?: string; json?: unknown } = {}) => {
    const r = await request(`${url}${path}`, init);
    t.equal(r.status, 200, `${init.method ?? 'GET'} ${path}`);
    return r.body;
  };
  const email = 'admin@example.test';
  await api('/api/v1/admin/signup', { method: 'POST', json: { email, password, firstName: 'Ada', setupCode } });
  const token = (await api('/api/v3/auth/login', { method: 'POST', json: { email, password } })).token as string;
  const project = (await api('/api/v1/projects', { method: 'POST', token, json: { projectName: 'homelab' } })).project;
  const identityId = (await api('/api/v1/identities', { method: 'POST', token, json: { name: 'eso' } })).identity.id as string;
  const clientId = (await api(`/api/v1/auth/universal-auth/identities/${identityId}`, { method: 'POST', token, json: {} })).identityUniversalAuth.clientId as string;
  const clientSecret = (await api(`/api/v1/auth/universal-auth/identities/${identityId}/client-secrets`, { method: 'POST', token, json: { description: 'eso' } }))
    .clientSecret as string;
  await api(`/api/v1/projects/${project.id}/memberships/identities/${identityId}`, { method: 'POST', token, json: { role: 'member' } });
  const machine = (await api('/api/v1/auth/universal-auth/login', { method: 'POST', json: { clientId, clientSecret } })).accessToken as string;
  await api('/api/v3/secrets/raw/HEAP_PROBE', { method: 'POST', token, json: { projectSlug: 'homelab', environment: 'prod', secretPath: '/', secretValue: value } });
  const read = await api('/api/v3/secrets/raw/HEAP_PROBE?workspaceSlug=homelab&environment=prod&secretPath=/', { token: machine });
  t.equal(read.secret.secretValue, value, 'the value was read back');

  server.kill('SIGUSR2');
  const m = await server.output(/heap snapshot: (.*)\n/);
  const { file, pool, control } = JSON.parse(m[1]!) as { file: string; pool: string; control: string };
  const { strings } = JSON.parse(readFileSync(file, 'utf8')) as { strings: string[] };
  const slab = readFileSync(pool).toString('latin1');
  rmSync(file);
  rmSync(pool);
  const holds = (needle: string) => strings.some((s) => s.includes(needle)) || slab.includes(needle);
  t.ok(holds(control), 'the search finds a string that is still reachable');
  for (const [name, plain] of Object.entries({ 'the setup code': setupCode, 'the password': password, 'the client secret': clientSecret, 'the secret value': value })) {
    t.notOk(holds(plain), `${name}: not in the heap`);
  }
  server.kill();
  t.equal((await server.exit).code, 0, 'and it still shuts down cleanly');
});

t.test('a crypto worker lost after start-up: the service exits non-zero, saying why', async (t) => {
  const server = run({ ENCRYPTION_KEY: key(), AUTH_SECRET: secret(), DATA_DIR: await seedEmbeddedDataDir(tempDir(t)) }, [
    '--import',
    pathToFileURL(fixture('killCryptoWorker')).href,
  ]);
  t.teardown(() => server.kill());
  await server.listening;
  server.kill('SIGUSR2');
  const r = await server.exit;
  t.equal(r.code, 1);
  // The log (stdout, JSON lines) says why.
  t.match(r.stdout, /"level":"error".*"msg":"a crypto worker stopped; exiting so the service restarts with its keys"/);
});

t.test('LOG_LEVEL drops the lines below it; start-up failures always print', async (t) => {
  // A port held by another listener: start-up logs at info (migrations) and warn
  // (development keys read from a file), then fails to listen and exits.
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const port = String((blocker.address() as { port: number }).port);
  const keys = `ENCRYPTION_KEY=${key()}\nAUTH_SECRET=${secret()}\n`;
  const INFO = /applied database migrations/;
  // Every log line goes to stdout as JSON; start-up failures go to stderr.
  const WARN = /"level":"warn".*"msg":"using development keys from/;
  for (const [level, info, warn] of [
    ['debug', true, true],
    ['warn', false, true],
    ['error', false, false],
    ['silent', false, false],
  ] as const) {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'dev-keys.env'), keys, { mode: 0o600 });
    // A fresh database each time, so that every start applies the migrations (and says so).
    const r = await run({ DATA_DIR: dir, DATABASE_URL: await freshDatabase(t), PORT: port, LOG_LEVEL: level }).exit;
    const name = `LOG_LEVEL=${JSON.stringify(level)}`;
    t.not(r.code, 0, `${name}: exits`);
    t.match(r.stderr, `cannot listen on 127.0.0.1:${port}: the port is in use`, `${name}: the failure is printed`);
    t.equal(INFO.test(r.stdout), info, `${name}: info lines ${info ? 'shown' : 'dropped'}`);
    t.equal(WARN.test(r.stdout), warn, `${name}: warn lines ${warn ? 'shown' : 'dropped'}`);
  }
  const bad = await run({ DATA_DIR: tempDir(t), LOG_LEVEL: 'verbose' }).exit;
  t.not(bad.code, 0);
  t.match(bad.stderr, /^invalid LOG_LEVEL/m);
});

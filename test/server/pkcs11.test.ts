// KEY_PROVIDER=pkcs11 as an operator meets it, against SoftHSM2: its settings; the PIN is not on the main thread's heap
// after start-up; a token that goes away answers 503 for new data keys while reads of
// cached keys keep working. (Refusals to start: pkcs11Start.test.ts; the ESO sequence on pkcs11: eso.test.ts.)
import { readFileSync, rmSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../server/config.js';
import { signupAdmin } from '../helpers/admin.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { request } from '../helpers/http.js';
import { seedHomelab, startTestService, testEnv, testKeys, INVENTORY } from '../helpers/service.js';
import { softhsmAvailable, softToken, SOFTHSM_MODULE } from '../helpers/softhsm.js';
import { SNAPSHOT, start, tempDir } from '../helpers/spawnService.js';

// Real processes, tokens and worker pools on a shared 2-core machine: more than the default per-file budget.
t.setTimeout(360_000);


if (!softhsmAvailable()) {
  t.comment(`SoftHSM2 not installed (${SOFTHSM_MODULE}): skipped`);
  process.exit(0);
}

t.test('the settings: KEY_PROVIDER=pkcs11 needs no ENCRYPTION_KEY and names what is missing', async (t) => {
  const auth = testKeys().AUTH_SECRET;
  const tok = softToken(t);
  const c = parseConfig({ AUTH_SECRET: auth, ...tok.env });
  t.equal(c.keyProvider, 'pkcs11');
  t.equal(c.encryptionKey, undefined);
  t.same(c.pkcs11?.pin, Buffer.from(tok.pin), 'PIN file read, trailing newline dropped');
  t.equal(c.pkcs11?.tokenLabel, tok.tokenLabel);
  t.equal(parseConfig(testKeys()).keyProvider, 'local', 'local by default');
  const { PKCS11_PIN_FILE: _pinFile, ...noPin } = tok.env;
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ ...tok.env, PKCS11_MODULE: '' }, /^PKCS11_MODULE is required when KEY_PROVIDER=pkcs11/],
    [{ ...tok.env, PKCS11_TOKEN_LABEL: '' }, /^PKCS11_TOKEN_LABEL or PKCS11_SLOT \(exactly one\)/],
    [{ ...tok.env, PKCS11_SLOT: '3' }, /^PKCS11_TOKEN_LABEL or PKCS11_SLOT \(exactly one\)/],
    [noPin, /^PKCS11_PIN or PKCS11_PIN_FILE \(exactly one\)/],
    [{ ...tok.env, PKCS11_PIN: '1234' }, /^PKCS11_PIN or PKCS11_PIN_FILE \(exactly one\)/],
    [{ ...tok.env, PKCS11_PIN_FILE: '/nonexistent/pin' }, /^PKCS11_PIN_FILE: cannot read \/nonexistent\/pin \(ENOENT\)$/],
    [{ ...tok.env, KEY_PROVIDER: 'kms' }, /^invalid KEY_PROVIDER/],
  ];
  for (const [env, message] of cases) t.throws(() => parseConfig({ AUTH_SECRET: auth, ...env }), { message }, String(message));
});

t.test('after start-up, the PIN is not in the main thread\'s heap', async (t) => {
  const tok = softToken(t);
  const dir = await seedEmbeddedDataDir(tempDir(t));
  const server = start({ ...tok.env, PKCS11_PIN_FILE: '', PKCS11_PIN: tok.pin, DATA_DIR: dir }, ['--expose-gc', '--import', SNAPSHOT], dir);
  t.teardown(() => server.kill());
  const url = (await server.output(/listening on (http:\/\/[\d.]+:\d+)/))[1]!;
  t.equal((await fetch(`${url}/api/status`)).status, 200, 'serving');
  server.kill('SIGUSR2');
  const m = await server.output(/heap snapshot: (.*)\n/);
  const { file, control } = JSON.parse(m[1]!) as { file: string; control: string };
  const { strings } = JSON.parse(readFileSync(file, 'utf8')) as { strings: string[] };
  rmSync(file);
  const holds = (needle: string) => strings.some((s) => s.includes(needle));
  t.ok(holds(control), 'the search finds a key-shaped string that is still reachable');
  t.notOk(holds(tok.pin), 'the PIN is not a string on the heap');
  t.notOk(holds(Buffer.from(tok.pin).toString('hex')), 'nor as hex');
  t.notOk(holds(Buffer.from(tok.pin).toString('base64')), 'nor as base64');
  server.kill();
  t.equal((await server.exit).code, 0);
});

t.test('the token goes away while running: 503 for a new data key, reads keep serving, nothing crashes', async (t) => {
  const tok = softToken(t);
  const svc = await startTestService(t, await testEnv(t, 'embedded', { ...tok.env, ENCRYPTION_KEY: '' }));
  const seeded = await seedHomelab(svc.services);
  const admin = await signupAdmin(svc.url);
  const login = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret },
  });
  t.equal(login.status, 200);
  const read = () =>
    request(`${svc.url}/api/v3/secrets/raw/IDP_SECRET_KEY?workspaceId=${seeded.projectId}&environment=prod&secretPath=/`, {
      token: login.body.accessToken,
    });
  t.equal((await read()).body.secret?.secretValue, INVENTORY.IDP_SECRET_KEY, 'read before');

  tok.remove();
  t.teardown(() => tok.restore());
  const created = await request(`${svc.url}/api/v1/projects`, {
    method: 'POST',
    token: admin.token,
    json: { projectName: 'needs a new data key' },
  });
  t.equal(created.status, 503, 'creating a project (a new data key) is 503');
  t.equal(created.headers.get('retry-after'), '5');
  const after = await read();
  t.equal(after.status, 200, 'a read with a cached data key still works');
  t.equal(after.body.secret?.secretValue, INVENTORY.IDP_SECRET_KEY);
  const again = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret },
  });
  t.equal(again.status, 200, 'machine login (MAC under the cached system key) still works');
  t.equal((await fetch(`${svc.url}/api/status`)).status, 200, 'the service is up');
});

// rotate-key between providers: the local ENCRYPTION_KEY to a PKCS#11 token's key
// (SoftHSM2) and back, losing nothing: every secret reads back identical, over HTTP
// too, and each old key is refused afterwards.
import t, { type Test } from 'tap';
import { WrongEncryptionKeyError } from '../../../server/domain/keyring.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { INVENTORY, startTestService } from '../../helpers/service.js';
import { softhsmAvailable, softToken, SOFTHSM_MODULE } from '../../helpers/softhsm.js';
import { openServices, readAll, runCli } from './helpers.js';
import { fixture, newKey, type Fixture } from './rotation.js';

t.setTimeout(360_000);

if (!softhsmAvailable()) {
  t.comment(`SoftHSM2 not installed (${SOFTHSM_MODULE}): skipped`);
  process.exit(0);
}

const prefixed = (env: Record<string, string>, prefix: string) =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [prefix + k, v]));

/** Every secret identical through the domain, the homelab ones over HTTP with the machine identity, and a new project works. */
async function assertReadsBack(t: Test, f: Fixture, keyEnv: Record<string, string>, what: string) {
  const services = await openServices(t, { ...f.env, ...keyEnv });
  t.same(await readAll(services), f.before, `${what}: every secret reads back identical`);
  await services.close();
  const svc = await startTestService(t, { ...f.env, ...keyEnv, PORT: '0', HOST: '127.0.0.1' });
  const login = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    json: { clientId: f.seeded.clientId, clientSecret: f.seeded.clientSecret },
  });
  t.equal(login.status, 200, `${what}: the machine identity logs in over HTTP`);
  const list = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, {
    token: login.body.accessToken,
  });
  t.equal(list.status, 200);
  const values = Object.fromEntries((list.body.secrets as Array<{ secretKey: string; secretValue: string }>).map((s) => [s.secretKey, s.secretValue]));
  t.same(values, INVENTORY, `${what}: the ESO list over HTTP returns every value`);
  await svc.close();
}

async function assertRefused(t: Test, f: Fixture, keyEnv: Record<string, string>, what: string) {
  const err = await openServices(t, { ...f.env, ...keyEnv }).then(
    (s) => s.close().then(() => null),
    (e: unknown) => e,
  );
  t.ok(err instanceof WrongEncryptionKeyError, `${what} is refused at start (the canary)`);
}

t.test('local -> pkcs11 -> local: nothing lost, each old key refused', async (t) => {
  const f = await fixture(t, 'postgres');
  const tok = softToken(t); // sets SOFTHSM2_CONF for this process, which the CLI inherits below
  const conf = { SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! };
  const localKey = { ENCRYPTION_KEY: f.env.ENCRYPTION_KEY! };

  // 1. local -> pkcs11
  const toHsm = await runCli(['rotate-key'], { ...f.env, ...conf, ...prefixed(tok.env, 'NEW_') });
  t.equal(toHsm.code, 0, toHsm.stderr);
  t.match(toHsm.stdout, /root key rotated: version 1 -> 2 \(local -> pkcs11\)/);
  t.match(toHsm.stdout, /data keys re-wrapped: 5/);
  t.match(toHsm.stdout, /secrets verified with the new key alone: 15/);
  t.match(toHsm.stdout, /KEY_PROVIDER=pkcs11/);
  t.notOk(toHsm.stdout.includes(tok.pin) || toHsm.stderr.includes(tok.pin), 'no PIN printed');
  const hsmKey = { ...tok.env, ENCRYPTION_KEY: '' };
  await assertReadsBack(t, f, hsmKey, 'on the token');
  await assertRefused(t, f, localKey, 'the old ENCRYPTION_KEY');

  // A second run is refused: the current key is the token's now.
  const again = await runCli(['rotate-key'], { ...f.env, ...conf, ...prefixed(tok.env, 'NEW_') });
  t.equal(again.code, 1);
  t.match(again.stderr, /ENCRYPTION_KEY is not the current key.*The NEW_PKCS11_\* key already opens it/);

  // 2. pkcs11 -> local, with a fresh key
  const back = newKey();
  const toLocal = await runCli(['rotate-key'], { ...f.env, ...conf, ...tok.env, ENCRYPTION_KEY: '', NEW_ENCRYPTION_KEY: back });
  t.equal(toLocal.code, 0, toLocal.stderr);
  t.match(toLocal.stdout, /root key rotated: version 2 -> 3 \(pkcs11 -> local\)/);
  t.match(toLocal.stdout, /secrets verified with the new key alone: 15/);
  await assertReadsBack(t, f, { ENCRYPTION_KEY: back }, 'back on a local key');
  await assertRefused(t, f, hsmKey, 'the token\'s key');

  const services = await openServices(t, { ...f.env, ENCRYPTION_KEY: back });
  const rotations = await services.db.sql`select metadata from audit_log where event_type = 'rotate-root-key' order by id`;
  t.match(rotations, [
    { metadata: { fromVersion: 1, toVersion: 2, fromProvider: 'local', toProvider: 'pkcs11' } },
    { metadata: { fromVersion: 2, toVersion: 3, fromProvider: 'pkcs11', toProvider: 'local' } },
  ], 'both rotations are in the audit chain');
  await services.close();
  const audit = await runCli(['audit-verify'], { ...f.env, ENCRYPTION_KEY: back });
  t.equal(audit.code, 0, audit.stdout + audit.stderr);
});

t.test('refusals: a wrong NEW_PKCS11_PIN, the same token key twice', async (t) => {
  const f = await fixture(t, 'postgres');
  const tok = softToken(t); // sets SOFTHSM2_CONF for this process, which the CLI inherits below
  const conf = { SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! };
  const wrongPin = await runCli(['rotate-key'], { ...f.env, ...conf, ...prefixed({ ...tok.env, PKCS11_PIN_FILE: '', PKCS11_PIN: 'nope' }, 'NEW_') });
  t.equal(wrongPin.code, 1);
  t.match(wrongPin.stderr, /NEW_PKCS11_PIN: the token refused the PIN \(CKR_PIN_INCORRECT\)\. Nothing was changed\./);
  const same = await runCli(['rotate-key'], { ...f.env, ...conf, ...tok.env, ENCRYPTION_KEY: '', NEW_KEY_PROVIDER: 'pkcs11' });
  t.equal(same.code, 1);
  t.match(same.stderr, /the NEW_PKCS11_\* settings name the current key/);
  await assertReadsBack(t, f, { ENCRYPTION_KEY: f.env.ENCRYPTION_KEY! }, 'unchanged');
});

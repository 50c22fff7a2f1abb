// rotate-key end to end: after a rotation the service starts with the new key and
// reads everything back, and refuses the old key; a failure or a kill -9 inside the
// transaction leaves the old key working and nothing lost.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { WrongEncryptionKeyError } from '../../../server/domain/keyring.js';
import { seedHomelab, type Seeded } from '../../helpers/service.js';
import { cliEnv, openServices, readAll, runCli, spawnCli, type Backend, type StoredSecret } from './helpers.js';

const newKey = () => randomBytes(16).toString('hex');

interface Fixture {
  env: Record<string, string>;
  before: Map<string, StoredSecret>;
  seeded: Seeded;
}

/** homelab (14 secrets, homelab-eso), a second project with a folder, a comment and a history, and an empty one. */
async function fixture(t: Test, backend: Backend): Promise<Fixture> {
  const env = await cliEnv(t, backend);
  const services = await openServices(t, env);
  const seeded = await seedHomelab(services);
  await services.projects.create(SYSTEM, { name: 'other' });
  await services.projects.createFolder(SYSTEM, { project: { slug: 'other' }, environment: 'dev', name: 'app' });
  const ref = { project: { slug: 'other' }, environment: 'dev', secretPath: '/app' };
  await services.secrets.create(SYSTEM, { ...ref, key: 'DB_URL', value: 'postgres://a:b@db/app ✓', comment: 'with a comment' });
  await services.secrets.update(SYSTEM, { ...ref, key: 'DB_URL', value: 'postgres://a:c@db/app ✓' });
  await services.projects.create(SYSTEM, { name: 'empty' });
  const before = await readAll(services);
  await services.close();
  t.equal(before.size, 15, 'fixture: 15 secrets');
  return { env, before, seeded };
}

async function assertOpensWith(t: Test, f: Fixture, key: string, what: string) {
  const services = await openServices(t, { ...f.env, ENCRYPTION_KEY: key });
  t.same(await readAll(services), f.before, `${what}: every secret reads back identical`);
  const login = await services.machineAuth.login({ clientId: f.seeded.clientId, clientSecret: f.seeded.clientSecret });
  t.type(login.accessToken, 'string', `${what}: the machine identity still logs in`);
  await services.close();
}

async function assertRefused(t: Test, f: Fixture, key: string, what: string) {
  const err = await openServices(t, { ...f.env, ENCRYPTION_KEY: key }).then(
    (s) => s.close().then(() => null),
    (e: unknown) => e,
  );
  t.ok(err instanceof WrongEncryptionKeyError, `${what} is refused at start (the canary)`);
  t.match((err as Error | null)?.message, /ENCRYPTION_KEY does not match the key this database was encrypted with/);
}

const rotate = (f: Fixture, next: string, extra: Record<string, string> = {}, args: string[] = []) =>
  runCli(['rotate-key', ...args], { ...f.env, NEW_ENCRYPTION_KEY: next, ...extra });

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`rotation: the new key starts and reads everything, the old key is refused (${backend})`, async (t) => {
    const f = await fixture(t, backend);
    const next = newKey();
    const r = await rotate(f, next);
    t.equal(r.code, 0, 'exit 0', { stderr: r.stderr });
    t.match(r.stdout, /root key rotated: version 1 -> 2/);
    t.match(r.stdout, /data keys re-wrapped: 5 \(1 system, 1 audit, 3 project\)/);
    t.match(r.stdout, /secrets verified with the new key alone: 15 \(in 3 projects\)/);
    t.match(r.stdout, /Set ENCRYPTION_KEY to the new key everywhere/);
    t.notOk((r.stdout + r.stderr).includes(next) || (r.stdout + r.stderr).includes(f.env.ENCRYPTION_KEY!), 'no key printed');

    await assertOpensWith(t, f, next, 'new key');
    await assertRefused(t, f, f.env.ENCRYPTION_KEY!, 'the old key');

    // The service works on under the new root key version, and the audit chain holds.
    const services = await openServices(t, { ...f.env, ENCRYPTION_KEY: next });
    t.equal(services.crypto.rootKeyVersion, 2);
    await services.projects.create(SYSTEM, { name: 'after-rotation' });
    t.same(await services.store.keys.rootKeyVersions(), [2]);
    const rotations = await services.db.sql`select metadata from audit_log where event_type = 'rotate-root-key'`;
    t.match(rotations, [{ metadata: { fromVersion: 1, toVersion: 2, keysRewrapped: 5 } }], 'the rotation is in the chain (MACed under the new root key)');
    await services.close();
    const audit = await runCli(['audit-verify'], { ...f.env, ENCRYPTION_KEY: next });
    t.equal(audit.code, 0, audit.stdout + audit.stderr);
    t.match(audit.stdout, /^audit chain ok: \d+ entries$/m);
  });
}

t.test('rotating twice in a row; a swapped pair of keys gets a hint', async (t) => {
  const f = await fixture(t, 'postgres');
  const second = newKey();
  const third = newKey();
  t.equal((await rotate(f, second)).code, 0);

  const swapped = await runCli(['rotate-key'], { ...f.env, ENCRYPTION_KEY: newKey(), NEW_ENCRYPTION_KEY: second });
  t.equal(swapped.code, 1);
  t.match(swapped.stderr, /ENCRYPTION_KEY is not the current key/);
  t.match(swapped.stderr, /NEW_ENCRYPTION_KEY already opens it: the rotation seems done/);

  const again = await runCli(['rotate-key'], { ...f.env, ENCRYPTION_KEY: second, NEW_ENCRYPTION_KEY: third });
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /version 2 -> 3/);
  await assertOpensWith(t, f, third, 'third key');
  await assertRefused(t, f, second, 'the second key');
  await assertRefused(t, f, f.env.ENCRYPTION_KEY!, 'the first key');
});

t.test('VAULT_ROTATE_FAIL_AFTER=1: rolled back, the old key works, the new one is refused', async (t) => {
  const f = await fixture(t, 'postgres');
  const next = newKey();
  const r = await rotate(f, next, { VAULT_ROTATE_FAIL_AFTER: '1' });
  t.equal(r.code, 1);
  t.match(r.stderr, /rotation failed and was rolled back: fault injected by VAULT_ROTATE_FAIL_AFTER=1/);
  t.match(r.stderr, /Nothing was changed: ENCRYPTION_KEY is still the key of this database/);
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'old key after the failure');
  await assertRefused(t, f, next, 'the new key');

  // And a clean retry then succeeds.
  t.equal((await rotate(f, next)).code, 0);
  await assertOpensWith(t, f, next, 'new key after the retry');
});

t.test('SIGKILL in the middle of the transaction: the old key works, nothing lost', async (t) => {
  const f = await fixture(t, 'postgres');
  const next = newKey();
  const cli = spawnCli(['rotate-key'], { ...f.env, NEW_ENCRYPTION_KEY: next, VAULT_ROTATE_PAUSE_AFTER: '1' });
  await cli.stderrMatch(/^paused$/m);
  cli.child.kill('SIGKILL');
  const r = await cli.exit;
  t.equal(r.signal, 'SIGKILL', 'killed mid-transaction');
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'old key after the kill');
  await assertRefused(t, f, next, 'the new key');
});

t.test('--dry-run verifies and changes nothing', async (t) => {
  const f = await fixture(t, 'postgres');
  const next = newKey();
  const r = await rotate(f, next, {}, ['--dry-run']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /dry run: the rotation from root key version 1 to 2 would succeed; rolled back, nothing changed/);
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'old key after the dry run');
  await assertRefused(t, f, next, 'the new key');
});

t.test('refusals: same key, key in argv, wrong current key, running service, missing or malformed keys', async (t) => {
  const f = await fixture(t, 'postgres');

  const same = await rotate(f, f.env.ENCRYPTION_KEY!.toUpperCase());
  t.equal(same.code, 1);
  t.match(same.stderr, /NEW_ENCRYPTION_KEY is the same as ENCRYPTION_KEY/);

  for (const args of [['--new-key', newKey()], [`--new-key=${newKey()}`], [newKey()]]) {
    const argv = await runCli(['rotate-key', ...args], { ...f.env, NEW_ENCRYPTION_KEY: newKey() });
    t.equal(argv.code, 2, `argv ${args[0]!.slice(0, 9)}…: usage error`);
    t.match(argv.stderr, /refusing an argument that looks like a key/);
  }

  const wrong = await runCli(['rotate-key'], { ...f.env, ENCRYPTION_KEY: newKey(), NEW_ENCRYPTION_KEY: newKey() });
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /ENCRYPTION_KEY is not the current key/);
  t.notMatch(wrong.stderr, /already opens/);

  const missing = await runCli(['rotate-key'], f.env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /NEW_ENCRYPTION_KEY must be 32 hex characters/);
  const malformed = await rotate(f, 'xyz');
  t.equal(malformed.code, 1);
  t.match(malformed.stderr, /NEW_ENCRYPTION_KEY must be 32 hex characters/);

  const services = await openServices(t, f.env);
  const running = await rotate(f, newKey());
  t.equal(running.code, 1);
  t.match(running.stderr, /other vault-standalone connections? to this database: is the service running\?/);
  await services.close();

  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'the original key after every refusal');
});

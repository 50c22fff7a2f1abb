// rotate-key end to end: after a rotation the service starts with the new key and
// reads everything back, and refuses the old key; a failure inside the transaction
// leaves the old key working and nothing lost. (A kill -9 mid-rotation, a replica
// starting during it and stale root key versions: rotateKeyConcurrency.test.ts.)
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { openServices, runCli, spawnCliWithHooks, type Backend } from './helpers.js';
import { assertOpensWith, assertRefused, fixture, newKey, rotate } from './rotation.js';

// Each test starts the CLI and the service several times, on the embedded database
// too (seconds per start on a loaded 2-core machine): more than the default per-file budget.
t.setTimeout(360_000);

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

t.test('a fault after the first re-wrap: rolled back, the old key works, the new one is refused', async (t) => {
  const f = await fixture(t, 'postgres');
  const next = newKey();
  const r = await spawnCliWithHooks(['rotate-key'], { ...f.env, NEW_ENCRYPTION_KEY: next }, { failAt: 1 }).exit;
  t.equal(r.code, 1);
  t.match(r.stderr, /rotation failed and was rolled back: fault injected by the test at step 1/);
  t.match(r.stderr, /Nothing was changed: ENCRYPTION_KEY is still the key of this database/);
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'old key after the failure');
  await assertRefused(t, f, next, 'the new key');

  // And a clean retry then succeeds.
  t.equal((await rotate(f, next)).code, 0);
  await assertOpensWith(t, f, next, 'new key after the retry');
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

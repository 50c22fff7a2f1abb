// rotate-key under concurrency and crashes: a kill -9 in the middle of the transaction
// (both backends), a replica starting while the rotation runs (PostgreSQL only: the
// embedded database is a directory that one process opens in-process, nothing a second
// process could connect to while the command holds it), and data keys under a stale
// root key version refused by storage (both backends).
import postgres from 'postgres';
import t from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { SYSTEM } from '../../../server/domain/access.js';
import { projectsDomain } from '../../../server/domain/projects.js';
import { StaleRootKeyVersionError } from '../../../storage/keys.js';
import { openServices, readAll, spawnCliWithHooks, type Backend } from './helpers.js';
import { assertOpensWith, assertRefused, fixture, newKey, rotate } from './rotation.js';

// Each test starts the CLI and the service several times, on the embedded database
// too (seconds per start on a loaded 2-core machine): more than the default per-file budget.
t.setTimeout(360_000);

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`SIGKILL in the middle of the transaction: the old key works, nothing lost (${backend})`, async (t) => {
    const f = await fixture(t, backend);
    const next = newKey();
    const cli = spawnCliWithHooks(['rotate-key'], { ...f.env, NEW_ENCRYPTION_KEY: next }, { pauseAt: 1 });
    await cli.stderrMatch(/^paused$/m);
    cli.child.kill('SIGKILL');
    const r = await cli.exit;
    t.equal(r.signal, 'SIGKILL', 'killed mid-transaction');
    await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'old key after the kill');
    await assertRefused(t, f, next, 'the new key');
    // And a clean retry then succeeds.
    const retry = await rotate(f, next);
    t.equal(retry.code, 0, retry.stderr);
    await assertOpensWith(t, f, next, 'new key after the retry');
  });
}

/** Resolves true once `probe` returns true, false once `stop` does; both are asked again after every short pause. */
async function until(probe: () => Promise<boolean>, stop: () => boolean): Promise<boolean> {
  for (;;) {
    if (stop()) return false;
    if (await probe()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
}

t.test('a replica starting mid-rotation waits on the key tables, and the rotation then rolls back', async (t) => {
  const f = await fixture(t, 'postgres');
  const next = newKey();
  const cli = spawnCliWithHooks(['rotate-key'], { ...f.env, NEW_ENCRYPTION_KEY: next }, { pauseAt: 1 });
  await cli.stderrMatch(/^paused$/m);

  // A replica with the old key starts while the rotation's transaction is open.
  let settled = false;
  const starting = openServices(t, f.env).finally(() => (settled = true));
  const observer = postgres(f.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  t.teardown(() => observer.end({ timeout: 5 }));
  // It must block on the key tables (ACCESS EXCLUSIVE), not read version 1 and start.
  const blocked = await until(async () => {
    const [row] = await observer<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'vault-standalone' and wait_event_type = 'Lock'`;
    return (row?.n ?? 0) > 0;
  }, () => settled);
  t.ok(blocked, 'the replica waits on the key tables instead of starting with the old key');
  if (!blocked) {
    cli.child.kill('SIGKILL');
    await cli.exit;
    return;
  }

  cli.child.kill('SIGUSR2'); // resume: re-wrap the rest, verify, then the check before commit
  const r = await cli.exit;
  t.equal(r.code, 1, 'the rotation refuses to commit');
  t.match(r.stderr, /rotation failed and was rolled back: \d+ other vault-standalone connections? to this database/);

  const replica = await starting;
  t.equal(replica.crypto.rootKeyVersion, 1, 'the replica started on the old root key version');
  t.same(await readAll(replica), f.before, 'and reads every secret with the old key');
  await replica.projects.create(SYSTEM, { name: 'made-by-the-replica' });
  t.same(await replica.store.keys.rootKeyVersions(), [1], 'its new project key is under the current version');
  await replica.close();
  await assertRefused(t, f, next, 'the new key');
});

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`after a rotation, storage refuses a data key under the old root key version (${backend})`, async (t) => {
    const f = await fixture(t, backend);
    const next = newKey();
    t.equal((await rotate(f, next)).code, 0);

    const services = await openServices(t, { ...f.env, ENCRYPTION_KEY: next });
    const { store } = services;
    t.equal(await store.keys.currentRootKeyVersion(), 2, 'the rotation moved the current version');
    const keysBefore = await store.keys.all();

    // A replica that read version 1 before the rotation committed, still holding the old key.
    const stale = await createCrypto({ encryptionKeyHex: f.env.ENCRYPTION_KEY!, rootKeyVersion: 1, threads: 1 });
    t.teardown(() => stale.close());
    const staleProjects = projectsDomain({ store, crypto: stale, access: services.access, changes: services.changes });
    await t.rejects(staleProjects.create(SYSTEM, { name: 'stale' }), StaleRootKeyVersionError, 'project creation is refused');
    t.equal(await store.projects.bySlug('stale'), undefined, 'no project half-written');

    for (const version of [1, 3]) {
      const refused = await store.keys.insert({ purpose: 'project', rootKeyVersion: version, wrapped: Buffer.alloc(60) }).then(
        () => null,
        (e: unknown) => e,
      );
      t.ok(refused instanceof StaleRootKeyVersionError, `a data key under version ${version} is refused`);
      t.match((refused as Error | null)?.message, new RegExp(`root key version ${version}: it is not the current root key version`));
    }
    t.same(await store.keys.all(), keysBefore, 'no key row added');

    await services.projects.create(SYSTEM, { name: 'current' });
    t.same(await store.keys.rootKeyVersions(), [2], 'a key under the current version is stored');
    await services.close();
  });
}


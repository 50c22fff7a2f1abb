// A folder's rows as the snapshot reads them: in key order, each with its data key's
// wrapped bytes read in the same statement, one Buffer per key however many rows.
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { BACKENDS, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`listByFolders (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const { store, folders } = svc.services;
    const sql = store.sql;
    const seeded = await seedHomelab(svc.services);
    await folders.create(SYSTEM, { project: { id: seeded.projectId }, environment: 'prod', parentPath: '/', name: 'empty' });
    const env = (await store.projects.byId(seeded.projectId))!.environments.find((e) => e.slug === 'prod')!;
    const root = (await store.folders.byPath(env.id, '/'))!;
    const empty = (await store.folders.byPath(env.id, '/empty'))!;

    const rows = await store.secrets.listByFolders([root.id]);
    const n = (await sql<{ n: number }[]>`select count(*)::int as n from secrets where folder_id = ${root.id}`)[0]!.n;
    t.equal(rows.length, n, 'every secret, and nothing else (no key row among them)');
    t.ok(n > 2, 'a folder with several secrets');
    t.same(rows.map((r) => r.key), rows.map((r) => r.key).sort(), 'in key order');
    const [stored] = await sql<{ wrapped: Buffer }[]>`select wrapped from crypto_keys where id = ${rows[0]!.dataKeyId}`;
    t.ok(rows.every((r) => r.wrappedKey.equals(stored!.wrapped)), "each row carries its key's wrapped bytes");
    t.ok(rows.every((r) => r.wrappedKey === rows[0]!.wrappedKey), 'one Buffer for the rows under one key');

    // As during an online re-key: some rows under another key.
    const other = randomUUID();
    const [current] = await sql<{ rootKeyVersion: number }[]>`select root_key_version from crypto_keys where id = ${rows[0]!.dataKeyId}`;
    await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${other}, 'project', ${current!.rootKeyVersion}, ${randomBytes(60)})`;
    const moved = rows.filter((_, i) => i % 2 === 1).map((r) => r.id);
    await sql`update secrets set data_key_id = ${other} where id = any(${sql.array(moved)}::uuid[])`;
    const [otherStored] = await sql<{ wrapped: Buffer }[]>`select wrapped from crypto_keys where id = ${other}`;
    const mixed = await store.secrets.listByFolders([root.id]);
    t.equal(mixed.length, n, 'still every secret once');
    for (const r of mixed) {
      const expected = moved.includes(r.id) ? { id: other, wrapped: otherStored!.wrapped } : { id: rows[0]!.dataKeyId, wrapped: stored!.wrapped };
      t.equal(r.dataKeyId, expected.id, `${r.key}: its own key`);
      t.ok(r.wrappedKey.equals(expected.wrapped), `${r.key}: that key's wrapped bytes`);
    }
    t.equal(new Set(mixed.map((r) => r.wrappedKey)).size, 2, 'one Buffer per key');

    t.same(await store.secrets.listByFolders([empty.id]), [], 'an empty folder: no rows');
    t.same(await store.secrets.listByFolders([]), [], 'no folder: no rows');
  });
}

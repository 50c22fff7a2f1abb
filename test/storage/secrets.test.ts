// A folder's rows as the snapshot reads them: in key order, each with its data key's
// wrapped bytes read in the same statement, one Buffer per key however many rows.
import { randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { LIST_PART_ROWS, secretsStore, type CipherRowPart } from '../../storage/secrets.js';
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

/** A service with homelab seeded, its store, and prod's root folder. */
async function homelabRoot(t: Test, backend: (typeof BACKENDS)[number]) {
  const svc = await startTestService(t, await testEnv(t, backend));
  const { store } = svc.services;
  const seeded = await seedHomelab(svc.services);
  const env = (await store.projects.byId(seeded.projectId))!.environments.find((e) => e.slug === 'prod')!;
  return { store, sql: store.sql, root: (await store.folders.byPath(env.id, '/'))!, services: svc.services, projectId: seeded.projectId };
}

for (const backend of BACKENDS) {
  t.test(`listByFolders hands over the rows in parts as it reads them (${backend})`, async (t) => {
    const { store, root, services, projectId } = await homelabRoot(t, backend);
    for (let at = 0; at < 4500; at += 900) {
      const secrets = Array.from({ length: 900 }, (_, k) => ({ key: `P_${String(at + k).padStart(5, '0')}`, value: `v${at + k}` }));
      await services.secrets.createMany(SYSTEM, { project: { id: projectId }, environment: 'prod', secretPath: '/', secrets });
    }
    const parts: CipherRowPart[] = [];
    const rows = await store.secrets.listByFolders([root.id], (part) => {
      t.ok(part.every((r) => !('wrappedKey' in r) || r.wrappedKey === undefined), 'a part comes before its wrapped keys are read');
      parts.push(part);
    });
    t.same(parts.map((p) => p.length), [LIST_PART_ROWS, LIST_PART_ROWS, 4514 - 2 * LIST_PART_ROWS], 'parts of LIST_PART_ROWS, in order');
    t.ok(parts.flat().every((r, i) => r === rows[i]) && rows.length === 4514, 'the parts are the rows returned, the same objects in the same order');
    t.ok(rows.every((r, i) => i === 0 || rows[i - 1]!.key < r.key), 'by key');
    t.ok(rows.every((r) => Buffer.isBuffer(r.wrappedKey)), 'each returned with its wrapped key');
    t.same(await store.secrets.listByFolders([root.id]), rows, 'what the read without parts returns');
  });
}

for (const backend of BACKENDS) {
  t.test(`listByFolders when an online re-key deletes the rows' key between the rows and the key (${backend})`, async (t) => {
    const { store, sql, root } = await homelabRoot(t, backend);
    const before = await store.secrets.listByFolders([root.id]);
    const oldKey = before[0]!.dataKeyId;
    const newKey = randomUUID();
    const newWrapped = randomBytes(60);
    const [current] = await sql<{ rootKeyVersion: number }[]>`select root_key_version from crypto_keys where id = ${oldKey}`;
    await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${newKey}, 'project', ${current!.rootKeyVersion}, ${newWrapped})`;

    // What a re-key's last step commits: every row moved to the new key, the old key deleted.
    const finishRekey = async () => {
      await sql`update projects set data_key_id = ${newKey} where data_key_id = ${oldKey}`;
      await sql`update projects set previous_data_key_id = null where previous_data_key_id = ${oldKey}`;
      await sql`update secrets set data_key_id = ${newKey} where data_key_id = ${oldKey}`;
      await sql`update secret_versions set data_key_id = ${newKey} where data_key_id = ${oldKey}`;
      await sql`delete from crypto_keys where id = ${oldKey}`;
    };
    // The store on a connection that lets the re-key commit right after the rows are read.
    let rowReads = 0;
    let rekeyed = false;
    const interleaved = Object.assign(
      (strings: TemplateStringsArray, ...args: unknown[]) => {
        const text = strings.join('');
        if (text.includes('from secrets')) rowReads++;
        if (text.includes('from crypto_keys') && !rekeyed) {
          rekeyed = true;
          return finishRekey().then(() => sql(strings, ...(args as never[])));
        }
        return sql(strings, ...(args as never[]));
      },
      { unsafe: sql.unsafe, array: sql.array },
    ) as unknown as typeof sql;

    const handed: CipherRowPart[] = [];
    const rows = await secretsStore(interleaved).listByFolders([root.id], (part) => handed.push(part));
    t.ok(rekeyed, 'the re-key committed between the rows and their key');
    t.equal(handed.length, 1, 'only the first read handed its rows over');
    t.ok(handed[0]!.every((r, i) => r !== rows[i] && r.dataKeyId === oldKey), 'which are not the rows returned (a reader compares them)');
    t.equal(rowReads, 2, 'the rows were read again');
    t.equal(rows.length, before.length, 'every secret');
    t.ok(rows.every((r) => r.dataKeyId === newKey && r.wrappedKey.equals(newWrapped)), 'each under the new key, with its wrapped bytes');
    const [gone] = await sql<{ n: number }[]>`select count(*)::int as n from crypto_keys where id = ${oldKey}`;
    t.equal(gone!.n, 0, 'the old key is gone');
  });
}

for (const backend of BACKENDS) {
  t.test(`insertMany writes each secret and its first version (${backend})`, async (t) => {
    const { store, sql, root } = await homelabRoot(t, backend);
    const [first] = await sql<{ dataKeyId: string }[]>`select data_key_id from secrets where folder_id = ${root.id} limit 1`;
    const dataKeyId = first!.dataKeyId;
    const given = Array.from({ length: 300 }, (_, i) => ({
      id: randomUUID(),
      folderId: root.id,
      key: `MANY_${i}`,
      valueBlob: randomBytes(40 + (i % 7)),
      commentBlob: i % 3 === 0 ? null : randomBytes(30),
      skipMultilineEncoding: i % 2 === 0,
    }));
    const inserted = await store.transaction((s) => s.secrets.insertMany(given, { actorType: 'user', actorId: 'u-1' }, dataKeyId));
    t.same(inserted.map((r) => r.id), given.map((g) => g.id), 'the rows, in the order given');
    t.ok(inserted.every((r, i) => r.valueBlob.equals(given[i]!.valueBlob) && r.version === 1 && r.skipMultilineEncoding === given[i]!.skipMultilineEncoding), 'as given');
    const versions = await sql<{ secretId: string; folderId: string; key: string; version: number; valueBlob: Buffer; commentBlob: Buffer | null; actorType: string; actorId: string; dataKeyId: string }[]>`
      select secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id, data_key_id from secret_versions
      where secret_id = any(${sql.array(given.map((g) => g.id))}::uuid[])`;
    t.equal(versions.length, given.length, 'one version row per secret');
    const byId = new Map(versions.map((v) => [v.secretId, v]));
    const wrong = given.filter((g) => {
      const v = byId.get(g.id);
      return !v || v.folderId !== g.folderId || v.key !== g.key || v.version !== 1 || !v.valueBlob.equals(g.valueBlob) ||
        (g.commentBlob === null ? v.commentBlob !== null : !g.commentBlob.equals(v.commentBlob!)) || v.actorType !== 'user' || v.actorId !== 'u-1' || v.dataKeyId !== dataKeyId;
    });
    t.same(wrong.map((g) => g.key), [], "each version row holds its secret's blobs, key, folder, actor and data key");
  });
}

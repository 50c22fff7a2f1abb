// The read path's crypto budget, counted on the real crypto pool: one task per request
// where possible, concurrent identical lists share it, and nothing is opened that the
// response does not contain (a single read with references opens the row, then only
// what it names).
import t from 'tap';
import type { Crypto } from '../../../crypto/index.js';
import { SYSTEM, type Actor } from '../../../server/domain/access.js';
import type { FolderSnapshot } from '../../../server/domain/caches.js';
import { folderSnapshots } from '../../../server/domain/snapshots.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { secretsDomain } from '../../../server/domain/secrets.js';
import { rawListText, secretRaw } from '../../../server/routes/shape.js';
import { BACKENDS, INVENTORY, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

type Opener = Pick<Crypto, 'openMany' | 'sealMany'>;

/** What one openMany call was asked to open: "KEY:value" / "KEY:comment", from each AAD. */
type Task = string[];

function countingCrypto(real: Opener): { crypto: Opener; tasks: Task[] } {
  const tasks: Task[] = [];
  return {
    tasks,
    crypto: {
      openMany(key, keyAad, items) {
        // Recorded when the task is asked for, so concurrent callers are counted apart.
        tasks.push(
          items.map((i) => {
            // secretAad(): …:<secretId>:<key>:<version>:<part>; keys hold no ':'.
            const parts = i.aad.split(':');
            return `${parts.at(-3)}:${parts.at(-1)}`;
          }),
        );
        return real.openMany(key, keyAad, items);
      },
      sealMany: (key, keyAad, items) => real.sealMany(key, keyAad, items),
    },
  };
}

for (const backend of BACKENDS) {
  t.test(`secret reads: crypto tasks (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const s = svc.services;
    const seeded = await seedHomelab(s);
    const project = { slug: 'homelab' };
    await s.folders.create(SYSTEM, { project, environment: 'prod', name: 'refs' });
    await s.folders.create(SYSTEM, { project, environment: 'dev', name: 'app' });
    const put = (environment: string, secretPath: string, key: string, value: string, comment?: string) =>
      s.secrets.create(SYSTEM, { project, environment, secretPath, key, value, comment });
    await put('prod', '/refs', 'A', 'plain-a');
    await put('prod', '/refs', 'B', 'plain-b');
    await put('prod', '/refs', 'C', 'plain-c');
    await put('prod', '/refs', 'UNUSED', 'never-opened-by-a-single-read');
    await put('prod', '/refs', 'NOREF', 'plain');
    await put('prod', '/refs', 'REF', '${A}:${B}', 'built from A and B');
    await put('prod', '/refs', 'NESTED', '${REF}/${C}');
    await put('prod', '/refs', 'CROSS', '${dev.app.DB}|${A}');
    await put('prod', '/refs', 'SELF', 'x${SELF}');
    await put('dev', '/app', 'DB', 'dev-db');

    const counted = countingCrypto(s.crypto);
    const secrets = secretsDomain({
      store: s.store,
      crypto: counted.crypto,
      access: s.access,
      snapshots: folderSnapshots({ store: s.store, caches: s.caches }),
      changes: s.changes,
    });
    const eso: Actor = { kind: 'identity', identityId: seeded.identityId };
    const tasksOf = async <T>(read: () => Promise<T>): Promise<{ result: T; tasks: Task[] }> => {
      counted.tasks.length = 0;
      const result = await read();
      return { result, tasks: [...counted.tasks] };
    };
    const get = (secretName: string, extra: { viewSecretValue?: boolean } = {}) =>
      tasksOf(() => secrets.get(eso, { project, environment: 'prod', secretPath: '/refs', secretName, expandSecretReferences: true, ...extra }));
    const sorted = (task: Task | undefined) => [...(task ?? [])].sort();

    t.test('a list of the 14 inventory secrets: one task holding exactly their values', async (t) => {
      const { result, tasks } = await tasksOf(() =>
        secrets.list(eso, { project, environment: 'prod', secretPath: '/', expandSecretReferences: true }),
      );
      t.equal(result.length, 14);
      t.same(Object.fromEntries(result.map((v) => [v.key, v.value])), INVENTORY);
      t.equal(tasks.length, 1, 'one task');
      t.same(sorted(tasks[0]), Object.keys(INVENTORY).map((k) => `${k}:value`).sort());
    });

    t.test('concurrent identical lists share one task', async (t) => {
      // A change empties the folder cache: both lists load and open it afresh, together.
      await put('prod', '/', 'ADDED', 'added');
      const { result, tasks } = await tasksOf(() =>
        Promise.all([1, 2, 3].map(() => secrets.list(eso, { project, environment: 'prod', secretPath: '/', expandSecretReferences: true }))),
      );
      t.equal(tasks.length, 1, 'three concurrent lists, one task');
      for (const r of result) t.equal(r.length, 15);
      t.same(result[1], result[0]);

      const after = await tasksOf(() => secrets.list(eso, { project, environment: 'prod', secretPath: '/' }));
      t.equal(after.tasks.length, 1, 'a later list is a task of its own (plaintext is not kept)');
    });

    t.test('a list with references opens its folder once, then only what lies outside it', async (t) => {
      const { result, tasks } = await tasksOf(() =>
        secrets.list(eso, { project, environment: 'prod', secretPath: '/refs', expandSecretReferences: true }),
      );
      const byKey = Object.fromEntries(result.map((v) => [v.key, v.value]));
      t.equal(byKey.NESTED, 'plain-a:plain-b/plain-c');
      t.equal(byKey.CROSS, 'dev-db|plain-a');
      t.equal(tasks.length, 2);
      t.same(tasks[1], ['DB:value'], 'the second task opens only the other folder\'s target');
    });

    t.test('a single read without references: one task, the row only', async (t) => {
      const { result, tasks } = await get('NOREF');
      t.equal(result.value, 'plain');
      t.same(tasks, [['NOREF:value']]);
    });

    t.test('a single read with same-folder references: the row, then exactly the rows it names', async (t) => {
      // Which rows a value names is known only once it is open: a second task is the
      // price of never opening the rest of the folder.
      const { result, tasks } = await get('REF');
      t.equal(result.value, 'plain-a:plain-b');
      t.equal(result.comment, 'built from A and B');
      t.equal(tasks.length, 2);
      t.same(sorted(tasks[0]), ['REF:comment', 'REF:value'], 'first task: the row, value and comment');
      t.same(sorted(tasks[1]), ['A:value', 'B:value'], 'second task: only the referenced values');
      t.notOk(tasks.flat().some((i) => i.startsWith('UNUSED:') || i.startsWith('NOREF:')), 'nothing else of the folder');
    });

    t.test('a reference to itself needs no second task', async (t) => {
      const { result, tasks } = await get('SELF');
      t.equal(result.value, 'xx${SELF}', 'the cycle guard stops it after one substitution');
      t.same(tasks, [['SELF:value']]);
    });

    t.test('nested references: one task per round, each only what that round names', async (t) => {
      const { result, tasks } = await get('NESTED');
      t.equal(result.value, 'plain-a:plain-b/plain-c');
      t.same(tasks.map(sorted), [['NESTED:value'], ['C:value', 'REF:value'], ['A:value', 'B:value']]);
    });

    t.test('same-folder and cross-environment references of one round share a task', async (t) => {
      const { result, tasks } = await get('CROSS');
      t.equal(result.value, 'dev-db|plain-a');
      t.same(tasks.map(sorted), [['CROSS:value'], ['A:value', 'DB:value']]);
    });

    t.test('values hidden: only the comment is opened, and no reference', async (t) => {
      const hidden = await get('REF', { viewSecretValue: false });
      t.equal(hidden.result.valueHidden, true);
      t.same(hidden.tasks, [['REF:comment']]);
      const nothing = await get('NOREF', { viewSecretValue: false });
      t.same(nothing.tasks, [], 'no comment, no value: no task at all');
    });
  });
}

// A folder's first read renders while it reads: the rows go to the worker in parts as the
// database returns them (listByFolders' onRows), and the answer is the same bytes as a
// render of the finished snapshot. Anything unexpected falls back to that render, or to
// list(); a read that fails half-way fails the request and leaves nothing behind.
for (const backend of BACKENDS) {
  t.test(`a first read of a large folder renders while it reads (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const s = svc.services;
    const seeded = await seedHomelab(s);
    const project = { slug: 'homelab' };
    const eso: Actor = { kind: 'identity', identityId: seeded.identityId };
    await s.folders.create(SYSTEM, { project, environment: 'prod', name: 'big' });
    const N = 4500; // three parts of LIST_PART_ROWS (2,000)
    const valueOf = (i: number) => (i % 97 === 0 ? `quote " ünï ${i}\n` : `value-${i}`);
    for (let at = 0; at < N; at += 900) {
      const secrets = Array.from({ length: 900 }, (_, k) => at + k).map((i) => ({
        key: `BIG_${String(i).padStart(5, '0')}`,
        value: valueOf(i),
        ...(i % 10 === 0 ? { comment: `comment ${i}` } : {}),
      }));
      await s.secrets.createMany(SYSTEM, { project: { id: seeded.projectId }, environment: 'prod', secretPath: '/big', secrets });
    }

    // The store and crypto as the domain sees them, watched: when each part reaches the
    // worker's task, and whether the rows had all been read by then.
    let listed = false;
    let failAfterFirstPart: Error | undefined;
    const store = {
      ...s.store,
      secrets: {
        ...s.store.secrets,
        async listByFolders(ids: readonly string[], onRows?: Parameters<typeof s.store.secrets.listByFolders>[1]) {
          listed = false;
          const rows = await s.store.secrets.listByFolders(ids, onRows && ((part) => {
            onRows(part);
            if (failAfterFirstPart) throw failAfterFirstPart;
          }));
          listed = true;
          return rows;
        },
      },
    } as typeof s.store;
    const renders: Array<{ streamed: boolean; parts: Array<{ items: number; listed: boolean }> }> = [];
    const crypto: Crypto = new Proxy(s.crypto, {
      get(target, prop) {
        if (prop !== 'render') {
          const v = Reflect.get(target, prop) as unknown;
          return typeof v === 'function' ? v.bind(target) : v;
        }
        return (...args: Parameters<Crypto['render']>) => {
          const items = args[4];
          const r = { streamed: Symbol.asyncIterator in Object(items), parts: [] as Array<{ items: number; listed: boolean }> };
          renders.push(r);
          if (r.streamed) {
            const given = items as AsyncIterable<{ blobEnds: Uint32Array }>;
            args[4] = (async function* () {
              for await (const part of given) {
                r.parts.push({ items: part.blobEnds.length, listed });
                yield part as never;
              }
            })();
          }
          return s.crypto.render(...args);
        };
      },
    });
    let lastSnapshot: FolderSnapshot | undefined;
    const snapshots = folderSnapshots({ store, caches: s.caches });
    const watched = {
      get: (...args: Parameters<typeof snapshots.get>) => snapshots.get(...args).then((x) => (lastSnapshot = x)),
      held: (...args: Parameters<typeof snapshots.held>) => {
        const x = snapshots.held(...args);
        if (x) lastSnapshot = x;
        return x;
      },
    };
    const domain = (given: Pick<typeof snapshots, 'get' | 'held'> = watched) => secretsDomain({ store, crypto, access: s.access, snapshots: given, changes: s.changes });
    const q = { project, environment: 'prod', secretPath: '/big', expandSecretReferences: true };
    const coldly = () => {
      s.caches.folders.clear();
      s.crypto.forgetRendered('');
      renders.length = 0;
    };

    coldly();
    const first = await domain().listRendered(eso, q, rawListText);
    t.equal(renders.length, 1);
    t.ok(renders[0]!.streamed, 'the first read streams its rows to the worker');
    t.same(renders[0]!.parts.map((p) => p.items), [2200, 2200, 550], 'in parts as read (values and comments)');
    t.equal(renders[0]!.parts[0]!.listed, false, 'the first part is being opened before the rows are all read');
    const answer = JSON.parse(first!.toString('utf8')) as { secrets: Array<{ secretKey: string; secretValue: string; secretComment: string }> };
    const views = await domain().list(eso, q);
    t.same(answer, JSON.parse(JSON.stringify({ secrets: views.map(secretRaw), imports: [] })), 'the answer list() gives, field for field');
    t.equal(answer.secrets[97]!.secretValue, valueOf(97));

    // The snapshot read already (as a cached one): rendered whole (no parts), to the same bytes.
    const read = lastSnapshot!;
    s.crypto.forgetRendered('');
    renders.length = 0;
    const whole = await domain({ get: async () => read, held: () => undefined }).listRendered(eso, q, rawListText);
    t.same(renders.map((r) => r.streamed), [false], 'a snapshot read already is rendered whole');
    t.ok(whole!.equals(first!), 'the same bytes');

    // A folder of one part (the 14 secrets at /): rendered whole once read, as before (a
    // streamed render would hold the worker through the read with nothing more to open).
    coldly();
    t.ok(await domain().listRendered(eso, { ...q, secretPath: '/' }, rawListText));
    t.same(renders.map((r) => r.streamed), [false], 'a small folder is not streamed');

    // Concurrent first reads share one render (unless the folder cache was bypassed: its
    // bus not live, each read loads and renders its own).
    coldly();
    const d = domain();
    const bypassed = s.caches.folders.counts.bypassed;
    const both = await Promise.all([d.listRendered(eso, q, rawListText), d.listRendered(eso, q, rawListText)]);
    t.equal(renders.length, s.caches.folders.counts.bypassed === bypassed ? 1 : 2, 'two concurrent first reads: one render');
    t.ok(both[0]!.equals(first!) && both[1]!.equals(first!), 'both answered the same bytes');

    // A read that fails half-way fails the request; the next read is served.
    coldly();
    failAfterFirstPart = new Error('connection lost');
    await t.rejects(domain().listRendered(eso, q, rawListText), failAfterFirstPart, 'the failure is the answer');
    failAfterFirstPart = undefined;
    coldly();
    t.ok((await domain().listRendered(eso, q, rawListText))!.equals(first!), 'the next read is answered');

    // Rows under another data key than the project's (an online re-key under way): the
    // parts are not sent; the finished snapshot is rendered as before.
    const newKey = (await s.db.sql<{ id: string }[]>`select gen_random_uuid() as id`)[0]!.id;
    const wrapped = await s.crypto.generateDataKey(dataKeyAad(newKey));
    await s.db.sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${newKey}, 'project', ${s.crypto.rootKeyVersion}, ${wrapped})`;
    await s.db.sql`update projects set previous_data_key_id = data_key_id, data_key_id = ${newKey} where id = ${seeded.projectId}`;
    s.caches.projects.clear();
    coldly();
    const underOld = await domain().listRendered(eso, q, rawListText);
    t.same(renders.map((r) => r.streamed), [false], 'no part is sent; the snapshot is rendered under its rows\' key');
    t.ok(underOld!.equals(first!), 'the same bytes');
    await s.db.sql`update projects set data_key_id = previous_data_key_id, previous_data_key_id = null where id = ${seeded.projectId}`;
    s.caches.projects.clear();

    // A tagged secret: list() answers (tags are read per request); the render is abandoned.
    const tag = await s.tags.create(SYSTEM, { project, slug: 'big-tag' });
    await s.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/big', key: 'BIG_00001', tagIds: [tag.id] });
    coldly();
    t.equal(await domain().listRendered(eso, q, rawListText), undefined, 'a tagged folder is left to list()');
    t.same(renders.map((r) => r.streamed), [true], 'after streaming its rows');

    // A value with a reference to expand: refused by the worker, left to list().
    await s.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/big', key: 'BIG_00001', tagIds: [] });
    await s.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/big', key: 'BIG_04000', value: 'see ${BIG_00002}' });
    coldly();
    t.equal(await domain().listRendered(eso, q, rawListText), undefined, 'refused: left to list()');
    coldly();
    const raw = await domain().listRendered(eso, { ...q, expandSecretReferences: false }, rawListText);
    t.equal(JSON.parse(raw!.toString('utf8')).secrets[4000].secretValue, 'see ${BIG_00002}', 'the raw list renders it as is');

    // A blob that does not open, in the first part: the worker stops there while the rest
    // is still read. Abandoned (a tag), nothing is left behind; otherwise the answer is the
    // DecryptionFailed naming the row.
    const [a, b] = await s.db.sql<{ id: string; valueBlob: Buffer }[]>`select id, value_blob from secrets
      where key in ('BIG_00005', 'BIG_00006') order by key`;
    await s.db.sql`update secrets set value_blob = ${b!.valueBlob} where id = ${a!.id}`;
    await s.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/big', key: 'BIG_00001', tagIds: [tag.id] });
    coldly();
    t.equal(await domain().listRendered(eso, q, rawListText), undefined, 'tagged: left to list(), the failed render dropped');
    await s.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/big', key: 'BIG_00001', tagIds: [] });
    coldly();
    await t.rejects(domain().listRendered(eso, { ...q, expandSecretReferences: false }, rawListText), {
      message: `Stored secret ${a!.id} could not be decrypted: its stored data was altered or belongs to another secret`,
    });
  });
}

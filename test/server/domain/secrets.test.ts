// The read path's crypto budget, counted on the real crypto pool: one task per request
// where possible, concurrent identical lists share it, and nothing is opened that the
// response does not contain (a single read with references opens the row, then only
// what it names).
import t from 'tap';
import type { Crypto } from '../../../crypto/index.js';
import { SYSTEM, type Actor } from '../../../server/domain/access.js';
import { folderSnapshots } from '../../../server/domain/snapshots.js';
import { secretsDomain } from '../../../server/domain/secrets.js';
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

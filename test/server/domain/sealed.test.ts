// One way to open a blob: a history row whose sealed value was altered in storage (SQL,
// around the service) answers 500 DecryptionFailed naming that row, on every route that
// reads history (the version list, a single read of that version, a restore of it), and
// never a value.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { SYSTEM } from '../../../server/domain/access.js';
import { currentRow, packedItems, sealedItems, type SealedRow } from '../../../server/domain/sealed.js';
import { JSON_TYPE, request, type JsonResponse } from '../../helpers/http.js';
import { BACKENDS, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`a tampered history row (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const s = svc.services;
    const seeded = await seedHomelab(s, { role: 'admin' });
    const token = await login(svc.url, seeded);
    const where = { project: { slug: 'homelab' }, environment: 'prod', secretPath: '/' };
    await s.secrets.update(SYSTEM, { ...where, key: 'LLM_API_KEY', value: 'sk-llm-second' });
    await s.secrets.update(SYSTEM, { ...where, key: 'LLM_API_KEY', value: 'sk-llm-third' });
    const [row] = await s.store.sql<{ id: string }[]>`select id from secrets where key = 'LLM_API_KEY'`;
    const secretId = row!.id;
    // Version 1's value blob replaced by version 2's: well-formed, but sealed for another row.
    await s.store.sql`update secret_versions set value_blob = (select value_blob from secret_versions where secret_id = ${secretId} and version = 2)
      where secret_id = ${secretId} and version = 1`;

    const refused = (r: JsonResponse, what: string) => {
      t.equal(r.status, 500, `${what}: 500, the service's own data is wrong`);
      t.equal(r.contentType, JSON_TYPE, what);
      t.equal(r.body.error, 'DecryptionFailed', what);
      t.equal(r.body.message, `Stored secret ${secretId} version 1 could not be decrypted: its stored data was altered or belongs to another secret`, `${what}: names the row`);
      const text = JSON.stringify(r.body);
      for (const v of ['sk-llm-5678', 'sk-llm-second', 'sk-llm-third']) t.notOk(text.includes(v), `${what}: no value in the answer`);
    };
    refused(await request(`${svc.url}/api/v1/secret/${secretId}/secret-versions`, { token }), 'the version list');
    refused(await request(`${svc.url}/api/v3/secrets/raw/LLM_API_KEY?workspaceSlug=homelab&environment=prod&version=1`, { token }), 'a single read of version 1');
    refused(await request(`${svc.url}/api/v4/secrets/LLM_API_KEY?projectId=${seeded.projectId}&environment=prod&version=1`, { token }), 'the v4 single read of version 1');
    refused(await request(`${svc.url}/api/v1/secret/${secretId}/secret-versions/1/restore`, { method: 'POST', token }), 'a restore of version 1');

    const current = await request(`${svc.url}/api/v3/secrets/raw/LLM_API_KEY?workspaceSlug=homelab&environment=prod`, { token });
    t.equal(current.body.secret.secretValue, 'sk-llm-third', 'the current version still reads');
    t.equal(current.body.secret.version, 3, 'and the refused restore made no version');
    const second = await request(`${svc.url}/api/v3/secrets/raw/LLM_API_KEY?workspaceSlug=homelab&environment=prod&version=2`, { token });
    t.equal(second.body.secret.secretValue, 'sk-llm-second', 'an untouched version still reads');
  });
}

t.test('packedItems: the blobs and AAD bytes of sealedItems, packed, and the row of each item', async (t) => {
  const folders = [randomUUID(), randomUUID()];
  const keys = ['PLAIN', 'ünïcødé_🔑', 'quote"and\\backslash', 'x'.repeat(3000), ''];
  const rows = Array.from({ length: 23 }, (_, i) => ({
    id: randomUUID(),
    folderId: folders[i % 2]!,
    key: `${keys[i % keys.length]}${i}`,
    version: i * 7 + 1,
    valueBlob: randomBytes(20 + i),
    commentBlob: i % 3 === 0 ? randomBytes(5 + i) : null,
    dataKeyId: 'k',
    wrappedKey: Buffer.alloc(0),
  })) satisfies (SealedRow & { id: string })[];
  const projectId = randomUUID();
  const environmentId = randomUUID();
  const listed = sealedItems(projectId, environmentId, rows, (r) => r.id, (r) => currentRow(r.id));
  const { items, ownerAt } = packedItems(projectId, environmentId, rows, (r) => r.id, (r) => currentRow(r.id));
  t.equal(items.blobEnds.length, listed.length, 'one item per value and per comment');
  t.equal(items.aadEnds.length, listed.length);
  listed.forEach((item, i) => {
    const from = (ends: Uint32Array) => (i === 0 ? 0 : ends[i - 1]!);
    t.ok(Buffer.from(items.blobs.subarray(from(items.blobEnds), items.blobEnds[i])).equals(item.blob), `item ${i}: its blob`);
    t.equal(Buffer.from(items.aads.subarray(from(items.aadEnds), items.aadEnds[i])).toString('utf8'), item.aad, `item ${i}: its AAD, byte for byte`);
    t.equal(ownerAt(i), item.owner, `item ${i}: its row`);
  });
  t.equal(items.blobEnds.at(-1), items.blobs.length, 'the blobs end where the last one does');
  t.equal(items.aadEnds.at(-1), items.aads.length, 'the AADs too');
  t.equal(ownerAt(listed.length), undefined, 'no row past the last item');
  t.equal(ownerAt(-1), undefined, 'nor before the first');

  const none = packedItems(projectId, environmentId, [], (r: SealedRow & { id: string }) => r.id, () => 'x');
  t.same([none.items.blobEnds.length, none.items.aads.length, none.items.blobs.length], [0, 0, 0], 'no rows: nothing');
});

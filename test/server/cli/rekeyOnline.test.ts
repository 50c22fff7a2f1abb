// rekey online (issue 12.4): two replicas keep serving reads and writes of the project
// being re-keyed, over HTTP, while the command runs in its own process. Held half-way
// (the test seam), old and new rows coexist and every read and write still answers;
// then it runs to the end. Every acknowledged write is read back, no request fails, the
// old data key is gone from the database and a backup taken before opens nothing.
import t from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { secretAad } from '../../../server/domain/secrets.js';
import { request } from '../../helpers/http.js';
import { INVENTORY, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { spawnCliWithHooks, withDatabase } from './helpers.js';

t.setTimeout(360_000);

t.test('rekey while two replicas serve reads and writes of the project: nothing lost, never an error', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const a = await startTestService(t, env);
  const b = await startTestService(t, env);
  const seeded = await seedHomelab(a.services);
  const token = await login(a.url, seeded);
  const where = { workspaceId: seeded.projectId, environment: 'prod', secretPath: '/' };
  const created = await request(`${a.url}/api/v3/secrets/raw/COUNTER`, { method: 'POST', token, json: { ...where, secretValue: '0' } });
  t.equal(created.status, 200);

  // The "backup": the project's wrapped data key as stored before the re-key.
  const [backup] = await withDatabase(env, (sql) => sql<{ id: string; wrapped: Buffer }[]>`select k.id, k.wrapped
    from projects p join crypto_keys k on k.id = p.data_key_id where p.id = ${seeded.projectId}`);

  const failures: string[] = [];
  let acked = 0; // ONLINE_1..acked exist and COUNTER >= acked, acknowledged to the writer
  let reads = 0;
  let stop = false;
  const progress: Array<{ writes: number; reads: number; done: () => void }> = [];
  const notify = () => {
    for (const p of [...progress]) {
      if (acked < p.writes || reads < p.reads) continue;
      progress.splice(progress.indexOf(p), 1);
      p.done();
    }
  };
  const reached = (writes: number, readCount: number) => new Promise<void>((done) => {
    progress.push({ writes, reads: readCount, done });
    notify();
  });

  const writer = (async () => {
    for (let n = 1; !stop; n++) {
      const c = await request(`${a.url}/api/v3/secrets/raw/ONLINE_${n}`, { method: 'POST', token, json: { ...where, secretValue: `online ${n} ✓`, secretComment: `written ${n}` } });
      if (c.status !== 200) failures.push(`create ONLINE_${n}: ${c.status} ${JSON.stringify(c.body)}`);
      const u = await request(`${a.url}/api/v3/secrets/raw/COUNTER`, { method: 'PATCH', token, json: { ...where, secretValue: String(n) } });
      if (u.status !== 200) failures.push(`update COUNTER to ${n}: ${u.status} ${JSON.stringify(u.body)}`);
      if (c.status !== 200 || u.status !== 200) return;
      acked = n;
      notify();
    }
  })();
  const reader = (async () => {
    for (let i = 0; !stop; i++) {
      const floor = acked;
      const replica = i % 2 === 0 ? b : a;
      const r = await request<{ secrets: { secretKey: string; secretValue: string; secretComment: string }[] }>(
        `${replica.url}/api/v3/secrets/raw?environment=prod&workspaceId=${seeded.projectId}&secretPath=%2F`,
        { token },
      );
      if (r.status !== 200) {
        failures.push(`list: ${r.status} ${JSON.stringify(r.body)}`);
        return;
      }
      const got = new Map(r.body.secrets.map((s) => [s.secretKey, s]));
      for (const [key, value] of Object.entries(INVENTORY)) if (got.get(key)?.secretValue !== value) failures.push(`list: ${key} is not its value`);
      for (let n = 1; n <= floor; n++) {
        const s = got.get(`ONLINE_${n}`);
        if (s?.secretValue !== `online ${n} ✓` || s.secretComment !== `written ${n}`) failures.push(`list: acknowledged ONLINE_${n} missing or wrong`);
      }
      if (!(Number(got.get('COUNTER')?.secretValue) >= floor)) failures.push(`list: COUNTER older than the acknowledged ${floor}`);
      reads++;
      notify();
    }
  })();

  // Held after the MAC key (step 1), the audit key (2), homelab's start (3) and two batches of one row (4, 5): half-way.
  const cli = spawnCliWithHooks(['rekey', '--batch-size', '1'], env, { pauseAt: 5 });
  await cli.stderrMatch(/^paused$/m);
  const [mid] = await withDatabase(env, (sql) => sql<{ dataKeyId: string; previousDataKeyId: string | null; old: number; moved: number }[]>`
    select p.data_key_id, p.previous_data_key_id,
      (select count(*)::int from secrets where data_key_id = p.previous_data_key_id) as old,
      (select count(*)::int from secrets where data_key_id = p.data_key_id) as moved
    from projects p where p.id = ${seeded.projectId}`);
  t.equal(mid!.previousDataKeyId, backup!.id, 'half-way: the old key is the previous one');
  t.ok(mid!.old > 0 && mid!.moved > 0, `half-way: ${mid!.old} current rows under the old key, ${mid!.moved} under the new`);
  // Reads and writes of the half-way project, on both replicas.
  await reached(acked + 5, reads + 5);
  const ackedAtResume = acked;
  cli.child.kill('SIGUSR2');
  const result = await cli.exit;
  stop = true;
  await Promise.all([writer, reader]);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /re-keyed 1 project/);
  t.same(failures, [], `no read or write failed or lost anything (${acked} writes acknowledged, ${reads} reads; ${ackedAtResume} by the resume)`);
  t.ok(ackedAtResume >= 5, 'writes were acknowledged while the project was half-way');

  // After: every acknowledged write reads back, on both replicas.
  for (const replica of [a, b]) {
    const r = await request<{ secrets: { secretKey: string; secretValue: string }[] }>(
      `${replica.url}/api/v3/secrets/raw?environment=prod&workspaceId=${seeded.projectId}&secretPath=%2F`,
      { token },
    );
    const got = new Map(r.body.secrets.map((s) => [s.secretKey, s.secretValue]));
    let ok = got.get('COUNTER') === String(acked);
    for (let n = 1; n <= acked; n++) ok &&= got.get(`ONLINE_${n}`) === `online ${n} ✓`;
    t.ok(ok, `every acknowledged write reads back from replica ${replica === a ? 'A' : 'B'}`);
  }

  // The old key is gone, no row names it, and the backup's key opens none of the rows.
  const state = await withDatabase(env, async (sql) => ({
    old: await sql`select id from crypto_keys where id = ${backup!.id}`,
    project: (await sql<{ dataKeyId: string; previousDataKeyId: string | null }[]>`select data_key_id, previous_data_key_id from projects where id = ${seeded.projectId}`)[0]!,
    rows: await sql<{ id: string; secretId: string; environmentId: string; folderId: string; key: string; version: number; valueBlob: Buffer; dataKeyId: string; wrapped: Buffer }[]>`
      select v.id, v.secret_id, f.environment_id, v.folder_id, v.key, v.version, v.value_blob, v.data_key_id, k.wrapped
      from secret_versions v join folders f on f.id = v.folder_id join crypto_keys k on k.id = v.data_key_id
      join environments e on e.id = f.environment_id where e.project_id = ${seeded.projectId}`,
  }));
  t.equal(state.old.length, 0, 'the old data key is deleted from the database');
  t.equal(state.project.previousDataKeyId, null, 'the project is no longer half-way');
  t.ok(state.rows.every((r) => r.dataKeyId === state.project.dataKeyId), 'every version row names the new key');
  const crypto = await createCrypto({ encryptionKeyHex: env.ENCRYPTION_KEY!, threads: 1 });
  t.teardown(() => crypto.close());
  let refused = 0;
  for (const r of state.rows) {
    const item = [{ blob: r.valueBlob, aad: secretAad('value', { projectId: seeded.projectId, environmentId: r.environmentId, folderId: r.folderId, secretId: r.secretId, key: r.key, version: r.version }) }];
    await crypto.openMany(r.wrapped, dataKeyAad(r.dataKeyId), item); // control: it opens with its own key
    const code = await crypto.openMany(backup!.wrapped, dataKeyAad(backup!.id), item).then(() => 'opened', (e: { code?: string }) => e.code);
    if (code === 'OPEN_FAILED') refused++;
  }
  t.equal(refused, state.rows.length, `the backup's data key (with the root key) opens none of the ${state.rows.length} version rows, those written during the run included`);
  t.ok(state.rows.length >= 14 + 1 + 2 * acked, 'those rows include every version written during the run');
});

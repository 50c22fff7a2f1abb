// The embedded default under concurrent writes whose statements are far over the
// in-process link's 16 KB high-water mark (issue 31, point 1): 100 KB values PATCHed by
// several clients at once while others create batches of 20 KB values. A fixed number
// of operations, then: every write answered 200 (none ran into the deadline), every
// acknowledged value is there, every secret's version has its history row and its
// audit entry, and the audit chain verifies. Before the fix, postgres.js ran other
// callers' statements inside a transaction: writes answered 200 were missing, versions
// disagreed with their history, requests stalled to the deadline.
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { request } from '../helpers/http.js';
import { startTestService, testEnv } from '../helpers/service.js';
import { runCli } from '../server/cli/helpers.js';

t.setTimeout(240_000);

const PATCHERS = 4;
const PATCHES_EACH = 12;
const BATCHERS = 2;
const BATCHES_EACH = 6;
const BATCH_SIZE = 8;

/** A value of `bytes` characters that names its writer and its turn. */
const value = (tag: string, bytes: number) => (tag + ':').padEnd(bytes, tag.slice(-1));

t.test('concurrent 100 KB PATCHes and batches on the embedded default', async (t) => {
  // A deadline far above what a write takes on a loaded machine: a write that reaches it
  // is stuck, not slow.
  const env = await testEnv(t, 'embedded', { REQUEST_DEADLINE_MS: '20000' });
  const svc = await startTestService(t, env);
  const url = svc.url;
  const admin = await signupAdmin(url);
  t.equal((await request(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };
  for (let k = 0; k < PATCHERS; k++) {
    const r = await request(`${url}/api/v3/secrets/raw/BIG_${k}`, { method: 'POST', token: admin.token, json: { ...scope, secretValue: value(`init${k}`, 100_000) } });
    t.equal(r.status, 200);
  }

  const statuses: number[] = [];
  const acked = new Map<string, string>();
  const patcher = async (k: number) => {
    for (let n = 0; n < PATCHES_EACH; n++) {
      const v = value(`p${k}-${n}`, 100_000);
      const r = await request(`${url}/api/v3/secrets/raw/BIG_${k}`, { method: 'PATCH', token: admin.token, json: { ...scope, secretValue: v } });
      statuses.push(r.status);
      if (r.status === 200) acked.set(`BIG_${k}`, v);
    }
  };
  const batcher = async (b: number) => {
    for (let n = 0; n < BATCHES_EACH; n++) {
      const secrets = Array.from({ length: BATCH_SIZE }, (_, i) => ({ secretKey: `B${b}_${n}_${i}`, secretValue: value(`b${b}-${n}-${i}`, 20_000) }));
      const r = await request(`${url}/api/v3/secrets/batch/raw`, { method: 'POST', token: admin.token, json: { ...scope, secrets } });
      statuses.push(r.status);
      if (r.status === 200) for (const s of secrets) acked.set(s.secretKey, s.secretValue);
    }
  };
  await Promise.all([...Array.from({ length: PATCHERS }, (_, k) => patcher(k)), ...Array.from({ length: BATCHERS }, (_, b) => batcher(b))]);

  const total = PATCHERS * PATCHES_EACH + BATCHERS * BATCHES_EACH;
  t.same(
    statuses.filter((s) => s !== 200),
    [],
    `all ${total} writes answered 200 (no 503 at the deadline, no 409)`,
  );

  // Every acknowledged value, read back through the API.
  const listed = await request(`${url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, { token: admin.token });
  t.equal(listed.status, 200);
  const values = new Map((listed.body.secrets as Array<{ secretKey: string; secretValue: string }>).map((s) => [s.secretKey, s.secretValue]));
  const wrong = [...acked].filter(([key, v]) => values.get(key) !== v).map(([key]) => `${key}: ${values.has(key) ? 'another value' : 'missing'}`);
  t.same(wrong, [], `every acknowledged write is there (${acked.size} secrets)`);

  // Each secret's version has its history row (every version 1..n, once) and each
  // history row its audit entry.
  const sql = svc.services.db.sql;
  const versions = await sql<{ key: string; version: number; history: number; top: number | null }[]>`
    select s.key, s.version, count(v.id)::int as history, max(v.version) as top
    from secrets s left join secret_versions v on v.secret_id = s.id
    group by s.id, s.key, s.version`;
  t.equal(versions.length, PATCHERS + BATCHERS * BATCHES_EACH * BATCH_SIZE, 'one row per secret written');
  t.same(
    versions.filter((r) => r.history !== r.version || r.top !== r.version),
    [],
    "every secret's version has its history rows 1..version",
  );
  t.same(
    versions.filter((r) => r.key.startsWith('BIG_') && r.version !== PATCHES_EACH + 1),
    [],
    `each PATCHed secret is at version ${PATCHES_EACH + 1}`,
  );
  const unaudited = await sql<{ key: string; version: number }[]>`
    select v.key, v.version from secret_versions v
    where not exists (
      select 1 from audit_log a
      where a.secret_key = v.key and a.secret_version = v.version
        and a.event_type in ('create-secret', 'update-secret'))`;
  t.same(unaudited, [], 'every version has its audit entry');

  await svc.close();
  const verify = await runCli(['audit-verify'], env);
  t.equal(verify.code, 0, `audit-verify: ${verify.stdout.trim()} ${verify.stderr.trim()}`);
});

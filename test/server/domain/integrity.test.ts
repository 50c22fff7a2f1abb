// Audit entries from before the chain was keyed are accepted only as the instance
// recorded them, once, under its canary (server/domain/integrity.ts): a writer of the
// database who rewrites the trail as a keyless (plain SHA-256) chain and deletes the
// anchor and the audit key gets a chain that verify, audit-verify, the start-up log and
// readiness report as broken; a fresh instance never anchors legacy entries; a real
// upgrade from a version before the keyed chain still verifies, its privilege rows MACed.
import t from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { startService } from '../../../server/app.js';
import { parseConfig } from '../../../server/config.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { textLogger, type Logger } from '../../../server/log.js';
import { connectDatabase, type Queryable } from '../../../storage/db.js';
import { migrate } from '../../../storage/migrate.js';
import { ADMIN_LOGIN, signupAdmin } from '../../helpers/admin.js';
import { rechainWithSha256 } from '../../helpers/audit.js';
import { request } from '../../helpers/http.js';
import { testEnv, type Backend } from '../../helpers/service.js';
import { runCli } from '../cli/helpers.js';

function recordingLog() {
  const lines: string[] = [];
  const log: Logger = textLogger(
    { info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) },
    { fields: false },
  );
  return { lines, log };
}

/** What a writer of the database can do without a key: the trail as a keyless chain, its anchor and key gone. */
async function rewriteAsLegacy(sql: Queryable, drop: string) {
  await sql`delete from audit_log where event_type = ${drop}`;
  await sql`delete from audit_chain_head`;
  await sql`update audit_log set chain = 1, key_id = null`;
  await sql`delete from crypto_keys where purpose = 'audit'`;
  await rechainWithSha256(sql, 0, { markLegacy: true });
}

const verifyRoute = async (url: string, token: string) => (await request(`${url}/api/v1/organization/audit-logs/verify`, { token })).body;
const ready = async (url: string) => (await request(`${url}/api/health/ready`)).body;
const loginAdmin = async (url: string) => (await request(`${url}/api/v3/auth/login`, { method: 'POST', json: ADMIN_LOGIN })).body.token as string;

for (const backend of ['postgres+redis', 'embedded'] as Backend[]) {
  t.test(`a trail rewritten as a legacy chain, anchor and key deleted, is reported (${backend})`, async (t) => {
    const env = await testEnv(t, backend);
    let svc = await startService(parseConfig(env), recordingLog().log);
    t.teardown(() => svc.close().catch(() => {}));
    const url = () => `http://127.0.0.1:${svc.port}`;
    const admin = await signupAdmin(url());
    for (const name of ['one', 'two', 'three']) {
      t.equal((await request(`${url()}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: name } })).status, 200);
    }
    // Entries that leave no row behind (the issue's reproduction drops every export).
    for (let i = 0; i < 2; i++) await loginAdmin(url());
    t.match(await verifyRoute(url(), admin.token), { ok: true }, 'the chain verifies');
    t.equal((await ready(url())).checks.auditTrail, 'ok');

    await rewriteAsLegacy(svc.services.store.sql, 'login-user');
    await svc.close();

    const second = recordingLog();
    svc = await startService(parseConfig(env), second.log);
    t.ok(second.lines.some((l) => l.startsWith('error audit trail BROKEN')), 'the start-up log says so');
    const r = await ready(url());
    t.match(r.checks.auditTrail, /^BROKEN/, 'readiness details say so');
    t.equal(r.status, 'ready', 'the service keeps serving');
    const v = await verifyRoute(url(), await loginAdmin(url()));
    t.match(v, { ok: false, reason: 'legacy-unrecorded' }, 'the verify route reports the rewritten entries');
    await svc.close();

    const cli = await runCli(['audit-verify'], env);
    t.not(cli.code, 0, 'audit-verify fails');
    t.match(cli.stdout + cli.stderr, /audit chain BROKEN at entry id \d+ .*never recorded/);
  });
}

t.test('a fresh instance never anchors legacy entries (postgres)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  // Before the first start, a writer of the database plants a keyless trail.
  const db = await connectDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR!, waitMs: 10_000 });
  await migrate(db.sql);
  for (let i = 0; i < 3; i++) {
    await db.sql`insert into audit_log (at, actor_type, actor_id, event_type, metadata, prev_hash, hash, chain)
      values (${new Date(Date.now() + i)}, 'system', null, ${`planted-${i}`}, ${db.sql.json({ i })}, ${Buffer.alloc(0)}, ${Buffer.alloc(0)}, 1)`;
  }
  await rechainWithSha256(db.sql, 0);
  await db.close();

  const log = recordingLog();
  const svc = await startService(parseConfig(env), log.log);
  t.teardown(() => svc.close());
  const url = `http://127.0.0.1:${svc.port}`;
  t.ok(log.lines.some((l) => l.startsWith('error audit trail BROKEN')), 'the first start says the trail is not its own');
  const admin = await signupAdmin(url);
  t.match(await verifyRoute(url, admin.token), { ok: false, reason: 'legacy-unrecorded' }, 'verify refuses the planted entries');
});

t.test('a real upgrade from before the keyed chain: legacy entries verify, privilege is MACed once (postgres)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  let svc = await startService(parseConfig(env), recordingLog().log);
  t.teardown(() => svc.close().catch(() => {}));
  const url = () => `http://127.0.0.1:${svc.port}`;
  const admin = await signupAdmin(url());
  t.equal((await request(`${url()}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'kept' } })).status, 200);
  const sql = svc.services.store.sql;
  // The state an older version left: a first-version canary (sealed with the root key,
  // which that version held), a keyless trail with no anchor or audit key, no MACs.
  const crypto = await createCrypto({ encryptionKeyHex: env.ENCRYPTION_KEY!, threads: 1 });
  t.teardown(() => crypto.close());
  const [sys] = await sql<{ id: string; wrapped: Buffer }[]>`select k.id, k.wrapped from crypto_canary c join crypto_keys k on k.id = c.key_id`;
  const [v1] = await crypto.sealMany(sys!.wrapped, dataKeyAad(sys!.id), [{ plaintext: 'vault-standalone canary v1', aad: 'vault-standalone:canary:v1' }]);
  await sql`update crypto_canary set blob = ${v1!}`;
  await rewriteAsLegacy(sql, 'no-such-event');
  await sql`update users set privilege_mac = null, privilege_mac_key_id = null`;
  await sql`update project_memberships set mac = null, mac_key_id = null`;
  const entries = (await sql<{ n: number }[]>`select count(*)::int as n from audit_log`)[0]!.n;
  await svc.close();

  const upgrade = recordingLog();
  svc = await startService(parseConfig(env), upgrade.log);
  t.ok(upgrade.lines.some((l) => /instance upgraded: \d+ privilege row\(s\) MACed, \d+ audit entries/.test(l)), 'the upgrade is logged');
  t.notOk(upgrade.lines.some((l) => l.includes('audit trail BROKEN')), 'a real upgrade is not a broken trail');
  const token = await loginAdmin(url());
  t.ok(token, 'the superadmin logs in (its row MACed at the upgrade)');
  t.equal((await request(`${url()}/api/v1/users`, { token })).status, 200, 'and administers');
  t.match(await verifyRoute(url(), token), { ok: true, head: { legacyEntries: entries } }, 'the legacy entries verify, as recorded');
  await svc.close();

  // The record is made once: a later start does not MAC rows again or re-record the trail.
  await rewriteAsLegacy((svc = await startService(parseConfig(env), recordingLog().log)).services.store.sql, 'no-such-event');
  await svc.close();
  const later = recordingLog();
  svc = await startService(parseConfig(env), later.log);
  t.notOk(later.lines.some((l) => l.includes('instance upgraded')), 'no second upgrade');
  t.ok(later.lines.some((l) => l.startsWith('error audit trail BROKEN')), 'the keyed entries rewritten as legacy: broken');
  t.match(await verifyRoute(url(), await loginAdmin(url())), { ok: false, reason: 'legacy-unrecorded' });
});

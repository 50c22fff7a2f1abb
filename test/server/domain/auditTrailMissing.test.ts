// Deleting the whole audit trail (its entries, its key and its anchor) must not look
// like a first start when the instance holds projects, identities or people: the service
// keeps serving and auditing, but says so at every start, and verify (route and
// audit-verify) reports the chain as broken, for good. And the chain's signed head goes
// to the log every N entries and at shutdown, for audit-verify --recorded-head.
import t from 'tap';
import { startService } from '../../../server/app.js';
import { parseConfig } from '../../../server/config.js';
import { textLogger, type Logger } from '../../../server/log.js';
import { signupAdmin } from '../../helpers/admin.js';
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

for (const backend of ['postgres+redis', 'embedded'] as Backend[]) {
  t.test(`a deleted trail is a broken chain (${backend})`, async (t) => {
    const env = await testEnv(t, backend);
    const first = recordingLog();
    let svc = await startService(parseConfig(env), first.log);
    const url = () => `http://127.0.0.1:${svc.port}`;
    t.notOk(first.lines.some((l) => l.includes('audit trail BROKEN')), 'a first start is a first start');
    const admin = await signupAdmin(url());
    t.equal((await request(`${url()}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'kept' } })).status, 200);
    t.same((await request(`${url()}/api/v1/organization/audit-logs/verify`, { token: admin.token })).body.ok, true, 'the chain verifies');

    // Everything the trail is made of, gone; the data it recorded stays.
    const sql = svc.services.store.sql;
    await sql`delete from audit_chain_head`;
    await sql`delete from audit_log`;
    await sql`delete from crypto_keys where purpose = 'audit'`;
    await svc.close();

    const second = recordingLog();
    svc = await startService(parseConfig(env), second.log);
    t.teardown(() => svc.close());
    t.ok(second.lines.some((l) => l.startsWith('error audit trail BROKEN')), 'the start-up log says so');
    const login = await request(`${url()}/api/v3/auth/login`, { method: 'POST', json: { email: 'admin@example.test', password: 'a long admin passphrase' } });
    t.equal(login.status, 200, 'the service keeps serving (and auditing)');
    const token = login.body.token as string;
    const v = await request(`${url()}/api/v1/organization/audit-logs/verify`, { token });
    t.equal(v.status, 200);
    t.match(v.body, { ok: false, reason: 'trail-missing', brokenAt: null }, 'verify reports the chain broken');
    t.ok(v.body.entries >= 1, 'while the new entries themselves verify');
    await svc.close();

    const cli = await runCli(['audit-verify'], env);
    t.not(cli.code, 0, 'audit-verify fails');
    t.match(cli.stderr + cli.stdout, /audit chain BROKEN: every entry verifies .* the trail before it .* was deleted/);

    // It stays broken: a later start says it again.
    const third = recordingLog();
    svc = await startService(parseConfig(env), third.log);
    t.ok(third.lines.some((l) => l.startsWith('error audit trail BROKEN')), 'and again at the next start');
  });
}

t.test('the signed head is logged every N entries and at shutdown, and audit-verify checks it', async (t) => {
  const env = await testEnv(t, 'postgres+redis', { AUDIT_HEAD_LOG_EVERY: '3' });
  const { lines, log } = recordingLog();
  const svc = await startService(parseConfig(env), log);
  const url = `http://127.0.0.1:${svc.port}`;
  const admin = await signupAdmin(url); // 1 entry
  for (const name of ['a', 'b']) {
    t.equal((await request(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: name } })).status, 200); // 2, 3
  }
  const heads = () => lines.filter((l) => l.startsWith('info audit head: '));
  // Logged after the commit that crossed 3, without blocking the answer: wait for the line.
  for (let i = 0; i < 1000 && heads().length === 0; i++) await new Promise((r) => setImmediate(r));
  t.equal(heads().length, 1, 'once, when the third entry was appended');
  t.match(heads()[0], /entries=3 lastId=3 mac=[0-9a-f]{16} \(audit-verify --recorded-head 3:[0-9a-f]{16}\)/);
  await svc.close();
  t.equal(heads().length, 2, 'and at shutdown');
  const recorded = /--recorded-head (\d+:[0-9a-f]+)/.exec(heads()[1]!)![1]!;
  const { REDIS_URL: _r, ...cliEnv } = env;
  const ok = await runCli(['audit-verify', '--recorded-head', recorded], cliEnv);
  t.equal(ok.code, 0, `audit-verify accepts the logged head: ${ok.stderr}`);
});

// The admin channel (issue 31.11): audit-verify and reset-password work beside a running
// service on the embedded database (the folder admits one process), asked over its admin
// socket. The CLI is given DATA_DIR only: the service verifies and hashes with its own
// key; opening the folder directly would be refused while the service runs.
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import t from 'tap';
import { adminSocketPath } from '../../server/adminChannel.js';
import { ADMIN, ADMIN_LOGIN, signupAdmin } from '../helpers/admin.js';
import { request } from '../helpers/http.js';
import { startTestService, testEnv } from '../helpers/service.js';
import { printedHead, runCli } from './cli/helpers.js';

t.setTimeout(240_000);

/** One raw request line to the socket, and the whole answer. */
const raw = (path: string, line: string) =>
  new Promise<string>((resolve, reject) => {
    const c = connect(path, () => c.end(line));
    let out = '';
    c.setEncoding('utf8');
    c.on('data', (d) => (out += d));
    c.on('end', () => resolve(out));
    c.on('error', reject);
  });

t.test('audit-verify and reset-password beside a running embedded service', async (t) => {
  const env = await testEnv(t, 'embedded');
  const svc = await startTestService(t, env);
  const admin = await signupAdmin(svc.url);
  const cli = { DATA_DIR: env.DATA_DIR! };
  t.ok(existsSync(adminSocketPath(env.DATA_DIR!)));

  const verified = await runCli(['audit-verify'], cli);
  t.equal(verified.code, 0, verified.stderr);
  t.match(verified.stdout, /^audit chain ok: \d+ entr(y|ies)$/m);
  t.match(verified.stderr, /verified by the running service/);
  const head = printedHead(verified.stdout);
  const recorded = await runCli(['audit-verify', '--recorded-head', `${head.lastId}:${head.mac}`], cli);
  t.equal(recorded.code, 0, recorded.stderr);
  const rolledBack = await runCli(['audit-verify', '--recorded-head', `${head.lastId + 1000}:${head.mac}`], cli);
  t.equal(rolledBack.code, 1, 'a recorded head that is not in the chain: exit 1');
  t.match(rolledBack.stdout, /audit chain BROKEN: the recorded head is not in the chain/);

  const me = async (token: string) => (await request(`${svc.url}/api/v1/users/me`, { token })).status;
  t.equal(await me(admin.token), 200);
  const reset = await runCli(['reset-password', '--email', ADMIN.email], cli);
  t.equal(reset.code, 0, reset.stderr);
  const m = /^new password for admin@example\.test: ([A-Za-z0-9]{20})$/m.exec(reset.stdout);
  t.ok(m, 'a generated password printed once');
  t.equal(await me(admin.token), 401, 'the running service ended the session at once');
  const login = (password: string) => request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: ADMIN.email, password } });
  t.equal((await login(ADMIN_LOGIN.password)).status, 401, 'the old password is refused');
  t.equal((await login(m![1]!)).status, 200, 'the new password logs in');
  const [entry] = await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from audit_log where event_type = 'reset-user-password'`;
  t.equal(entry!.n, 1, 'audited');

  const nobody = await runCli(['reset-password', '--email', 'nobody@example.test'], cli);
  t.equal(nobody.code, 1);
  t.equal(nobody.stderr, "reset-password: User with email 'nobody@example.test' not found\n", 'the refusal, in one line');
  t.equal(nobody.stdout, '');

  // The socket refuses what it does not know, in one line, and keeps serving.
  t.equal(await raw(adminSocketPath(env.DATA_DIR!), 'drop table users\n'), 'error unknown command\n');
  t.equal(await raw(adminSocketPath(env.DATA_DIR!), '{"command":"reset-password","email":1}\n'), 'error unknown command\n');
  t.equal(await raw(adminSocketPath(env.DATA_DIR!), `${'x'.repeat(5000)}`), 'error command too long\n');
  t.equal((await runCli(['audit-verify'], cli)).code, 0, 'still answering');
});

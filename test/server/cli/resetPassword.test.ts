// reset-password (issue 12, point 6): the lost superadmin's way back. Against a running
// service on the same PostgreSQL and Redis: the new password works, the old one and
// every session end at once on the running replica, the audit trail records it (by
// the service, without the password), and a password is never taken from an argument.
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import t from 'tap';
import { ADMIN, signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { nodeCommand } from '../../helpers/process.js';
import { startTestService, testEnv } from '../../helpers/service.js';
import { CLI, runCli, type CliResult } from './helpers.js';

/** The CLI with `input` on its standard input. */
function runWithStdin(args: string[], env: Record<string, string>, input: string): Promise<CliResult> {
  const child = spawn(...nodeCommand([CLI, ...args]), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

t.test('reset-password against a running service (postgres+redis)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const admin = await signupAdmin(svc.url);
  const me = async (token: string) => (await request(`${svc.url}/api/v1/users/me`, { token })).status;
  const login = (password: string) => request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: ADMIN.email, password } });
  t.equal(await me(admin.token), 200, 'the session is live (and cached by the service)');
  const cliEnv = { ...env, PORT: '', HOST: '' };

  const generated = await runCli(['reset-password', '--email', ' Admin@Example.test '], cliEnv);
  t.equal(generated.code, 0, 'exit 0', { stderr: generated.stderr });
  const m = /^new password for admin@example\.test: ([A-Za-z0-9]{20})$/m.exec(generated.stdout);
  t.ok(m, 'a generated password printed once on stdout');
  const password = m![1]!;
  t.match(generated.stderr, /every session of theirs has ended/);
  t.notMatch(generated.stderr, password, 'not on stderr');

  t.equal(await me(admin.token), 401, "the running service ended the superadmin's session at once");
  t.equal((await login(ADMIN.password)).status, 401, 'the old password is refused');
  t.equal((await login(password)).status, 200, 'the new password logs in');

  const entries = await svc.services.store.sql<{ actorType: string; metadata: unknown }[]>`select actor_type, metadata from audit_log
    where event_type = 'reset-user-password'`;
  t.equal(entries.length, 1, 'audited');
  t.equal(entries[0]!.actorType, 'system');
  t.match(entries[0]!.metadata, { email: ADMIN.email, sessionsEnded: 1 });
  t.notMatch(JSON.stringify(entries), password, 'no password in the audit trail');

  const chosen = 'chosen on stdin 0123';
  const piped = await runWithStdin(['reset-password', '--email', ADMIN.email, '--password-stdin'], cliEnv, `${chosen}\n`);
  t.equal(piped.code, 0, 'exit 0', { stderr: piped.stderr });
  t.equal(piped.stdout, '', 'nothing printed: the caller chose the password');
  t.equal((await login(chosen)).status, 200, 'the password from stdin (without its newline) logs in');

  const short = await runWithStdin(['reset-password', '--email', ADMIN.email, '--password-stdin'], cliEnv, 'short\n');
  t.equal(short.code, 1);
  t.match(short.stderr, /the password must be 12 to 256 characters/);
  t.equal((await login(chosen)).status, 200, 'a refused password changed nothing');

  const nobody = await runCli(['reset-password', '--email', 'nobody@example.test'], cliEnv);
  t.equal(nobody.code, 1);
  t.match(nobody.stderr, /User with email 'nobody@example\.test' not found/);
  t.equal(nobody.stdout, '', 'no password printed for nobody');

  const usage = await runCli(['reset-password', '--email', ADMIN.email, '--password', 'x'], cliEnv);
  t.equal(usage.code, 2, 'no password argument exists');
  t.equal((await runCli(['reset-password'], cliEnv)).code, 2, '--email is required');
});

// The first visit on an exposed fresh install (issue 12, point 5): in production mode the
// superadmin's registration needs a one-time setup code, SETUP_TOKEN's or one derived from
// AUTH_SECRET (the same on every replica and restart; `vault-standalone setup-code` prints
// it, the log only says so; never in the audit trail). Development keeps the open first visit.
import t from 'tap';
import { startService } from '../../server/app.js';
import { setupCodeFrom } from '../../server/auth/tokens.js';
import { ConfigError, parseConfig } from '../../server/config.js';
import { textLogger, type Logger } from '../../server/log.js';
import { ADMIN } from '../helpers/admin.js';
import { request } from '../helpers/http.js';
import { testEnv } from '../helpers/service.js';

function capture() {
  const lines: string[] = [];
  const log: Logger = textLogger({ info: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m) => void lines.push(m) });
  return { lines, log };
}

async function start(t: { teardown(fn: () => unknown): void }, env: Record<string, string>, log: Logger) {
  const svc = await startService(parseConfig(env), log);
  t.teardown(() => svc.close());
  const url = `http://127.0.0.1:${svc.port}`;
  return { svc, url, config: async () => (await request(`${url}/api/v1/admin/config`)).body.config, signup: (extra: Record<string, unknown>) => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, ...extra } }) };
}

t.test('production without SETUP_TOKEN: the code derived from AUTH_SECRET, shared by replicas, never logged', async (t) => {
  const env = await testEnv(t, 'postgres+redis', { NODE_ENV: 'production' });
  const code = setupCodeFrom(Buffer.from(env.AUTH_SECRET!, 'base64'));
  t.match(code, /^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/, '128 bits in groups');
  const first = capture();
  const a = await start(t, env, first.log);
  const pointer = first.lines.filter((l) => /setup code/.test(l));
  t.equal(pointer.length, 1, 'one log line says where the code is');
  t.match(pointer[0], /vault-standalone setup-code/, 'it names the command that prints it');
  t.notOk(first.lines.some((l) => l.includes(code) || l.includes(code.replace(/-/g, ''))), 'the code itself is never logged');

  t.same(await a.config(), { initialized: false, allowSignUp: false, setupCodeRequired: true }, 'the UI is told to ask for it');
  const missing = await a.signup({});
  t.equal(missing.status, 422);
  t.match(missing.body.message, /^setupCode is required/);
  const wrong = await a.signup({ setupCode: code.replace(/^./, (c) => (c === '0' ? '1' : '0')) });
  t.equal(wrong.status, 403);
  t.equal(wrong.body.message, 'Invalid setup code');
  const otherSecret = setupCodeFrom(Buffer.alloc(32, 7));
  t.not(otherSecret, code);
  t.equal((await a.signup({ setupCode: otherSecret })).status, 403, "another AUTH_SECRET's code does not open it");
  t.equal((await a.config()).initialized, false, 'refused signups set nothing up');

  // A second replica (or a restart) has the same code: the one printed by the command.
  const second = capture();
  const b = await start(t, env, second.log);
  t.equal((await b.config()).setupCodeRequired, true);

  const ok = await b.signup({ setupCode: ` ${code} ` });
  t.equal(ok.status, 200, "the derived code registers the superadmin on any replica");
  t.same(await b.config(), { initialized: true, allowSignUp: false, setupCodeRequired: false });
  const again = await a.signup({ setupCode: code, email: 'other@example.test' });
  t.equal(again.status, 400);
  t.equal(again.body.message, 'Admin account has already been set up', "the contract's message afterwards");

  const audit = await a.svc.services.store.sql`select * from audit_log`;
  t.notMatch(JSON.stringify(audit), code, 'the code is not in the audit trail');
  t.notMatch(JSON.stringify(audit), code.replace(/-/g, ''));

  // Restarted once set up: no code is asked for, nothing said about one.
  const third = capture();
  await start(t, env, third.log);
  t.notOk(third.lines.some((l) => /setup code/.test(l)), 'nothing said once set up');
});

t.test('SETUP_TOKEN: the code every replica shares, never logged', async (t) => {
  const token = 'chart-generated-setup-token-0123456789';
  const env = await testEnv(t, 'embedded', { NODE_ENV: 'production', SETUP_TOKEN: token });
  const { lines, log } = capture();
  const a = await start(t, env, log);
  t.ok(lines.some((l) => /SETUP_TOKEN/.test(l)), 'the log says where the code comes from');
  t.notOk(lines.some((l) => l.includes(token)), 'the token itself is never logged');
  t.equal(process.env.SETUP_TOKEN, undefined);
  t.equal((await a.config()).setupCodeRequired, true);
  t.equal((await a.signup({ setupCode: token.slice(0, -1) })).status, 403, 'a prefix is not the code');
  t.equal((await a.signup({ setupCode: `${token}x` })).status, 403);
  t.equal((await a.signup({ setupCode: token })).status, 200);
  t.notMatch(JSON.stringify(await a.svc.services.store.sql`select * from audit_log`), token);
});

t.test('development keeps the open first visit', async (t) => {
  const env = await testEnv(t, 'embedded', { NODE_ENV: 'development' });
  const { lines, log } = capture();
  const a = await start(t, env, log);
  t.notOk(lines.some((l) => /setup code/.test(l)), 'no code printed');
  t.same(await a.config(), { initialized: false, allowSignUp: false, setupCodeRequired: false });
  const unused = await a.signup({ setupCode: 'anything at all here' });
  t.equal(unused.status, 422, 'a setup code the instance does not use is refused, not ignored');
  t.match(unused.body.message, /^setupCode is not used/);
  t.equal((await a.signup({})).status, 200, 'registration without a code');
});

t.test('SETUP_TOKEN is checked at start', async (t) => {
  const keys = await testEnv(t, 'embedded');
  t.throws(() => parseConfig({ ...keys, SETUP_TOKEN: 'short' }), new ConfigError('invalid SETUP_TOKEN: must be at least 16 characters'));
  t.equal(parseConfig({ ...keys, SETUP_TOKEN: '  ' }).setupToken, undefined, 'blank is unset');
  t.equal(parseConfig({ ...keys, SETUP_TOKEN: 'a-long-enough-setup-token' }).setupToken, 'a-long-enough-setup-token');
});

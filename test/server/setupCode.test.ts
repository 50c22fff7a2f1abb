// The first visit on an exposed fresh install (issue 12, point 5): in production mode the
// superadmin's registration needs a one-time setup code, SETUP_TOKEN's or a random one
// printed once to the log at start (never again, never in the audit trail). Development
// keeps the open first visit.
import t from 'tap';
import { startService } from '../../server/app.js';
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

t.test('production without SETUP_TOKEN: a random code, printed once', async (t) => {
  const env = await testEnv(t, 'postgres+redis', { NODE_ENV: 'production' });
  const first = capture();
  const a = await start(t, env, first.log);
  const printed = first.lines.filter((l) => /setup code: /.test(l));
  t.equal(printed.length, 1, 'one log line carries the code');
  const code = /setup code: ([0-9a-f-]+)/.exec(printed[0]!)![1]!;
  t.match(code, /^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/, '128 bits in groups');

  t.same(await a.config(), { initialized: false, allowSignUp: false, setupCodeRequired: true }, 'the UI is told to ask for it');
  const missing = await a.signup({});
  t.equal(missing.status, 422);
  t.match(missing.body.message, /^setupCode is required/);
  const wrong = await a.signup({ setupCode: code.replace(/^./, (c) => (c === '0' ? '1' : '0')) });
  t.equal(wrong.status, 403);
  t.equal(wrong.body.message, 'Invalid setup code');
  t.equal((await a.config()).initialized, false, 'refused signups set nothing up');

  // A second replica started before the first visit has its own code; not the first one's.
  const second = capture();
  const b = await start(t, env, second.log);
  const codeB = /setup code: ([0-9a-f-]+)/.exec(second.lines.join('\n'))![1]!;
  t.not(codeB, code);
  t.equal((await b.signup({ setupCode: code })).status, 403, "one replica's code does not open another");

  const ok = await a.signup({ setupCode: ` ${code} ` });
  t.equal(ok.status, 200, 'the printed code registers the superadmin');
  t.same(await a.config(), { initialized: true, allowSignUp: false, setupCodeRequired: false });
  const again = await a.signup({ setupCode: code, email: 'other@example.test' });
  t.equal(again.status, 400);
  t.equal(again.body.message, 'Admin account has already been set up', "the contract's message afterwards");

  const audit = await a.svc.services.store.sql`select * from audit_log`;
  t.notMatch(JSON.stringify(audit), code, 'the code is not in the audit trail');
  t.notMatch(JSON.stringify(audit), code.replace(/-/g, ''));

  // Restarted once set up: no code is printed again.
  const third = capture();
  await start(t, env, third.log);
  t.notOk(third.lines.some((l) => /setup code/.test(l)), 'never printed again');
  t.equal(first.lines.filter((l) => l.includes(code)).length, 1, 'printed exactly once');
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

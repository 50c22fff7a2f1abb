import t from 'tap';
import { isValidAuthSecret, parseConfig } from '../../server/config.js';

const good = { ENCRYPTION_KEY: '0123456789abcdef0123456789ABCDEF', AUTH_SECRET: Buffer.alloc(32, 7).toString('base64') };

t.test('defaults', async (t) => {
  const c = parseConfig(good);
  t.equal(c.port, 8080);
  t.equal(c.databaseUrl, undefined);
  t.equal(c.redisUrl, undefined);
  t.equal(c.encryptionKey, '0123456789abcdef0123456789abcdef');
  t.equal(c.authSecret.length, 32);
  t.equal(c.cookieSecure, 'auto');
});

t.test('COOKIE_SECURE: auto, always or never', async (t) => {
  for (const mode of ['auto', 'always', 'never'] as const) t.equal(parseConfig({ ...good, COOKIE_SECURE: mode }).cookieSecure, mode);
  for (const bad of ['yes', 'true', 'ALWAYS', '']) {
    t.throws(() => parseConfig({ ...good, COOKIE_SECURE: bad }), { message: /^invalid COOKIE_SECURE/ }, JSON.stringify(bad));
  }
});

t.test('the seed messages', async (t) => {
  t.throws(() => parseConfig({ ...good, ENCRYPTION_KEY: 'xyz' }), { message: 'ENCRYPTION_KEY must be 32 hex characters' });
  t.throws(() => parseConfig({ AUTH_SECRET: good.AUTH_SECRET }), { message: 'ENCRYPTION_KEY must be 32 hex characters' });
  t.throws(() => parseConfig({ ENCRYPTION_KEY: good.ENCRYPTION_KEY }), { message: 'invalid AUTH_SECRET' });
  t.throws(() => parseConfig({ ...good, AUTH_SECRET: Buffer.alloc(31).toString('base64') }), { message: 'invalid AUTH_SECRET' });
  t.throws(() => parseConfig({ ...good, PORT: 'eighty' }), { message: /^invalid PORT/ });
});

t.test('AUTH_SECRET forms', async (t) => {
  t.ok(isValidAuthSecret(Buffer.alloc(32).toString('base64')));
  t.ok(isValidAuthSecret(Buffer.alloc(48).toString('base64url')));
  t.notOk(isValidAuthSecret('a b c'));
});

t.test('empty DATABASE_URL / REDIS_URL mean unset', async (t) => {
  const c = parseConfig({ ...good, DATABASE_URL: '', REDIS_URL: ' ' });
  t.equal(c.databaseUrl, undefined);
  t.equal(c.redisUrl, undefined);
});

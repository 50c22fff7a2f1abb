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
  t.equal(parseConfig({ ...good, COOKIE_SECURE: '' }).cookieSecure, 'auto', 'empty counts as unset, like every setting');
  for (const bad of ['yes', 'true', 'ALWAYS']) {
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

t.test('empty settings mean unset, not zero', async (t) => {
  const blank = Object.fromEntries(
    ['PORT', 'HOST', 'DATA_DIR', 'DB_WAIT_SECONDS', 'CRYPTO_THREADS', 'MAX_BODY_BYTES', 'LOGIN_MAX_ATTEMPTS', 'LOGIN_LOCKOUT_SECONDS', 'SESSION_TTL_SECONDS', 'LOG_LEVEL'].map(
      (k) => [k, ''],
    ),
  );
  const c = parseConfig({ ...good, ...blank });
  const d = parseConfig(good);
  t.equal(c.port, 8080, 'PORT= is the default port, not a random one');
  t.equal(c.dbWaitMs, 180_000, 'DB_WAIT_SECONDS= waits the default, not zero');
  t.same(c, d, 'every blank setting is its default');
  t.equal(parseConfig({ ...good, PORT: ' 9090 ' }).port, 9090);
  t.equal(parseConfig({ ...good, PORT: '0' }).port, 0, 'an explicit 0 still means any free port');
  t.equal(parseConfig({ ...good, DB_WAIT_SECONDS: '0' }).dbWaitMs, 0);
});

t.test('numbers are decimal whole numbers within their range', async (t) => {
  for (const [k, v, m] of [
    ['PORT', '0x1F90', /^invalid PORT: must be a whole number$/],
    ['PORT', '8e3', /^invalid PORT: must be a whole number$/],
    ['PORT', '80.5', /^invalid PORT: must be a whole number$/],
    ['PORT', '-1', /^invalid PORT: must be a whole number$/],
    ['PORT', '65536', /^invalid PORT: must be at most 65535$/],
    ['DB_WAIT_SECONDS', 'soon', /^invalid DB_WAIT_SECONDS: must be a whole number$/],
    ['CRYPTO_THREADS', '0', /^invalid CRYPTO_THREADS: must be at least 1$/],
    ['MAX_BODY_BYTES', '100', /^invalid MAX_BODY_BYTES: must be at least 1024$/],
  ] as const) {
    t.throws(() => parseConfig({ ...good, [k]: v }), { message: m }, `${k}=${v}`);
  }
});

t.test('LOG_LEVEL', async (t) => {
  t.equal(parseConfig(good).logLevel, 'info');
  for (const l of ['debug', 'info', 'warn', 'error', 'silent'] as const) t.equal(parseConfig({ ...good, LOG_LEVEL: l }).logLevel, l);
  t.throws(() => parseConfig({ ...good, LOG_LEVEL: 'verbose' }), { message: /^invalid LOG_LEVEL/ });
});

t.test('REQUEST_DEADLINE_MS and SHUTDOWN_GRACE_SECONDS', async (t) => {
  const c = parseConfig(good);
  t.equal(c.requestDeadlineMs, 5000);
  t.equal(c.shutdownGraceSeconds, 25);
  t.equal(parseConfig({ ...good, REQUEST_DEADLINE_MS: '750', SHUTDOWN_GRACE_SECONDS: '0' }).requestDeadlineMs, 750);
  t.equal(parseConfig({ ...good, SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds, 0);
  t.equal(parseConfig({ ...good, REQUEST_DEADLINE_MS: '', SHUTDOWN_GRACE_SECONDS: '' }).requestDeadlineMs, 5000, 'empty means unset');
  t.throws(() => parseConfig({ ...good, REQUEST_DEADLINE_MS: '50' }), { message: /^invalid REQUEST_DEADLINE_MS: must be at least 100$/ });
  t.throws(() => parseConfig({ ...good, REQUEST_DEADLINE_MS: '5s' }), { message: /^invalid REQUEST_DEADLINE_MS: must be a whole number$/ });
  t.throws(() => parseConfig({ ...good, SHUTDOWN_GRACE_SECONDS: '3601' }), { message: /^invalid SHUTDOWN_GRACE_SECONDS: must be at most 3600$/ });
});

t.test('TRUSTED_PROXIES: a list of addresses and CIDR ranges, empty by default', async (t) => {
  t.same(parseConfig(good).trustedProxies, [], 'nobody is trusted by default');
  t.same(parseConfig({ ...good, TRUSTED_PROXIES: '' }).trustedProxies, []);
  t.same(parseConfig({ ...good, TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.1 fd00::/8' }).trustedProxies, [
    { ipAddress: '10.0.0.0', type: 'ipv4', prefix: 8 },
    { ipAddress: '192.168.1.1', type: 'ipv4' },
    { ipAddress: 'fd00::', type: 'ipv6', prefix: 8 },
  ]);
  for (const bad of ['10.0.0.0/33', 'proxy.local', '10.0.0.0/8,300.1.1.1', '::1/129', '10.0.0.0/']) {
    t.throws(() => parseConfig({ ...good, TRUSTED_PROXIES: bad }), { message: /^invalid TRUSTED_PROXIES: '.*' is not an IP address or CIDR range$/ }, bad);
  }
});

t.test('OIDC_JWKS_ALLOWED_ORIGINS: origins a discovery document may name for its keys, none by default', async (t) => {
  t.same(parseConfig(good).oidcJwksAllowedOrigins, [], 'only the document\'s own origin by default');
  t.same(parseConfig({ ...good, OIDC_JWKS_ALLOWED_ORIGINS: ' ' }).oidcJwksAllowedOrigins, []);
  t.same(parseConfig({ ...good, OIDC_JWKS_ALLOWED_ORIGINS: 'https://www.googleapis.com, https://10.0.0.1:6443' }).oidcJwksAllowedOrigins, [
    'https://www.googleapis.com',
    'https://10.0.0.1:6443',
  ]);
  for (const bad of ['www.googleapis.com', 'https://www.googleapis.com/oauth2/v3/certs', 'http://169.254.169.254']) {
    t.throws(() => parseConfig({ ...good, OIDC_JWKS_ALLOWED_ORIGINS: bad }), { message: /^invalid OIDC_JWKS_ALLOWED_ORIGINS: '/ }, bad);
  }
});

t.test('transport: CA files, the Redis password by value or file, each checked at start', async (t) => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'vault-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const passwordFile = join(dir, 'redis-password');
  writeFileSync(passwordFile, 'from-a-file\n');
  const redis = { ...good, REDIS_URL: 'redis://cache:6379/0' };

  t.equal(parseConfig({ ...redis, REDIS_PASSWORD_FILE: passwordFile }).redisPassword, 'from-a-file', 'the trailing newline is not part of it');
  t.equal(parseConfig({ ...redis, REDIS_PASSWORD: 'by-value' }).redisPassword, 'by-value');
  t.equal(parseConfig(redis).redisPassword, undefined);
  t.throws(() => parseConfig({ ...redis, REDIS_PASSWORD: 'a', REDIS_PASSWORD_FILE: passwordFile }), { message: 'REDIS_PASSWORD and REDIS_PASSWORD_FILE are both set: give one' });
  t.throws(() => parseConfig({ ...redis, REDIS_PASSWORD_FILE: join(dir, 'missing') }), { message: /^REDIS_PASSWORD_FILE: cannot read .*missing \(ENOENT\)$/ });
  writeFileSync(join(dir, 'empty'), '\n');
  t.throws(() => parseConfig({ ...redis, REDIS_PASSWORD_FILE: join(dir, 'empty') }), { message: /REDIS_PASSWORD_FILE: .* is empty/ });
  t.throws(() => parseConfig({ ...redis, REDIS_URL: 'redis://:inurl@cache:6379', REDIS_PASSWORD: 'a' }), { message: /give it once/ });
  t.throws(() => parseConfig({ ...good, REDIS_PASSWORD: 'a' }), { message: 'REDIS_PASSWORD is set but REDIS_URL is not' });
  t.throws(() => parseConfig({ ...good, REDIS_CA_FILE: '/ca.pem' }), { message: 'REDIS_CA_FILE is set but REDIS_URL is not' });
  t.throws(() => parseConfig({ ...redis, REDIS_CA_FILE: '/ca.pem' }), { message: /REDIS_CA_FILE is set but REDIS_URL is redis:\/\// });
  t.throws(() => parseConfig({ ...good, DATABASE_CA_FILE: '/ca.pem' }), { message: /^DATABASE_CA_FILE is set but DATABASE_URL is not/ });
  t.throws(() => parseConfig({ ...good, DATABASE_URL: 'postgres://db/vault?sslmode=on' }), { message: /^DATABASE_URL: sslmode=on is not one of/ });
  t.throws(() => parseConfig({ ...good, DATABASE_URL: 'postgres://db/vault?sslmode=verify-full', DATABASE_CA_FILE: join(dir, 'nope.pem') }), {
    message: /^DATABASE_CA_FILE: cannot read/,
  });
  const c = parseConfig({ ...good, DATABASE_URL: 'postgres://db/vault?sslmode=require' });
  t.equal(c.databaseCaFile, undefined);
});

// TLS to PostgreSQL and Redis, for real: a private PostgreSQL cluster with ssl=on and a
// private TLS-only redis-server, both with a certificate for 127.0.0.1 signed by a CA made
// here. verify-full with the right CA connects (and the session is encrypted); a wrong CA
// or a wrong host name (127.0.0.2 is the same server, not the certificate's name) is
// refused at once with one line naming the settings, without waiting out the start-up wait.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { redisBus } from '../../storage/cache.js';
import { connectDatabase } from '../../storage/db.js';
import { isCertificateError, postgresTls, redisTransport, TransportConfigError } from '../../storage/tls.js';
import { freePort } from '../helpers/redis.js';
import { makeCertificates, startTlsPostgres, startTlsRedis } from '../helpers/tls.js';

const certs = await makeCertificates(t);
const WAIT_MS = 20_000;

t.test('postgresTls: sslmode and the CA, with libpq meaning', async (t) => {
  const base = 'postgres://u:p@db.example:5432/vault';
  t.same(postgresTls(base), { url: base, ssl: false, mode: 'disable' }, 'no sslmode: no TLS, as before');
  t.same(postgresTls(`${base}?sslmode=disable`), { url: base, ssl: false, mode: 'disable' });
  t.same(postgresTls(`${base}?sslmode=require&application_name=x`), { url: `${base}?application_name=x`, ssl: 'require', mode: 'require' }, 'other parameters stay');

  const full = postgresTls(`${base}?sslmode=verify-full`, certs.ca);
  t.equal(full.url, base, 'sslmode is taken out of the URL (postgres.js would send it to the server)');
  t.equal(full.mode, 'verify-full');
  t.match(full.ssl, { rejectUnauthorized: true, ca: readFileSync(certs.ca, 'utf8') });
  t.notOk(typeof full.ssl === 'object' && full.ssl.checkServerIdentity, 'verify-full keeps Node\'s host name check');
  t.match(full.ssl, { host: 'db.example' }, 'against the URL\'s host (postgres.js gives Node no host name for an IP address)');
  t.match(postgresTls('postgres://u:p@127.0.0.1/vault?sslmode=verify-full').ssl, { host: '127.0.0.1' });
  t.match(postgresTls('postgres://u:p@[::1]:5432/vault?sslmode=verify-full').ssl, { host: '::1' });

  const ca = postgresTls(`${base}?sslmode=verify-ca`, certs.ca);
  t.equal(ca.mode, 'verify-ca');
  t.type(typeof ca.ssl === 'object' && ca.ssl.checkServerIdentity, 'function', 'verify-ca: the chain only');

  t.equal(postgresTls(base, certs.ca).mode, 'verify-full', 'a CA without sslmode means verify-full');
  t.equal(postgresTls(`${base}?sslmode=require`, certs.ca).mode, 'verify-ca', 'require with a CA is verify-ca (libpq)');
  const fromUrl = postgresTls(`${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(certs.ca)}`);
  t.equal(fromUrl.url, base, 'sslrootcert is taken out of the URL');
  t.match(fromUrl.ssl, { ca: readFileSync(certs.ca, 'utf8') });
  const system = postgresTls(`${base}?sslrootcert=system`);
  t.equal(system.mode, 'verify-full');
  t.notOk(typeof system.ssl === 'object' && system.ssl.ca, 'sslrootcert=system: the system CAs');

  const refused: Array<[string, string | undefined, RegExp]> = [
    [`${base}?sslmode=verify`, undefined, /sslmode=verify is not one of/],
    [`${base}?sslmode=prefer`, certs.ca, /DATABASE_CA_FILE is set but sslmode=prefer verifies nothing/],
    [`${base}?sslmode=disable`, certs.ca, /verifies nothing/],
    [`${base}?sslrootcert=/x`, certs.ca, /name the CA once/],
    [`${base}?sslmode=require&sslrootcert=system`, undefined, /sslrootcert=system needs sslmode=verify-full/],
    [`${base}?sslcert=/c.pem`, undefined, /sslcert is not supported/],
    [`${base}?ssl=true`, undefined, /use sslmode=/],
    ['postgres://u:p@db1:5432,db2:5432/vault?sslmode=verify-full', undefined, /verify-full takes one host/],
    [base, join(certs.dir, 'missing.pem'), /DATABASE_CA_FILE: cannot read .*missing\.pem \(ENOENT\)/],
    [base, certs.key, /DATABASE_CA_FILE: .* holds no PEM certificate/],
  ];
  for (const [url, caFile, message] of refused) t.throws(() => postgresTls(url, caFile), { name: 'TransportConfigError', message }, `${url} ${caFile ?? ''}`);
});

t.test('redisTransport: rediss:// verifies, a CA or a password given twice is refused', async (t) => {
  t.same(redisTransport('redis://cache:6379/0'), {});
  t.same(redisTransport('rediss://cache:6379/0'), { tls: {} }, 'rediss://: system CAs, host name checked (ioredis defaults)');
  t.same(redisTransport('rediss://cache:6379/0', { caFile: certs.ca, password: 'pw' }), { tls: { ca: readFileSync(certs.ca, 'utf8') }, password: 'pw' });
  t.throws(() => redisTransport('redis://cache:6379', { caFile: certs.ca }), /REDIS_CA_FILE is set but REDIS_URL is redis:\/\/ \(no TLS\)/);
  t.throws(() => redisTransport('redis://:inurl@cache:6379', { password: 'pw' }), /give it once/);
  t.throws(() => redisTransport('http://cache:6379'), TransportConfigError);
});

t.test('PostgreSQL with ssl=on', async (t) => {
  const pg = await startTlsPostgres(t, certs);
  const url = (host: string, query: string) => `postgres://postgres@${host}:${pg.port}/postgres?${query}`;
  const tlsOf = async (databaseUrl: string, caFile?: string) => {
    const db = await connectDatabase({ databaseUrl, caFile, dataDir: certs.dir, waitMs: WAIT_MS, poolSize: 1 });
    try {
      const [row] = await db.sql<{ ssl: boolean }[]>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
      return row!.ssl;
    } finally {
      await db.close();
    }
  };
  const refusal = (code: RegExp) =>
    new RegExp(`^database TLS: the server's certificate was refused \\((${code.source})[^\\n]*\\); check DATABASE_CA_FILE \\(or sslrootcert\\) and the host name in DATABASE_URL$`);

  t.equal(await tlsOf(url('127.0.0.1', 'sslmode=verify-full'), certs.ca), true, 'verify-full, the right CA (DATABASE_CA_FILE): encrypted');
  t.equal(await tlsOf(url('127.0.0.1', `sslmode=verify-full&sslrootcert=${encodeURIComponent(certs.ca)}`)), true, 'the CA as sslrootcert');
  t.equal(await tlsOf(url('127.0.0.1', 'sslmode=disable')), false, 'disable: plain');

  await t.rejects(
    connectDatabase({ databaseUrl: url('127.0.0.1', 'sslmode=verify-full'), caFile: certs.otherCa, dataDir: certs.dir, waitMs: WAIT_MS }),
    { message: refusal(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) },
    'a wrong CA is refused at once',
  );
  await t.rejects(
    connectDatabase({ databaseUrl: url('127.0.0.2', 'sslmode=verify-full'), caFile: certs.ca, dataDir: certs.dir, waitMs: WAIT_MS }),
    { message: refusal(/ERR_TLS_CERT_ALTNAME_INVALID/) },
    'the right CA, a host name the certificate does not name: refused',
  );
  await t.rejects(
    connectDatabase({ databaseUrl: url('127.0.0.1', 'sslmode=verify-full'), dataDir: certs.dir, waitMs: WAIT_MS }),
    { message: refusal(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) },
    'verify-full without a CA: the system CAs, which do not know this one',
  );
  t.equal(await tlsOf(url('127.0.0.2', 'sslmode=verify-ca'), certs.ca), true, 'verify-ca checks the chain, not the host name');
  await t.rejects(
    connectDatabase({ databaseUrl: url('127.0.0.1', 'sslmode=verify-ca'), caFile: certs.otherCa, dataDir: certs.dir, waitMs: WAIT_MS }),
    { message: refusal(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) },
    'verify-ca with a wrong CA: refused',
  );
  await t.rejects(
    connectDatabase({ databaseUrl: url('127.0.0.1', 'sslmode=require'), caFile: certs.otherCa, dataDir: certs.dir, waitMs: WAIT_MS }),
    { message: refusal(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) },
    'require with a CA verifies the chain (libpq), where postgres.js alone verifies nothing',
  );
  t.equal(await tlsOf(url('127.0.0.2', 'sslmode=require')), true, 'require without a CA: encrypted, not verified (documented)');
});

t.test('Redis over TLS (rediss://), password from a config file', async (t) => {
  const password = 'f'.repeat(8) + Math.random().toString(16).slice(2);
  const redis = await startTlsRedis(t, certs, password, await freePort());
  t.notMatch(readFileSync(`/proc/${redis.pid}/cmdline`, 'utf8'), password, 'the password is not among redis-server\'s arguments');

  const bus = await redisBus(redis.url, { waitMs: WAIT_MS, transport: redisTransport(redis.url, { caFile: certs.ca, password }) });
  t.teardown(() => bus.close());
  t.equal(bus.live, true, 'rediss:// with the right CA and password: subscribed');
  const other = await redisBus(redis.url, { waitMs: WAIT_MS, transport: redisTransport(redis.url, { caFile: certs.ca, password }) });
  t.teardown(() => other.close());
  const heard = new Promise<string>((resolve) => other.subscribe((topic, key) => resolve(`${topic}/${key}`)));
  await bus.publish('project', 'p1');
  t.equal(await heard, 'project/p1', 'an invalidation crosses over TLS');

  const refusal = (code: RegExp) =>
    new RegExp(`^redis TLS: the server's certificate was refused \\((${code.source})[^\\n]*\\); check REDIS_CA_FILE and the host name in REDIS_URL$`);
  await t.rejects(
    redisBus(redis.url, { waitMs: WAIT_MS, transport: redisTransport(redis.url, { caFile: certs.otherCa, password }) }),
    { message: refusal(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) },
    'a wrong CA is refused at once',
  );
  const wrongHost = `rediss://127.0.0.2:${redis.port}`;
  await t.rejects(
    redisBus(wrongHost, { waitMs: WAIT_MS, transport: redisTransport(wrongHost, { caFile: certs.ca, password }) }),
    { message: refusal(/ERR_TLS_CERT_ALTNAME_INVALID/) },
    'a host name the certificate does not name: refused',
  );
  await t.rejects(
    redisBus(redis.url, { waitMs: 0, transport: redisTransport(redis.url, { caFile: certs.ca }) }),
    /redis unreachable after 0 s: .*NOAUTH/,
    'without the password: refused by Redis',
  );
});

t.test('isCertificateError: verification failures only', async (t) => {
  t.ok(isCertificateError(Object.assign(new Error('x'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' })));
  t.notOk(isCertificateError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })));
  t.notOk(isCertificateError(undefined));
});

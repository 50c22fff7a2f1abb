// The service's process against a TLS PostgreSQL and a TLS-only Redis: a certificate it
// must not trust stops the start at once with one line on stderr naming the settings to
// check; rediss:// with REDIS_CA_FILE and REDIS_PASSWORD_FILE starts, and the password is
// neither among the process's arguments nor in its environment.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runToExit, serviceKeys, spawnService } from '../faults/helpers.js';
import { freePort } from '../helpers/redis.js';
import { makeCertificates, startTlsPostgres, startTlsRedis } from '../helpers/tls.js';

const certs = await makeCertificates(t);
const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-transport-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

/** stderr holds exactly one line, and it matches. */
function oneLine(t: Test, stderr: string, pattern: RegExp) {
  const lines = stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line on stderr: ${stderr}`);
  t.match(lines[0], pattern);
}

t.test('PostgreSQL: a wrong CA or host name stops the start with one line', async (t) => {
  const pg = await startTlsPostgres(t, certs);
  const base = { ...serviceKeys(), DATA_DIR: dataDir(), DB_WAIT_SECONDS: '60', PORT: '0' };
  for (const [what, host, ca, code] of [
    ['wrong CA', '127.0.0.1', certs.otherCa, /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/],
    ['wrong host name', '127.0.0.2', certs.ca, /ERR_TLS_CERT_ALTNAME_INVALID/],
  ] as const) {
    const r = await runToExit({ ...base, DATABASE_URL: `postgres://postgres@${host}:${pg.port}/postgres?sslmode=verify-full`, DATABASE_CA_FILE: ca });
    t.equal(r.code, 1, `${what}: exit 1`);
    oneLine(t, r.stderr, new RegExp(`^database TLS: the server's certificate was refused \\((${code.source}).*check DATABASE_CA_FILE`));
  }
  const ok = await spawnService(t, { ...base, DATABASE_URL: `postgres://postgres@127.0.0.1:${pg.port}/postgres?sslmode=verify-full`, DATABASE_CA_FILE: certs.ca });
  t.match(ok.stdout(), /database: postgres/, 'the right CA and host name: the service starts');
});

t.test('Redis: rediss:// with REDIS_CA_FILE and REDIS_PASSWORD_FILE; the password stays out of argv and environ', async (t) => {
  const password = randomBytes(12).toString('hex');
  const redis = await startTlsRedis(t, certs, password, await freePort());
  const passwordFile = join(certs.dir, 'redis-password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  const env = { ...serviceKeys(), DATA_DIR: dataDir(), DB_WAIT_SECONDS: '60', REDIS_URL: redis.url, REDIS_CA_FILE: certs.ca, REDIS_PASSWORD_FILE: passwordFile };

  const service = await spawnService(t, env);
  t.match(service.stdout(), /cache: redis/, 'started with the Redis bus');
  const pid = service.child.pid!;
  t.notMatch(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), password, 'not in the service\'s arguments');
  t.notMatch(readFileSync(`/proc/${pid}/environ`, 'utf8'), password, 'not in the service\'s environment');
  t.notMatch(readFileSync(`/proc/${redis.pid}/cmdline`, 'utf8'), password, 'not in redis-server\'s arguments');

  const wrongCa = await runToExit({ ...env, DATA_DIR: dataDir(), REDIS_CA_FILE: certs.otherCa });
  t.equal(wrongCa.code, 1);
  oneLine(t, wrongCa.stderr, /^redis TLS: the server's certificate was refused \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY).*check REDIS_CA_FILE/);

  const plain = await runToExit({ ...env, DATA_DIR: dataDir(), REDIS_URL: `redis://127.0.0.1:${redis.port}` });
  t.equal(plain.code, 1);
  oneLine(t, plain.stderr, /^REDIS_CA_FILE is set but REDIS_URL is redis:\/\/ \(no TLS\): use rediss:\/\/$/);
});

// The login's structural guarantees, through the users domain's dependency injection:
// a wrong password and an unknown address run the same SQL statements and the same
// number of argon2 verifications (so their timing cannot tell them apart, without a
// timed assertion), and a signup on a set-up instance does no argon2 work.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { loginAttemptKeys, userSessionTokens } from '../../../server/auth/tokens.js';
import { writePipeline } from '../../../server/domain/pipeline.js';
import { usersDomain } from '../../../server/domain/users.js';
import { AppError } from '../../../server/errors.js';
import { memoryBus } from '../../../storage/cache.js';
import { connectDatabase, type Sql } from '../../../storage/db.js';
import { createStore } from '../../../storage/index.js';
import { openAuditKey } from '../../../server/domain/audit.js';
import { instanceRecord } from '../../../server/domain/integrity.js';
import { openKeyring, privilegeKeyOf } from '../../../server/domain/keyring.js';
import { migrate } from '../../../storage/migrate.js';
import { freshDatabase } from '../../helpers/db.js';
import { seedEmbeddedDataDir } from '../../helpers/embedded.js';
import { BACKENDS, type Backend } from '../../helpers/service.js';

const ADMIN = { email: 'admin@example.test', password: 'a long admin passphrase', firstName: 'Ada', ip: null };
const MAX_ATTEMPTS = 3;

/** The pool, with every statement it runs (outside transactions) recorded as its SQL text. */
function recordingSql(sql: Sql) {
  const statements: string[] = [];
  const proxy = new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const strings = args[0] as TemplateStringsArray | undefined;
      if (Array.isArray(strings) && 'raw' in strings) statements.push(strings.join('$').replace(/\s+/g, ' ').trim());
      return Reflect.apply(target, thisArg, args);
    },
  });
  return { sql: proxy, statements };
}

async function setUp(t: { teardown(fn: () => unknown): void }, backend: Backend) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-users-domain-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  if (backend === 'embedded') await seedEmbeddedDataDir(dataDir);
  const db = await connectDatabase({ databaseUrl: backend === 'postgres+redis' ? await freshDatabase(t) : undefined, dataDir, waitMs: 10_000 });
  t.teardown(() => db.close());
  await migrate(db.sql);
  const crypto = await createCrypto({ encryptionKeyHex: randomBytes(16).toString('hex'), threads: 1 });
  t.teardown(() => crypto.close());
  const counts = { hash: 0, verify: 0 };
  const countingCrypto = {
    hashPassword: (password: string) => (counts.hash++, crypto.hashPassword(password)),
    verifyPassword: (hash: string, password: string) => (counts.verify++, crypto.verifyPassword(hash, password)),
  };
  const boot = createStore(db.sql);
  const auditKey = await openAuditKey(boot, crypto, await instanceRecord(boot, crypto, await openKeyring(boot, crypto)));
  const recorder = recordingSql(db.sql);
  const authSecret = randomBytes(32);
  const store = createStore(recorder.sql, { auditKey, privilegeKey: privilegeKeyOf(crypto) });
  const bus = memoryBus();
  const users = await usersDomain({
    store,
    crypto: countingCrypto,
    sessions: userSessionTokens(authSecret),
    emailKey: loginAttemptKeys(authSecret),
    bus,
    // People's own changes only: nothing here is authorized by a project role.
    changes: writePipeline({ store, bus, access: { authorize: () => Promise.reject(new Error('no project access here')) } }),
    sessionTtlSeconds: 3600,
    lockout: { maxAttempts: MAX_ATTEMPTS, seconds: 300 },
  });

  /** What one failed login did: its error code, statements and argon2 calls. */
  async function failedLogin(email: string, password: string) {
    recorder.statements.length = 0;
    counts.verify = 0;
    counts.hash = 0;
    const err = await users.login({ email, password, ip: null }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof AppError)) throw new Error(`expected a refused login for ${JSON.stringify(email)}, got ${String(err)}`);
    return { code: err.code, statements: [...recorder.statements], verifications: counts.verify, hashes: counts.hash };
  }
  return { users, counts, failedLogin };
}

for (const backend of BACKENDS) {
  t.test(`a wrong password and an unknown address do the same work (${backend})`, async (t) => {
    const { users, failedLogin } = await setUp(t, backend);
    await users.signup(ADMIN);

    const known = await failedLogin(ADMIN.email, 'not the password!');
    const unknown = await failedLogin('nobody@example.test', 'not the password!');
    const impossible = await failedLogin('nobody\u0000@example.test', 'not the password!');
    t.equal(known.code, 'UNAUTHORIZED');
    t.ok(known.statements.length >= 2, `statements recorded: ${known.statements.length}`);
    t.equal(known.verifications, 1, 'one argon2 verification for a wrong password');
    t.equal(known.hashes, 0);
    t.same(unknown, known, 'an unknown address: same answer, statements and argon2 work');
    t.same(impossible, known, 'an address no account can have (NUL): the same too');

    // Up to the lock: every attempt is claimed; then both are refused without argon2.
    for (let i = 1; i < MAX_ATTEMPTS; i++) {
      t.same(await failedLogin('nobody@example.test', 'wrong again!!'), await failedLogin(ADMIN.email, 'wrong again!!'));
    }
    const lockedKnown = await failedLogin(ADMIN.email, ADMIN.password);
    const lockedUnknown = await failedLogin('nobody@example.test', ADMIN.password);
    t.equal(lockedKnown.code, 'RATE_LIMITED', 'the right password is refused while locked');
    t.equal(lockedKnown.verifications, 0, 'a locked address costs no argon2 work');
    t.same(lockedUnknown, lockedKnown, 'a locked unknown address: same answer and work');
  });

  t.test(`a signup on a set-up instance does no argon2 work (${backend})`, async (t) => {
    const { users, counts } = await setUp(t, backend);
    counts.hash = 0;
    await users.signup(ADMIN);
    t.equal(counts.hash, 1, 'the first signup hashes its password once');
    counts.hash = 0;
    await t.rejects(users.signup({ ...ADMIN, email: 'second@example.test' }), { code: 'BAD_REQUEST', message: 'Admin account has already been set up' });
    t.equal(counts.hash, 0, 'no hashing once set up');
  });
}

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
import { sourceBudget } from '../../../server/auth/loginSources.js';
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

async function setUp(t: { teardown(fn: () => unknown): void }, backend: Backend, budgetMax = 1000) {
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
    budget: sourceBudget({ max: budgetMax, windowSeconds: 60 }),
  });

  /** What one failed login did: its error code, statements and argon2 calls. */
  async function failedLogin(email: string, password: string, ip: string | null = null) {
    recorder.statements.length = 0;
    counts.verify = 0;
    counts.hash = 0;
    const err = await users.login({ email, password, ip }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof AppError)) throw new Error(`expected a refused login for ${JSON.stringify(email)}, got ${String(err)}`);
    return { code: err.code, message: err.message, statements: [...recorder.statements], verifications: counts.verify, hashes: counts.hash };
  }
  return { users, counts, failedLogin, recorder };
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

t.test('a source over its budget is refused before any argon2 work or statement; other sources are not', async (t) => {
  const BUDGET = 5;
  const { users, counts, failedLogin, recorder } = await setUp(t, 'postgres+redis', BUDGET);
  await users.signup({ ...ADMIN, ip: '192.0.2.1' });
  // A spray of addresses from one source: each costs one verification, up to the budget.
  for (let i = 0; i < BUDGET; i++) {
    const r = await failedLogin(`user${i}@example.test`, 'not the password!', '203.0.113.7');
    t.same([r.code, r.verifications], ['UNAUTHORIZED', 1], `attempt ${i + 1}: verified`);
  }
  const over = await failedLogin('another@example.test', 'not the password!', '203.0.113.7');
  t.equal(over.code, 'RATE_LIMITED', 'over the budget: 429');
  t.match(over.message, /^Too many failed login attempts; try again in \d+ seconds$/);
  t.equal(over.verifications, 0, 'no argon2 verification');
  t.same(over.statements, [], 'not even a statement');
  const rightOver = await failedLogin(ADMIN.email, ADMIN.password, '203.0.113.7').catch((e: unknown) => e);
  t.equal((rightOver as { code: string }).code, 'RATE_LIMITED', 'the source gets nothing verified, a right password neither');
  // Another source has its own budget: the superadmin logs in from it.
  counts.verify = 0;
  const session = await users.login({ email: ADMIN.email, password: ADMIN.password, ip: '198.51.100.4' });
  t.ok(session.token, 'another source logs in');
  t.equal(counts.verify, 1);
  // Refused attempts and successes give their budget back: a locked address's refusals
  // (no argon2 work) do not use up the source.
  for (let i = 0; i < MAX_ATTEMPTS; i++) t.equal((await failedLogin('locked@example.test', 'wrong!!', '198.51.100.9')).code, 'UNAUTHORIZED');
  for (let i = 0; i < 10; i++) t.equal((await failedLogin('locked@example.test', 'wrong!!', '198.51.100.9')).code, 'RATE_LIMITED');
  t.equal((await failedLogin('other@example.test', 'wrong!!', '198.51.100.9')).code, 'UNAUTHORIZED', 'still within its budget: 3 verified failures of 5');
  // Password change and signup draw on the same budget, before argon2.
  counts.verify = 0;
  counts.hash = 0;
  recorder.statements.length = 0;
  const change = await users
    .changePassword({ userId: session.user.id, sessionId: 'x' }, { oldPassword: ADMIN.password, newPassword: 'a new long passphrase' }, '203.0.113.7')
    .catch((e: unknown) => e);
  t.equal((change as { code: string }).code, 'RATE_LIMITED', 'a password change from the spent source: 429');
  t.same([counts.verify, counts.hash], [0, 0], 'no argon2 work for it');
  t.equal(users.sweep() >= 0, true);
});

t.test('failures are counted per address and source: another source still logs in', async (t) => {
  const { users, failedLogin } = await setUp(t, 'postgres+redis');
  await users.signup({ ...ADMIN, ip: '192.0.2.1' });
  for (let i = 0; i < MAX_ATTEMPTS; i++) t.equal((await failedLogin(ADMIN.email, 'wrong guess!!', '203.0.113.7')).code, 'UNAUTHORIZED');
  const locked = await failedLogin(ADMIN.email, ADMIN.password, '203.0.113.7');
  t.same([locked.code, locked.verifications], ['RATE_LIMITED', 0], "the guesser's source is locked, even with the right password");
  t.ok((await users.login({ email: ADMIN.email, password: ADMIN.password, ip: '198.51.100.4' })).token, 'another source logs in with the right password');
  // An IPv6 client's whole /64 is one source; another /64 is another.
  for (let i = 0; i < MAX_ATTEMPTS; i++) t.equal((await failedLogin(ADMIN.email, 'wrong guess!!', `2001:db8:1:2::${i + 1}`)).code, 'UNAUTHORIZED');
  t.equal((await failedLogin(ADMIN.email, ADMIN.password, '2001:db8:1:2:ffff::9')).code, 'RATE_LIMITED', 'the same /64: locked');
  t.ok((await users.login({ email: ADMIN.email, password: ADMIN.password, ip: '2001:db8:1:3::1' })).token, 'another /64 logs in');
});

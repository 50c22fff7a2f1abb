// People: first-visit registration of the superadmin, password login (argon2id, off
// the event loop), sessions that logout ends.
//
// Login failures are counted per e-mail address and source (client address; an IPv6
// /64), whether an account has the address or not, and a failed login does the same
// statements and the same argon2 work either way: neither the answer, the lockout nor the
// time taken tells whether an address has an account. A stranger's guesses lock out only
// the stranger's source. Each source also has a budget of argon2 work (loginSources.ts),
// taken before any: spraying many addresses from one source is refused (429) cheaply.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import { ReadThroughCache, type CacheBus } from '../../storage/cache.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { SessionState, UserRow } from '../../storage/users.js';
import { loginSource, type SourceBudget } from '../auth/loginSources.js';
import { newTokenSecret, secretMatches, type UserSessionTokens } from '../auth/tokens.js';
import { AppError } from '../errors.js';
import { isUuid, requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { DEFAULT_CACHE_MAX_BYTES, SESSIONS_SHARE, topics } from './caches.js';
import type { Change, Grant, Origin, WritePipeline } from './pipeline.js';
import { CONTROL_CHARACTER, LONE_SURROGATE, validateName } from './text.js';

export interface UserActor {
  kind: 'user';
  userId: string;
  sessionId: string;
  superadmin: boolean;
}

export interface SessionResult {
  token: string;
  csrfToken: string;
  expiresAt: Date;
  user: { id: string; email: string; firstName: string; lastName: string; superAdmin: boolean };
}

export interface PublicUser {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  superAdmin: boolean;
  disabled: boolean;
  createdAt: Date;
}

const publicUser = (u: {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  isSuperadmin: boolean;
  disabledAt?: Date | null;
  createdAt: Date;
}): PublicUser => ({
  id: u.id,
  email: u.email,
  firstName: u.firstName,
  lastName: u.lastName,
  superAdmin: u.isSuperadmin,
  disabled: u.disabledAt != null,
  createdAt: u.createdAt,
});

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const invalidLogin = () => new AppError('UNAUTHORIZED', 'Invalid login');
const alreadySetUp = () => new AppError('BAD_REQUEST', 'Admin account has already been set up');
const noSuchUser = (id: string) => new AppError('NOT_FOUND', `User with ID '${id}' not found`);
export const LAST_SUPERADMIN_MESSAGE =
  'The last superadmin cannot be disabled or deleted: the instance would have nobody to administer it';

const normaliseEmail = (raw: string) => raw.trim().toLowerCase();

const LOGIN_LOCKED = 'Too many failed login attempts';
const PASSWORD_CHECKS_LOCKED = 'Too many failed password checks';
/** A 429 with Retry-After: alike for a locked account and source and for a source over its budget. */
const rateLimited = (message: string, seconds: number) =>
  new AppError('RATE_LIMITED', `${message}; try again in ${seconds} seconds`, { headers: { 'Retry-After': String(seconds) } });

/** No account can have it (refused at creation), and PostgreSQL text cannot hold a NUL. */
const impossibleEmail = (email: string) => CONTROL_CHARACTER.test(email) || LONE_SURROGATE.test(email);

export interface UsersDeps {
  store: { users: Pick<Store['users'], 'count' | 'byEmail' | 'byId' | 'liveSession' | 'list' | 'credentialHolds' | 'isSuperadmin'>; loginAttempts: Pick<Store['loginAttempts'], 'purgeStale' | 'claim'> };
  crypto: Pick<Crypto, 'hashPassword' | 'verifyPassword'>;
  sessions: UserSessionTokens;
  /** Keys the login-attempt counters by address and source (an HMAC: see server/auth/tokens.ts). */
  emailKey: (normalisedEmail: string, source: string) => Buffer;
  /** Argon2 work per source (login, password change, signup), taken before any. */
  budget: SourceBudget;
  /** Where the session cache hears that a session ended (on any replica). */
  bus: Pick<CacheBus, 'subscribe' | 'onReset' | 'live' | 'epoch'>;
  changes: Pick<WritePipeline, 'byCaller' | 'inOrganization'>;
  sessionTtlSeconds: number;
  lockout: { maxAttempts: number; seconds: number };
  /** CACHE_MAX_BYTES: the session cache takes its SESSIONS_SHARE (server/domain/caches.ts). */
  cacheMaxBytes?: number;
  /** The clock sessions are issued and checked by: the database's (storage/clock.ts). */
  now?: () => number;
  /** Production mode: the first visit needs this one-time code (see setupCode below). */
  setupCode?: SetupCode;
}

/** The first visit's code, held only as its SHA-256 and compared in constant time. */
export interface SetupCode {
  matches(code: string): boolean;
  /** Forgets the code (the first visit is done). */
  forget(): void;
  readonly active: boolean;
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function setupCode(code: string): SetupCode {
  let hash: Buffer | undefined = sha256(code.trim());
  return {
    // Hashing first makes the comparison's length fixed: nothing leaks the code's length.
    matches: (candidate) => hash !== undefined && timingSafeEqual(sha256(candidate.trim()), hash),
    forget: () => {
      hash = undefined;
    },
    get active() {
      return hash !== undefined;
    },
  };
}

export async function usersDomain(deps: UsersDeps) {
  const { store, crypto, sessions, emailKey, bus, changes, lockout, budget } = deps;

  /**
   * Runs `work` (argon2) on the source's budget: refused (429, `message`) before any when
   * the source has none left. `work` says whether the budget is given back: true when no
   * argon2 work was needed or the attempt succeeded. A throw counts as a failure once
   * `spent()` was called (the argon2 work began), else it is given back.
   */
  async function onBudget<T>(ip: string | null, message: string, work: (spent: () => void) => Promise<T>): Promise<T> {
    const source = loginSource(ip);
    const wait = budget.take(source);
    if (wait > 0) throw rateLimited(message, wait);
    let hashed = false;
    let keep = false;
    try {
      const out = await work(() => (hashed = true));
      return out;
    } catch (err) {
      keep = hashed;
      throw err;
    } finally {
      if (!keep) budget.refund(source);
    }
  }
  // An unknown email is checked against this hash, so both failures take as long.
  const dummyHash = await crypto.hashPassword(randomBytes(16).toString('hex'));
  const now = deps.now ?? Date.now;
  const live = new ReadThroughCache<SessionState | null>({ maxEntries: 10_000, maxBytes: Math.floor((deps.cacheMaxBytes ?? DEFAULT_CACHE_MAX_BYTES) * SESSIONS_SHARE) }, 30_000, bus);
  bus.subscribe((topic, key) => topic === topics.userSession && live.invalidate(key));
  bus.onReset(() => live.clear());

  function validateProfile(input: { email: string; password: string; firstName: string; lastName?: string }) {
    const email = normaliseEmail(input.email);
    if (!EMAIL.test(email) || impossibleEmail(email)) throw new AppError('VALIDATION', 'email is not a valid address');
    validatePassword(input.password);
    const firstName = validateName(input.firstName, 'firstName');
    // Optional: absent or blank is no last name; anything else follows the name rules.
    const lastName = input.lastName?.trim() ? validateName(input.lastName, 'lastName') : '';
    return { email, firstName, lastName };
  }

  function validatePassword(password: string, field = 'password') {
    if (password.length < 12 || password.length > 256) {
      throw new AppError('VALIDATION', `${field} must be 12 to 256 characters`);
    }
  }

  /** The person a change is about, locked for the transaction; 404 when there is none. */
  async function lockTarget(c: Change, who: { userId: string } | { email: string }) {
    let id: string | undefined;
    if ('userId' in who) {
      id = isUuid(who.userId) ? who.userId.toLowerCase() : undefined;
    } else {
      const email = normaliseEmail(who.email);
      id = impossibleEmail(email) ? undefined : (await c.s.users.byEmail(email))?.id;
      if (!id) throw new AppError('NOT_FOUND', `User with email '${email}' not found`);
    }
    const row = id ? await c.s.users.lockById(id) : undefined;
    if (!row) throw noSuchUser('userId' in who ? who.userId : who.email);
    return row;
  }

  /** Refuses to disable or delete the only enabled superadmin (409). */
  async function refuseLastSuperadmin(c: Change, targetId: string) {
    const others = (await c.s.users.lockEnabledSuperadmins()).filter((id) => id !== targetId);
    if (others.length === 0) throw new AppError('CONFLICT', LAST_SUPERADMIN_MESSAGE);
  }

  /** Deletes every session row of the person and tells every replica; returns how many. */
  async function endSessions(c: Change, userId: string): Promise<number> {
    const ids = await c.s.users.deleteSessionsOf(userId);
    for (const id of ids) c.invalidate(topics.userSession, id);
    return ids.length;
  }

  type Target = Awaited<ReturnType<typeof lockTarget>>;

  /**
   * The superadmin's change to one person, in one transaction: locked, changed by `apply`,
   * with `endsSessions` every session of theirs ended (on every replica), and one audit
   * entry naming them; answers the person as they now are.
   */
  function changeUser(grant: Grant, who: { userId: string } | { email: string }, eventType: string, endsSessions: boolean, apply: (c: Change, target: Target) => Promise<UserRow | undefined>) {
    return grant.run(async (c) => {
      const target = await lockTarget(c, who);
      const row = (await apply(c, target))!;
      const ended: { sessionsEnded?: number } = endsSessions ? { sessionsEnded: await endSessions(c, target.id) } : {};
      await c.audit({ eventType, metadata: { userId: target.id, email: target.email, ...ended } });
      return publicUser(row);
    });
  }

  async function openSession(s: Pick<TxStores, 'users'>, user: { id: string; email: string; firstName: string; lastName: string; isSuperadmin: boolean }, ip: string | null) {
    const sessionId = randomUUID();
    // The row keeps the secret part's hash only: its id (in the audit trail) opens nothing.
    const { secret, secretHash } = newTokenSecret();
    const expiresAt = new Date(now() + deps.sessionTtlSeconds * 1000);
    await s.users.insertSession({ id: sessionId, secretHash, userId: user.id, expiresAt, ip });
    const token = await sessions.sign({ userId: user.id, sessionId, secret, exp: Math.floor(expiresAt.getTime() / 1000) });
    return {
      token,
      csrfToken: sessions.csrfTokenFor(sessionId),
      expiresAt,
      user: { id: user.id, email: user.email, firstName: user.firstName, lastName: user.lastName, superAdmin: user.isSuperadmin },
    };
  }

  return {
    /** Drops expired session entries (services.ts runs it with the caches' sweep). */
    sweep: (): number => live.sweep(),
    /** The live-session cache (for the metrics: its counts and bytes). */
    sessionCache: live,

    async initialized(): Promise<boolean> {
      return (await store.users.count()) > 0;
    },

    /** Whether the first visit needs the setup code (until the superadmin exists). */
    setupCodeRequired(): boolean {
      return deps.setupCode?.active === true;
    },

    async signup(input: { email: string; password: string; firstName: string; lastName?: string; setupCode?: string; ip: string | null }): Promise<SessionResult> {
      const { email, firstName, lastName } = validateProfile(input);
      // No argon2 work for anyone once set up (the check under the lock below decides races).
      if ((await store.users.count()) > 0) throw alreadySetUp();
      const code = deps.setupCode;
      if (code?.active) {
        if (input.setupCode === undefined || input.setupCode.trim() === '') {
          throw new AppError('VALIDATION', 'setupCode is required: this instance runs in production mode (the code is SETUP_TOKEN, or else `vault-standalone setup-code` prints it)');
        }
        if (!code.matches(input.setupCode)) throw new AppError('FORBIDDEN', 'Invalid setup code');
      } else if (input.setupCode !== undefined) {
        throw new AppError('VALIDATION', 'setupCode is not used: this instance does not require a setup code');
      }
      const result = await onBudget(input.ip, 'Too many attempts', async (spent) => {
        spent();
        const passwordHash = await crypto.hashPassword(input.password);
        return changes.byCaller({ actorType: 'user', actorId: null }, { ip: input.ip }).run(async ({ s, audit, actAs }) => {
        // Two first visits at once: exactly one becomes the superadmin.
        await s.tx`select pg_advisory_xact_lock(74820116)`;
        if ((await s.users.count()) > 0) throw alreadySetUp();
        const user = await s.users.insert({ email, passwordHash, firstName, lastName, isSuperadmin: true });
        await s.organizations.ensureDefault();
        actAs({ actorType: 'user', actorId: user.id });
        await audit({ eventType: 'admin-signup', metadata: { email } });
        return openSession(s, user, input.ip);
        });
      });
      // Used: this replica forgets it (the others refuse a second signup anyway).
      code?.forget();
      return result;
    },

    async login(input: { email: string; password: string; ip: string | null }): Promise<SessionResult> {
      const email = normaliseEmail(input.email);
      const key = emailKey(email, loginSource(input.ip));
      // The source's budget first (memory only), then the address's count at this source.
      return onBudget(input.ip, LOGIN_LOCKED, async (spent) => {
        await store.loginAttempts.purgeStale(lockout.seconds);
        // Claimed before the password is checked: parallel guesses cannot outrun the count.
        const claim = await store.loginAttempts.claim(key, lockout.maxAttempts, lockout.seconds);
        if (!claim.claimed) throw rateLimited(LOGIN_LOCKED, claim.retryAfterSeconds);
        // The lookup runs for an impossible address too (with one that matches nobody).
        const user = await store.users.byEmail(impossibleEmail(email) ? '' : email);
        spent();
        const ok = await crypto.verifyPassword(user?.passwordHash ?? dummyHash, input.password);
        // A disabled person gets the same answer as a wrong password (the same work was done).
        if (!user || !ok || user.disabledAt) throw invalidLogin();
        // A password hash (or superadmin flag) written into the database directly, not by the
        // service, has no valid MAC (storage/privilege.ts): the same answer. Checked only once
        // the password matched, so a wrong guess costs the same work for every address.
        if (!(await store.users.credentialHolds(user))) throw invalidLogin();
        return changes.byCaller({ actorType: 'user', actorId: user.id }, { ip: input.ip }).run(async ({ s, audit }) => {
          await s.loginAttempts.reset(key);
          await audit({ eventType: 'login-user' });
          return openSession(s, user, input.ip);
        });
      });
    },

    /** Ends the session at once, here and on every replica. */
    async logout(actor: { userId: string; sessionId: string }, origin?: Origin): Promise<void> {
      await changes.byCaller({ actorType: 'user', actorId: actor.userId }, origin).run(async ({ s, audit, invalidate }) => {
        await s.users.revokeSession(actor.sessionId);
        await audit({ eventType: 'logout-user', metadata: { sessionId: actor.sessionId } });
        invalidate(topics.userSession, actor.sessionId);
      });
    },

    async authenticate(token: string): Promise<UserActor> {
      const claims = await sessions.verify(token);
      const state = await live.get(claims.sessionId, async () => (await store.users.liveSession(claims.sessionId)) ?? null);
      if (!state || state.expiresAt.getTime() <= now()) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
      // Bound to its row: a token re-signed with another subject (whoever learned
      // AUTH_SECRET) names a live session of someone else, and is refused; one made from a
      // session id read from the database lacks the secret part whose hash the row keeps.
      if (state.userId !== claims.userId || !secretMatches(claims.secretHash, state.secretHash)) {
        throw new AppError('TOKEN_INVALID', 'Invalid session token');
      }
      return { kind: 'user', userId: claims.userId, sessionId: claims.sessionId, superadmin: state.isSuperadmin };
    },

    /**
     * The superadmin adds a person (who can then be given project roles); they log in
     * with the password given here. Not a superadmin: there is only one.
     */
    async createUser(
      actor: Actor | SystemActor,
      input: { email: string; password: string; firstName: string; lastName?: string },
      origin?: Origin,
    ): Promise<PublicUser> {
      const grant = changes.inOrganization(actor, origin);
      const { email, firstName, lastName } = validateProfile(input);
      const passwordHash = await crypto.hashPassword(input.password);
      return grant.run(async ({ s, audit }) => {
        if (await s.users.byEmail(email)) throw new AppError('BAD_REQUEST', 'A user with this email already exists');
        const user = await s.users.insert({ email, passwordHash, firstName, lastName, isSuperadmin: false });
        await audit({ eventType: 'create-user', metadata: { userId: user.id, email } });
        return publicUser(user);
      });
    },

    /** The caller's own profile; a session whose account is gone is over. */
    async me(actor: { userId: string }): Promise<PublicUser> {
      const u = await store.users.byId(actor.userId);
      if (!u) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
      // The flag as it is obeyed: under its MAC.
      return publicUser({ ...u, isSuperadmin: await store.users.isSuperadmin(u) });
    },

    async listUsers(actor: Actor | SystemActor): Promise<PublicUser[]> {
      requireOrgAdmin(actor);
      return (await store.users.list()).map(publicUser);
    },

    /**
     * The caller changes their own password (the current one is the proof, rate limited
     * like a login). Every session of theirs ends, on every replica; the answer is a new
     * session for the caller's browser.
     */
    async changePassword(
      actor: { userId: string; sessionId: string },
      input: { oldPassword: string; newPassword: string },
      ip: string | null,
    ): Promise<SessionResult> {
      const user = await store.users.byId(actor.userId);
      if (!user || user.disabledAt) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
      validatePassword(input.newPassword, 'newPassword');
      // Counted with the address's logins at this source (a session's holder guessing the
      // password is a guesser like any other).
      const key = emailKey(normaliseEmail(user.email), loginSource(ip));
      return onBudget(ip, PASSWORD_CHECKS_LOCKED, async (spent) => {
        const claim = await store.loginAttempts.claim(key, lockout.maxAttempts, lockout.seconds);
        if (!claim.claimed) throw rateLimited(PASSWORD_CHECKS_LOCKED, claim.retryAfterSeconds);
        spent();
        if (!(await crypto.verifyPassword(user.passwordHash, input.oldPassword))) {
          throw new AppError('VALIDATION', 'oldPassword is not your current password');
        }
        const passwordHash = await crypto.hashPassword(input.newPassword);
        return changes.byCaller({ actorType: 'user', actorId: user.id }, { ip }).run(async (c) => {
        const row = await c.s.users.lockById(user.id);
        if (!row || row.disabledAt) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
        await c.s.loginAttempts.reset(key);
        await c.s.users.setPassword(user.id, passwordHash);
        const ended = await endSessions(c, user.id);
        await c.audit({ eventType: 'change-password', metadata: { userId: user.id, sessionsEnded: ended } });
        return openSession(c.s, row, ip);
        });
      });
    },

    /**
     * The superadmin (or the CLI, as the service) sets another person's password; every
     * session of theirs ends at once, on every replica.
     */
    async resetPassword(actor: Actor | SystemActor, who: { userId: string } | { email: string }, newPassword: string, origin?: Origin): Promise<PublicUser> {
      const grant = changes.inOrganization(actor, origin);
      validatePassword(newPassword, 'newPassword');
      const passwordHash = await crypto.hashPassword(newPassword);
      return changeUser(grant, who, 'reset-user-password', true, (c, target) => c.s.users.setPassword(target.id, passwordHash));
    },

    /** The person can no longer log in; their sessions end at once, on every replica. */
    async disableUser(actor: Actor | SystemActor, userId: string, origin?: Origin): Promise<PublicUser> {
      return changeUser(changes.inOrganization(actor, origin), { userId }, 'disable-user', true, async (c, target) => {
        if (target.isSuperadmin && !target.disabledAt) await refuseLastSuperadmin(c, target.id);
        return c.s.users.setDisabled(target.id, true);
      });
    },

    async enableUser(actor: Actor | SystemActor, userId: string, origin?: Origin): Promise<PublicUser> {
      return changeUser(changes.inOrganization(actor, origin), { userId }, 'enable-user', false, (c, target) => c.s.users.setDisabled(target.id, false));
    },

    /** The person, their sessions and their project roles are deleted; on every replica at once. */
    async deleteUser(actor: Actor | SystemActor, userId: string, origin?: Origin): Promise<PublicUser> {
      return changes.inOrganization(actor, origin).run(async (c) => {
        const target = await lockTarget(c, { userId });
        if (target.isSuperadmin && !target.disabledAt) await refuseLastSuperadmin(c, target.id);
        const ended = await endSessions(c, target.id);
        for (const projectId of await c.s.users.membershipProjects(target.id)) {
          c.invalidate(topics.membership, `${projectId}:user:${target.id}`);
        }
        await c.s.users.delete(target.id);
        await c.audit({ eventType: 'delete-user', metadata: { userId: target.id, email: target.email, sessionsEnded: ended } });
        return publicUser(target);
      });
    },

    checkCsrf: sessions.checkCsrf,
    /** The session's CSRF token again, for a browser page that was reloaded. */
    csrfTokenFor: sessions.csrfTokenFor,
  };
}
export type UsersDomain = Awaited<ReturnType<typeof usersDomain>>;

// People: first-visit registration of the superadmin, password login (argon2id, off
// the event loop), sessions that logout ends.
//
// Login failures are counted per e-mail address, whether an account has it or not, and
// a failed login does the same statements and the same argon2 work either way: neither
// the answer, the lockout nor the time taken tells whether an address has an account.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import { ReadThroughCache, type CacheBus } from '../../storage/cache.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { SessionState } from '../../storage/users.js';
import type { UserSessionTokens } from '../auth/tokens.js';
import { AppError } from '../errors.js';
import { requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { topics } from './caches.js';
import type { Origin, WritePipeline } from './pipeline.js';
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
  createdAt: Date;
}

const publicUser = (u: { id: string; email: string; firstName: string; lastName: string; isSuperadmin: boolean; createdAt: Date }): PublicUser => ({
  id: u.id,
  email: u.email,
  firstName: u.firstName,
  lastName: u.lastName,
  superAdmin: u.isSuperadmin,
  createdAt: u.createdAt,
});

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const invalidLogin = () => new AppError('UNAUTHORIZED', 'Invalid login');
const alreadySetUp = () => new AppError('BAD_REQUEST', 'Admin account has already been set up');

const normaliseEmail = (raw: string) => raw.trim().toLowerCase();

/** No account can have it (refused at creation), and PostgreSQL text cannot hold a NUL. */
const impossibleEmail = (email: string) => CONTROL_CHARACTER.test(email) || LONE_SURROGATE.test(email);

export interface UsersDeps {
  store: { users: Pick<Store['users'], 'count' | 'byEmail' | 'byId' | 'liveSession' | 'list'>; loginAttempts: Pick<Store['loginAttempts'], 'purgeStale' | 'claim'> };
  crypto: Pick<Crypto, 'hashPassword' | 'verifyPassword'>;
  sessions: UserSessionTokens;
  /** Keys the login-attempt counters (an HMAC: see server/auth/tokens.ts). */
  emailKey: (normalisedEmail: string) => Buffer;
  /** Where the session cache hears that a session ended (on any replica). */
  bus: Pick<CacheBus, 'subscribe' | 'onReset' | 'live' | 'epoch'>;
  changes: Pick<WritePipeline, 'byCaller' | 'inOrganization'>;
  sessionTtlSeconds: number;
  lockout: { maxAttempts: number; seconds: number };
}

export async function usersDomain(deps: UsersDeps) {
  const { store, crypto, sessions, emailKey, bus, changes, lockout } = deps;
  // An unknown email is checked against this hash, so both failures take as long.
  const dummyHash = await crypto.hashPassword(randomBytes(16).toString('hex'));
  const live = new ReadThroughCache<SessionState | null>(10_000, 30_000, bus);
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

  function validatePassword(password: string) {
    if (password.length < 12 || password.length > 256) {
      throw new AppError('VALIDATION', 'password must be 12 to 256 characters');
    }
  }

  async function openSession(s: Pick<TxStores, 'users'>, user: { id: string; email: string; firstName: string; lastName: string; isSuperadmin: boolean }, ip: string | null) {
    const sessionId = randomUUID();
    const expiresAt = new Date(Date.now() + deps.sessionTtlSeconds * 1000);
    await s.users.insertSession({ id: sessionId, userId: user.id, expiresAt, ip });
    const token = await sessions.sign({ userId: user.id, sessionId, exp: Math.floor(expiresAt.getTime() / 1000) });
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

    async initialized(): Promise<boolean> {
      return (await store.users.count()) > 0;
    },

    async signup(input: { email: string; password: string; firstName: string; lastName?: string; ip: string | null }): Promise<SessionResult> {
      const { email, firstName, lastName } = validateProfile(input);
      // No argon2 work for anyone once set up (the check under the lock below decides races).
      if ((await store.users.count()) > 0) throw alreadySetUp();
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
    },

    async login(input: { email: string; password: string; ip: string | null }): Promise<SessionResult> {
      const email = normaliseEmail(input.email);
      const key = emailKey(email);
      await store.loginAttempts.purgeStale(lockout.seconds);
      // Claimed before the password is checked: parallel guesses cannot outrun the count.
      const claim = await store.loginAttempts.claim(key, lockout.maxAttempts, lockout.seconds);
      if (!claim.claimed) {
        throw new AppError('RATE_LIMITED', `Too many failed login attempts; try again in ${claim.retryAfterSeconds} seconds`, {
          headers: { 'Retry-After': String(claim.retryAfterSeconds) },
        });
      }
      // The lookup runs for an impossible address too (with one that matches nobody).
      const user = await store.users.byEmail(impossibleEmail(email) ? '' : email);
      const ok = await crypto.verifyPassword(user?.passwordHash ?? dummyHash, input.password);
      if (!user || !ok) throw invalidLogin();
      return changes.byCaller({ actorType: 'user', actorId: user.id }, { ip: input.ip }).run(async ({ s, audit }) => {
        await s.loginAttempts.reset(key);
        await audit({ eventType: 'login-user' });
        return openSession(s, user, input.ip);
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
      if (!state || state.expiresAt.getTime() <= Date.now()) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
      // Bound to its row: a token re-signed with another subject (whoever learned
      // AUTH_SECRET) names a live session of someone else, and is refused.
      if (state.userId !== claims.userId) throw new AppError('TOKEN_INVALID', 'Invalid session token');
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
      return publicUser(u);
    },

    async listUsers(actor: Actor | SystemActor): Promise<PublicUser[]> {
      requireOrgAdmin(actor);
      return (await store.users.list()).map(publicUser);
    },

    checkCsrf: sessions.checkCsrf,
    /** The session's CSRF token again, for a browser page that was reloaded. */
    csrfTokenFor: sessions.csrfTokenFor,
  };
}
export type UsersDomain = Awaited<ReturnType<typeof usersDomain>>;

// Machine identities, their Universal Auth settings, client secrets (as keyed hashes
// only) and issued access tokens (for revocation).
import { randomUUID } from 'node:crypto';
import type { Queryable, Sql } from './db.js';

export interface IdentityRow {
  id: string;
  orgId: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A trusted IP range as Infisical stores it (no `prefix`: one address). */
export interface TrustedIp {
  ipAddress: string;
  type: 'ipv4' | 'ipv6';
  prefix?: number;
}

export interface UniversalAuthRow {
  identityId: string;
  clientId: string;
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  /** Uses each new access token may serve; 0 = unlimited. */
  accessTokenNumUsesLimit: number;
  /** Where logins with a client secret may come from. */
  clientSecretTrustedIps: TrustedIp[];
  /** Where requests with an access token may come from. */
  accessTokenTrustedIps: TrustedIp[];
  failedLogins: number;
  lastFailedLoginAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The Universal Auth settings an administrator may change after creation. */
export interface UniversalAuthSettings {
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  accessTokenNumUsesLimit: number;
  clientSecretTrustedIps: TrustedIp[];
  accessTokenTrustedIps: TrustedIp[];
}

/** A Universal Auth about to be logged in to (loginLookup). */
export type LoginTarget = UniversalAuthRow & { staleMacCandidates: boolean };
/** What a login reads first: the current MAC key, and the Universal Auth of its client id (loginLookup). */
export interface LoginLookup {
  macKey: { id: string; wrapped: Buffer } | undefined;
  ua: LoginTarget | undefined;
}
type Nullable<T> = { [K in keyof T]: T[K] | null };

/**
 * A claimed attempt carries its decision (claimLogin): the matching secret (and whether
 * its token was issued), or none; or `undecided` (no match under the presented MAC's key,
 * but usable secrets under another).
 */
export type LoginClaim =
  | { claimed: true; ua: UniversalAuthRow; matchedSecretId: string | undefined; undecided: boolean; issued: boolean }
  | { claimed: false; retryAfterSeconds: number };

export interface ClientSecretRow {
  id: string;
  identityId: string;
  prefix: string;
  secretHash: Buffer;
  /** The MAC key version (a system key) the hash was made with. */
  macKeyId: string;
  description: string;
  ttl: number;
  numUses: number;
  numUsesLimit: number;
  isRevoked: boolean;
  lastUsedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A client secret as listed: never its hash. */
export type ClientSecretInfo = Omit<ClientSecretRow, 'secretHash' | 'macKeyId'>;

export interface IdentityListRow extends IdentityRow {
  hasUniversalAuth: boolean;
  /** JWT / OIDC / Kubernetes / Token auth attached (storage/jwtAuth.ts, kubernetesAuth.ts, tokenAuth.ts), in name order. */
  tokenAuthMethods: Array<Exclude<AccessTokenMethod, 'universal-auth'>>;
}

/** The methods that issue access tokens. */
export type AccessTokenMethod = 'universal-auth' | 'jwt-auth' | 'oidc-auth' | 'kubernetes-auth' | 'token-auth';

export interface AccessTokenState {
  identityId: string;
  /** '' for a token that no client secret issued (JWT and OIDC auth). */
  clientSecretId: string;
  /** The method that issued the token; it lives only while that method is attached. */
  authMethod: AccessTokenMethod;
  /** The issuing method's current TTLs (renew extends by these). */
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  expiresAt: Date;
  maxExpiresAt: Date;
  /** Fixed when the token was issued; 0 = unlimited. */
  numUsesLimit: number;
  /** Uses counted when the state was read (the count itself is kept by `useAccessToken`). */
  numUses: number;
  /** The issuing method's current setting (a change invalidates the identity's tokens). */
  accessTokenTrustedIps: TrustedIp[];
  /** SHA-256 of the token's secret part; null for a row issued before tokens had one (matches no token). */
  secretHash: Buffer | null;
}

const UA_COLUMNS = [
  'identity_id', 'client_id', 'access_token_ttl', 'access_token_max_ttl', 'access_token_num_uses_limit',
  'client_secret_trusted_ips', 'access_token_trusted_ips', 'failed_logins', 'last_failed_login_at', 'created_at', 'updated_at',
] as const;
// The same list as SQL text (sql.unsafe): the `sql(list)` helper searches the whole statement
// before it for keywords on every call, ~3% of an ESO sync's main thread through claimLogin.
const UA_LIST = UA_COLUMNS.join(', ');

/** SQL: the methods other than Universal Auth attached to the identity whose id is the column `id`, in name order. */
export const tokenAuthMethodsOf = (id: string) => `array(select m from (
    select j.method as m from identity_jwt_auths j where j.identity_id = ${id}
    union all select 'kubernetes-auth' from identity_kubernetes_auths k where k.identity_id = ${id}
    union all select 'token-auth' from identity_token_auths tk where tk.identity_id = ${id}) methods order by m)`;
const TOKEN_AUTH_METHODS = tokenAuthMethodsOf('i.id');

const CLIENT_SECRET_INFO = [
  'id', 'identity_id', 'prefix', 'description', 'ttl', 'num_uses', 'num_uses_limit', 'is_revoked', 'last_used_at', 'created_at', 'updated_at',
] as const;

/** A client secret (aliased `s`) that can still log in: not revoked, not expired, not used up. */
const USABLE_SECRET = `not s.is_revoked and (s.ttl = 0 or s.created_at + make_interval(secs => s.ttl) > now())
  and (s.num_uses_limit = 0 or s.num_uses < s.num_uses_limit)`;

export function identitiesStore(sql: Queryable) {
  // A fragment per statement (a postgres.js query object is not shared between statements).
  const usable = () => sql.unsafe(USABLE_SECRET);
  return {
    async insert(i: { orgId: string; name: string }): Promise<IdentityRow> {
      const [row] = await sql<IdentityRow[]>`insert into identities (id, org_id, name)
        values (${randomUUID()}, ${i.orgId}, ${i.name}) returning id, org_id, name, created_at, updated_at`;
      return row!;
    },

    async byId(id: string): Promise<IdentityRow | undefined> {
      const [row] = await sql<IdentityRow[]>`select id, org_id, name, created_at, updated_at from identities where id = ${id}`;
      return row;
    },

    /** With whether Universal Auth is attached (the identity's auth methods). */
    async byIdWithAuth(id: string): Promise<IdentityListRow | undefined> {
      const [row] = await sql<IdentityListRow[]>`select i.id, i.org_id, i.name, i.created_at, i.updated_at,
          (ua.identity_id is not null) as has_universal_auth,
          ${sql.unsafe(TOKEN_AUTH_METHODS)} as token_auth_methods
        from identities i left join identity_universal_auth ua on ua.identity_id = i.id where i.id = ${id}`;
      return row;
    },

    async listByOrg(orgId: string): Promise<IdentityListRow[]> {
      return sql<IdentityListRow[]>`select i.id, i.org_id, i.name, i.created_at, i.updated_at,
          (ua.identity_id is not null) as has_universal_auth,
          ${sql.unsafe(TOKEN_AUTH_METHODS)} as token_auth_methods
        from identities i left join identity_universal_auth ua on ua.identity_id = i.id
        where i.org_id = ${orgId} order by i.created_at, i.id`;
    },

    async rename(id: string, name: string): Promise<IdentityRow | undefined> {
      const [row] = await sql<IdentityRow[]>`update identities set name = ${name}, updated_at = now() where id = ${id}
        returning id, org_id, name, created_at, updated_at`;
      return row;
    },

    /** Its Universal Auth, client secrets, access tokens and memberships go with it (cascade). */
    async delete(id: string): Promise<IdentityRow | undefined> {
      const [row] = await sql<IdentityRow[]>`delete from identities where id = ${id}
        returning id, org_id, name, created_at, updated_at`;
      return row;
    },

    async attachUniversalAuth(u: { identityId: string } & Partial<UniversalAuthSettings>): Promise<UniversalAuthRow> {
      const [row] = await sql<UniversalAuthRow[]>`insert into identity_universal_auth
          (identity_id, client_id, access_token_ttl, access_token_max_ttl, access_token_num_uses_limit,
           client_secret_trusted_ips, access_token_trusted_ips)
        values (${u.identityId}, ${randomUUID()}, ${u.accessTokenTtl ?? 2592000}, ${u.accessTokenMaxTtl ?? 2592000},
          ${u.accessTokenNumUsesLimit ?? 0},
          coalesce(${u.clientSecretTrustedIps ? sql.json(u.clientSecretTrustedIps as never) : null}::jsonb,
            '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]'::jsonb),
          coalesce(${u.accessTokenTrustedIps ? sql.json(u.accessTokenTrustedIps as never) : null}::jsonb,
            '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]'::jsonb))
        returning ${sql.unsafe(UA_LIST)}`;
      return row!;
    },

    /** Replaces the settings (the caller merged the change into the current ones); undefined without Universal Auth. */
    async updateUniversalAuth(identityId: string, u: UniversalAuthSettings): Promise<UniversalAuthRow | undefined> {
      const [row] = await sql<UniversalAuthRow[]>`update identity_universal_auth set
          access_token_ttl = ${u.accessTokenTtl},
          access_token_max_ttl = ${u.accessTokenMaxTtl},
          access_token_num_uses_limit = ${u.accessTokenNumUsesLimit},
          client_secret_trusted_ips = ${sql.json(u.clientSecretTrustedIps as never)},
          access_token_trusted_ips = ${sql.json(u.accessTokenTrustedIps as never)},
          updated_at = now()
        where identity_id = ${identityId}
        returning ${sql.unsafe(UA_LIST)}`;
      return row;
    },

    async universalAuthByIdentity(identityId: string, opts: { forUpdate?: boolean } = {}): Promise<UniversalAuthRow | undefined> {
      const [row] = opts.forUpdate
        ? await sql<UniversalAuthRow[]>`select ${sql.unsafe(UA_LIST)} from identity_universal_auth where identity_id = ${identityId} for update`
        : await sql<UniversalAuthRow[]>`select ${sql.unsafe(UA_LIST)} from identity_universal_auth where identity_id = ${identityId}`;
      return row;
    },

    /**
     * What a login reads before its claim, in one statement: the current MAC key (the
     * canary's system key, read on every login so that every replica follows a rekey at
     * once), and the Universal Auth of `clientId` (undefined for none, or for a null id),
     * with whether a usable client secret of the identity is hashed under a MAC key other
     * than the current one (a rekey not yet followed by its login: claimLogin can then not
     * decide alone). The key is read for an unknown client id too: its login costs the same MAC.
     */
    async loginLookup(clientId: string | null): Promise<LoginLookup> {
      const [row] = await sql<(Nullable<LoginTarget> & { macKeyId: string; macKeyWrapped: Buffer })[]>`select
          k.id as mac_key_id, k.wrapped as mac_key_wrapped, ${sql.unsafe(UA_COLUMNS.map((c) => `u.${c}`).join(', '))},
          exists (select 1 from identity_client_secrets s where s.identity_id = u.identity_id and ${usable()}
            and s.mac_key_id <> k.id) as stale_mac_candidates
        from crypto_canary c join crypto_keys k on k.id = c.key_id
          left join identity_universal_auth u on u.client_id = ${clientId}
        where c.id = 1`;
      if (!row) return { macKey: undefined, ua: undefined };
      const { macKeyId, macKeyWrapped, ...ua } = row;
      return { macKey: { id: macKeyId, wrapped: macKeyWrapped }, ua: ua.identityId === null ? undefined : (ua as LoginTarget) };
    },

    /**
     * Claims a login attempt, decides it, and on a match issues the token, in one statement:
     * refused unless fewer than `maxAttempts` failures were counted from `source` (the
     * client's address, server/auth/loginSources.ts) within the last `lockSeconds` (the lock
     * runs from the last counted one; older failures no longer count and the count starts
     * again). Failures are counted per identity and source (identity_login_failures): a
     * stranger's guesses from elsewhere never lock out the identity's own clients. Only a claimed attempt has its secret compared:
     * `presented` (the secret's MAC under MAC key `keyId`) against the identity's usable
     * secrets hashed under that key, in the statement's SET, which runs for a claimed row
     * only. A match clears the count, counts a use of the secret and inserts access token
     * `tokenId` (expiring by the Universal Auth's TTLs from `at`); `issued` is false when the
     * secret was revoked or used up meanwhile; the row keeps `token.secretHash` (never the
     * token's secret). Anything else counts a failure. A claim with
     * no match while the identity has usable secrets under another MAC key is `undecided`:
     * counted as a failure, for the caller to compare under those keys and clear the count
     * on a match.
     *
     * The claimed (identity, source) row stays locked until the caller's transaction ends
     * (INSERT … ON CONFLICT DO UPDATE locks the row and reads its latest version), so the
     * logins of one client from one source are decided one at a time in statement order: a
     * parallel burst of wrong guesses gets at most `maxAttempts` compared, and a success
     * never sees another's claim. As the outcome is decided here, the next login's claim may
     * be sent before this one's answer is back. `at` is the caller's clock (tests move it).
     * Undefined when the identity has no Universal Auth (any more).
     */
    async claimLogin(
      identityId: string,
      source: string,
      maxAttempts: number,
      lockSeconds: number,
      at: Date,
      presented: { keyId: string; mac: Buffer },
      token: { id: string; secretHash: Buffer },
    ): Promise<LoginClaim | undefined> {
      // The MAC is keyed and computed here from the presented secret: a caller cannot choose
      // the bytes compared, so a plain (early-exit) comparison tells nothing.
      // `matched` is evaluated only where it is asked for: in the count of a claimed row
      // (the conflict's SET runs only for a row its WHERE admits), or for a source with no
      // row yet (nothing counted, so claimable): a locked attempt reads no client secret.
      const [ua] = await sql<(UniversalAuthRow & { matchedSecretId: string | null; undecided: boolean; issued: boolean })[]>`with matched as materialized (
          select s.id from identity_client_secrets s
          where s.identity_id = ${identityId} and s.mac_key_id = ${presented.keyId} and s.secret_hash = ${presented.mac} and ${usable()}
          order by s.id limit 1
        ), ua as materialized (
          select ${sql.unsafe(UA_LIST)} from identity_universal_auth where identity_id = ${identityId}
        ), counted as (
          insert into identity_login_failures as f (identity_id, source, failed_logins, last_failed_login_at)
          select ua.identity_id, ${source},
            case when exists (select 1 from identity_login_failures e where e.identity_id = ${identityId} and e.source = ${source}) then 1
              when exists (select 1 from matched) then 0 else 1 end,
            case when exists (select 1 from identity_login_failures e where e.identity_id = ${identityId} and e.source = ${source}) then ${at}::timestamptz
              when exists (select 1 from matched) then null else ${at}::timestamptz end
          from ua
          on conflict (identity_id, source) do update set
            failed_logins = case when exists (select 1 from matched) then 0
              when f.last_failed_login_at is null
                or f.last_failed_login_at <= ${at}::timestamptz - make_interval(secs => ${lockSeconds})
              then 1 else f.failed_logins + 1 end,
            last_failed_login_at = case when exists (select 1 from matched) then null else ${at}::timestamptz end
          where f.failed_logins < ${maxAttempts} or f.last_failed_login_at is null
            or f.last_failed_login_at <= ${at}::timestamptz - make_interval(secs => ${lockSeconds})
          returning f.identity_id
        ), claimed as (
          select ua.*, (select id from matched) as matched_secret_id,
            not exists (select 1 from matched) and exists (select 1 from identity_client_secrets s
              where s.identity_id = ua.identity_id and s.mac_key_id <> ${presented.keyId} and ${usable()}) as undecided
          from ua where exists (select 1 from counted)
        ), used as (
          update identity_client_secrets s set num_uses = s.num_uses + 1, last_used_at = now()
          where s.id = (select matched_secret_id from claimed) and ${usable()}
          returning s.id
        ), issued as (
          insert into identity_access_tokens (id, identity_id, client_secret_id, auth_method, expires_at, max_expires_at, num_uses_limit, secret_hash)
          select ${token.id}, c.identity_id, used.id, 'universal-auth', ${at}::timestamptz + make_interval(secs => c.access_token_ttl),
            ${at}::timestamptz + make_interval(secs => c.access_token_max_ttl), c.access_token_num_uses_limit, ${token.secretHash}
          from claimed c, used
          returning id
        )
        select c.*, exists (select 1 from issued) as issued from claimed c`;
      if (ua) {
        const { matchedSecretId, undecided, issued, ...row } = ua;
        return { claimed: true, ua: row, matchedSecretId: matchedSecretId ?? undefined, undecided, issued };
      }
      // A statement of its own: it sees the claims committed while this one waited.
      const [lock] = await sql<{ retryAfterSeconds: number | null }[]>`select
          (select ceil(extract(epoch from f.last_failed_login_at + make_interval(secs => ${lockSeconds}) - ${at}::timestamptz))::int
            from identity_login_failures f where f.identity_id = u.identity_id and f.source = ${source}) as retry_after_seconds
        from identity_universal_auth u where u.identity_id = ${identityId}`;
      // The identity (or its Universal Auth) was deleted since its client id was looked up.
      if (!lock) return undefined;
      // Clamped: a claim that started after this one may have stamped a later time.
      return { claimed: false, retryAfterSeconds: Math.min(lockSeconds, Math.max(1, lock.retryAfterSeconds ?? 1)) };
    },

    /** A successful login forgets its source's failures (its own claim included). */
    async clearLoginFailures(identityId: string, source: string): Promise<void> {
      await sql`update identity_login_failures set failed_logins = 0, last_failed_login_at = null
        where identity_id = ${identityId} and source = ${source}`;
    },

    async insertClientSecret(c: {
      identityId: string;
      prefix: string;
      secretHash: Buffer;
      macKeyId: string;
      description?: string;
      ttl?: number;
      numUsesLimit?: number;
    }): Promise<ClientSecretRow> {
      const [row] = await sql<ClientSecretRow[]>`insert into identity_client_secrets
          (id, identity_id, prefix, secret_hash, mac_key_id, description, ttl, num_uses_limit)
        values (${randomUUID()}, ${c.identityId}, ${c.prefix}, ${c.secretHash}, ${c.macKeyId}, ${c.description ?? ''}, ${c.ttl ?? 0}, ${c.numUsesLimit ?? 0})
        returning *`;
      return row!;
    },

    /**
     * Client secrets that may still log in: not revoked, not expired, uses left; each with
     * the wrapped bytes of the MAC key version its hash was made with.
     */
    async usableClientSecrets(identityId: string): Promise<(ClientSecretRow & { macKeyWrapped: Buffer })[]> {
      return sql<(ClientSecretRow & { macKeyWrapped: Buffer })[]>`select s.*,
          (select k.wrapped from crypto_keys k where k.id = s.mac_key_id) as mac_key_wrapped
        from identity_client_secrets s
        where s.identity_id = ${identityId} and ${usable()}`;
    },

    /** A successful login under an older MAC key version: the hash made again under the current one. */
    /**
     * Replaces the secret's hash with one made under MAC key `macKeyId`, only if that key is
     * the current one: a login that read the key before a rekey (a cached lookup) never moves
     * a secret back to an older key, which a retirement may have deleted. True when replaced.
     */
    async remacClientSecret(id: string, macKeyId: string, secretHash: Buffer): Promise<boolean> {
      const rows = await sql`update identity_client_secrets set secret_hash = ${secretHash}, mac_key_id = ${macKeyId}
        where id = ${id} and ${macKeyId}::uuid = (select key_id from crypto_canary where id = 1) returning id`;
      return rows.length === 1;
    },

    /** Counts a use atomically; false when the secret was revoked or used up meanwhile. */
    async markClientSecretUsed(id: string): Promise<boolean> {
      const rows = await sql`update identity_client_secrets set num_uses = num_uses + 1, last_used_at = now()
        where id = ${id} and not is_revoked and (num_uses_limit = 0 or num_uses < num_uses_limit) returning id`;
      return rows.length === 1;
    },

    /** Not revoked ones, oldest first (as Infisical lists them). */
    async listClientSecrets(identityId: string): Promise<ClientSecretInfo[]> {
      return sql<ClientSecretInfo[]>`select ${sql(CLIENT_SECRET_INFO)} from identity_client_secrets
        where identity_id = ${identityId} and not is_revoked order by created_at, id`;
    },

    async clientSecretInfo(identityId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<ClientSecretInfo | undefined> {
      const [row] = opts.forUpdate
        ? await sql<ClientSecretInfo[]>`select ${sql(CLIENT_SECRET_INFO)} from identity_client_secrets
            where id = ${id} and identity_id = ${identityId} for update`
        : await sql<ClientSecretInfo[]>`select ${sql(CLIENT_SECRET_INFO)} from identity_client_secrets
            where id = ${id} and identity_id = ${identityId}`;
      return row;
    },

    /** The revoked row; undefined when there is no such secret or it was revoked already. */
    async revokeClientSecret(identityId: string, id: string): Promise<ClientSecretInfo | undefined> {
      const [row] = await sql<ClientSecretInfo[]>`update identity_client_secrets set is_revoked = true, updated_at = now()
        where id = ${id} and identity_id = ${identityId} and not is_revoked returning ${sql(CLIENT_SECRET_INFO)}`;
      return row;
    },

    /**
     * `clientSecretId` for Universal Auth; JWT and OIDC auth tokens name only their method.
     * `secretHash`: the SHA-256 of the token's secret part (server/auth/tokens.ts newTokenSecret).
     */
    async insertAccessToken(t: {
      id: string;
      secretHash: Buffer;
      identityId: string;
      clientSecretId: string | null;
      authMethod?: AccessTokenState['authMethod'];
      expiresAt: Date;
      maxExpiresAt: Date;
      numUsesLimit?: number;
      /** Token Auth: the name its administrator gave it. */
      name?: string;
    }): Promise<void> {
      await sql`insert into identity_access_tokens (id, identity_id, client_secret_id, auth_method, expires_at, max_expires_at, num_uses_limit, name, secret_hash)
        values (${t.id}, ${t.identityId}, ${t.clientSecretId}, ${t.authMethod ?? 'universal-auth'}, ${t.expiresAt}, ${t.maxExpiresAt}, ${t.numUsesLimit ?? 0}, ${t.name ?? ''}, ${t.secretHash})`;
    },

    /**
     * The token's state if it is still valid: not revoked, not expired, and the method
     * that issued it still attached (for Universal Auth: its client secret not revoked).
     */
    async liveAccessToken(id: string): Promise<AccessTokenState | undefined> {
      const [row] = await sql<AccessTokenState[]>`select t.identity_id, coalesce(t.client_secret_id::text, '') as client_secret_id,
          t.auth_method, t.expires_at, t.max_expires_at, t.num_uses_limit, t.num_uses, t.secret_hash,
          coalesce(ua.access_token_trusted_ips, ja.access_token_trusted_ips, ka.access_token_trusted_ips, tk.access_token_trusted_ips) as access_token_trusted_ips,
          coalesce(ua.access_token_ttl, ja.access_token_ttl, ka.access_token_ttl, tk.access_token_ttl) as access_token_ttl,
          coalesce(ua.access_token_max_ttl, ja.access_token_max_ttl, ka.access_token_max_ttl, tk.access_token_max_ttl) as access_token_max_ttl
        from identity_access_tokens t
        left join identity_client_secrets cs on t.auth_method = 'universal-auth' and cs.id = t.client_secret_id and not cs.is_revoked
        left join identity_universal_auth ua on t.auth_method = 'universal-auth' and ua.identity_id = t.identity_id
        left join identity_jwt_auths ja on ja.identity_id = t.identity_id and ja.method = t.auth_method
        left join identity_kubernetes_auths ka on t.auth_method = 'kubernetes-auth' and ka.identity_id = t.identity_id
        left join identity_token_auths tk on t.auth_method = 'token-auth' and tk.identity_id = t.identity_id
        where t.id = ${id} and t.revoked_at is null and t.expires_at > now()
          and ((cs.id is not null and ua.identity_id is not null) or ja.identity_id is not null or ka.identity_id is not null or tk.identity_id is not null)`;
      return row;
    },

    /**
     * Counts one use of a token that has a use limit, in one statement: false when its
     * uses are exhausted (or it is gone), so parallel requests can never use it more often
     * than its limit.
     */
    async useAccessToken(id: string): Promise<boolean> {
      const rows = await sql`update identity_access_tokens set num_uses = num_uses + 1
        where id = ${id} and revoked_at is null and num_uses < num_uses_limit returning id`;
      return rows.length === 1;
    },

    /**
     * Only the identity's own token, and only with its secret part's hash: a token id named
     * by claims that belong to another, or by a token forged from a read of this table,
     * does nothing.
     */
    async revokeAccessToken(id: string, identityId: string, secretHash: Buffer): Promise<boolean> {
      const rows = await sql`update identity_access_tokens set revoked_at = now()
        where id = ${id} and identity_id = ${identityId} and secret_hash = ${secretHash} and revoked_at is null returning id`;
      return rows.length === 1;
    },

    /** Whether this very token (its id, identity and secret's hash) was revoked already. */
    async revokedAccessToken(id: string, identityId: string, secretHash: Buffer): Promise<boolean> {
      const rows = await sql`select 1 from identity_access_tokens
        where id = ${id} and identity_id = ${identityId} and secret_hash = ${secretHash} and revoked_at is not null`;
      return rows.length === 1;
    },

    async extendAccessToken(id: string, expiresAt: Date): Promise<void> {
      await sql`update identity_access_tokens set expires_at = ${expiresAt} where id = ${id}`;
    },

  };
}
export type IdentitiesStore = ReturnType<typeof identitiesStore>;

const ACCESS_TOKEN_SWEEP_LOCK_ID = 74_820_117;

/**
 * Deletes machine-login failure rows that no longer count: no failure since the last
 * success, or the last failure older than `olderThanSeconds` (at least the lockout
 * window). Such a row decides nothing a fresh one would not. Returns how many went.
 */
export async function sweepLoginFailures(sql: Sql, opts: { olderThanSeconds: number; batchSize?: number }): Promise<number> {
  const result = await sql`delete from identity_login_failures where (identity_id, source) in (
      select identity_id, source from identity_login_failures
      where last_failed_login_at is null or last_failed_login_at < now() - make_interval(secs => ${opts.olderThanSeconds})
      limit ${opts.batchSize ?? 5_000} for update skip locked)`;
  return result.count;
}

/**
 * Deletes access-token rows revoked or expired more than `graceSeconds` ago, and used-up ones (one row
 * per login would otherwise pile up forever: ESO logs in on every sync), in batches so
 * no statement holds many row locks, and returns how many went. Deleting can never
 * make a token valid again: a request is accepted only when its token's row exists,
 * is not revoked and has not expired (liveAccessToken), so a missing row is refused
 * like a revoked one. And a deleted row could never have become live again: revocation
 * is final, and only renew extends expiry, which needs a live row. With several
 * replicas, one sweeps at a time (the others find the lock taken and skip this round).
 */
export async function sweepAccessTokens(sql: Sql, opts: { graceSeconds: number; batchSize?: number }): Promise<number> {
  const batchSize = opts.batchSize ?? 5_000;
  let total = 0;
  for (;;) {
    const deleted = await sql.begin(async (tx) => {
      const [lock] = await tx<{ taken: boolean }[]>`select pg_try_advisory_xact_lock(${ACCESS_TOKEN_SWEEP_LOCK_ID}) as taken`;
      if (!lock!.taken) return -1;
      const result = await tx`delete from identity_access_tokens where id in (
          select id from identity_access_tokens
          where expires_at < now() - make_interval(secs => ${opts.graceSeconds})
             or revoked_at < now() - make_interval(secs => ${opts.graceSeconds})
             -- Used up: never accepted again (useAccessToken counts uses below the limit only).
             or (num_uses_limit > 0 and num_uses >= num_uses_limit)
          limit ${batchSize})`;
      return result.count;
    });
    if (deleted < 0) return total;
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

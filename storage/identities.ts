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

export interface UniversalAuthRow {
  identityId: string;
  clientId: string;
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  failedLogins: number;
  lockedUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ClientSecretRow {
  id: string;
  identityId: string;
  prefix: string;
  secretHash: Buffer;
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
export type ClientSecretInfo = Omit<ClientSecretRow, 'secretHash'>;

export interface IdentityListRow extends IdentityRow {
  hasUniversalAuth: boolean;
}

export interface AccessTokenState {
  identityId: string;
  clientSecretId: string;
  expiresAt: Date;
  maxExpiresAt: Date;
}

const CLIENT_SECRET_INFO = [
  'id', 'identity_id', 'prefix', 'description', 'ttl', 'num_uses', 'num_uses_limit', 'is_revoked', 'last_used_at', 'created_at', 'updated_at',
] as const;

export function identitiesStore(sql: Queryable) {
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
          (ua.identity_id is not null) as has_universal_auth
        from identities i left join identity_universal_auth ua on ua.identity_id = i.id where i.id = ${id}`;
      return row;
    },

    async listByOrg(orgId: string): Promise<IdentityListRow[]> {
      return sql<IdentityListRow[]>`select i.id, i.org_id, i.name, i.created_at, i.updated_at,
          (ua.identity_id is not null) as has_universal_auth
        from identities i left join identity_universal_auth ua on ua.identity_id = i.id
        where i.org_id = ${orgId} order by i.created_at, i.id`;
    },

    /** Its Universal Auth, client secrets, access tokens and memberships go with it (cascade). */
    async delete(id: string): Promise<IdentityRow | undefined> {
      const [row] = await sql<IdentityRow[]>`delete from identities where id = ${id}
        returning id, org_id, name, created_at, updated_at`;
      return row;
    },

    async attachUniversalAuth(u: { identityId: string; accessTokenTtl?: number; accessTokenMaxTtl?: number }): Promise<UniversalAuthRow> {
      const [row] = await sql<UniversalAuthRow[]>`insert into identity_universal_auth
          (identity_id, client_id, access_token_ttl, access_token_max_ttl)
        values (${u.identityId}, ${randomUUID()}, ${u.accessTokenTtl ?? 2592000}, ${u.accessTokenMaxTtl ?? 2592000})
        returning *`;
      return row!;
    },

    async universalAuthByIdentity(identityId: string): Promise<UniversalAuthRow | undefined> {
      const [row] = await sql<UniversalAuthRow[]>`select * from identity_universal_auth where identity_id = ${identityId}`;
      return row;
    },

    async universalAuthByClientId(clientId: string): Promise<UniversalAuthRow | undefined> {
      const [row] = await sql<UniversalAuthRow[]>`select * from identity_universal_auth where client_id = ${clientId}`;
      return row;
    },

    async recordLoginFailure(identityId: string, maxAttempts: number, lockSeconds: number): Promise<void> {
      // One statement: concurrent failures cannot lose a count.
      await sql`update identity_universal_auth set
          failed_logins = case when failed_logins + 1 >= ${maxAttempts} then 0 else failed_logins + 1 end,
          locked_until = case when failed_logins + 1 >= ${maxAttempts}
            then now() + make_interval(secs => ${lockSeconds}) else locked_until end
        where identity_id = ${identityId}`;
    },

    async clearLoginFailures(identityId: string): Promise<void> {
      await sql`update identity_universal_auth set failed_logins = 0, locked_until = null
        where identity_id = ${identityId} and (failed_logins <> 0 or locked_until is not null)`;
    },

    async insertClientSecret(c: { identityId: string; prefix: string; secretHash: Buffer; description?: string; ttl?: number; numUsesLimit?: number }): Promise<ClientSecretRow> {
      const [row] = await sql<ClientSecretRow[]>`insert into identity_client_secrets
          (id, identity_id, prefix, secret_hash, description, ttl, num_uses_limit)
        values (${randomUUID()}, ${c.identityId}, ${c.prefix}, ${c.secretHash}, ${c.description ?? ''}, ${c.ttl ?? 0}, ${c.numUsesLimit ?? 0})
        returning *`;
      return row!;
    },

    /** Client secrets that may still log in: not revoked, not expired, uses left. */
    async usableClientSecrets(identityId: string): Promise<ClientSecretRow[]> {
      return sql<ClientSecretRow[]>`select * from identity_client_secrets
        where identity_id = ${identityId} and not is_revoked
          and (ttl = 0 or created_at + make_interval(secs => ttl) > now())
          and (num_uses_limit = 0 or num_uses < num_uses_limit)`;
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

    async insertAccessToken(t: { id: string; identityId: string; clientSecretId: string; expiresAt: Date; maxExpiresAt: Date }): Promise<void> {
      await sql`insert into identity_access_tokens (id, identity_id, client_secret_id, expires_at, max_expires_at)
        values (${t.id}, ${t.identityId}, ${t.clientSecretId}, ${t.expiresAt}, ${t.maxExpiresAt})`;
    },

    /** The token's state if it is still valid: not revoked, not expired, its client secret not revoked. */
    async liveAccessToken(id: string): Promise<AccessTokenState | undefined> {
      const [row] = await sql<AccessTokenState[]>`select t.identity_id, t.client_secret_id, t.expires_at, t.max_expires_at
        from identity_access_tokens t
        join identity_client_secrets cs on cs.id = t.client_secret_id
        where t.id = ${id} and t.revoked_at is null and t.expires_at > now() and not cs.is_revoked`;
      return row;
    },

    /** Only the identity's own token: a token id named by claims that belong to another does nothing. */
    async revokeAccessToken(id: string, identityId: string): Promise<boolean> {
      const rows = await sql`update identity_access_tokens set revoked_at = now()
        where id = ${id} and identity_id = ${identityId} and revoked_at is null returning id`;
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
 * Deletes access-token rows revoked or expired more than `graceSeconds` ago (one row
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
          limit ${batchSize})`;
      return result.count;
    });
    if (deleted < 0) return total;
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

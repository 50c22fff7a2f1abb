// Token Auth of machine identities: its settings (one row per identity, migration 0015)
// and the access tokens an administrator minted with it (identity_access_tokens rows of
// auth_method 'token-auth', stored as every access token is: never the token itself).
import type { Queryable } from './db.js';
import type { TrustedIp } from './identities.js';

export interface TokenAuthSettings {
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  accessTokenNumUsesLimit: number;
  accessTokenTrustedIps: TrustedIp[];
}

export interface TokenAuthRow extends TokenAuthSettings {
  identityId: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A minted token as listed: what identifies and limits it, never the token. */
export interface TokenAuthTokenRow {
  id: string;
  identityId: string;
  name: string;
  /** Its TTLs as issued: the seconds from creation to expiry, and to its max expiry. */
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  numUses: number;
  numUsesLimit: number;
  expiresAt: Date;
  maxExpiresAt: Date;
  revokedAt: Date | null;
  createdAt: Date;
}

const COLUMNS = [
  'identity_id', 'access_token_ttl', 'access_token_max_ttl', 'access_token_num_uses_limit', 'access_token_trusted_ips', 'created_at', 'updated_at',
] as const;

const TOKEN_COLUMNS = `t.id, t.identity_id, t.name, t.num_uses, t.num_uses_limit, t.expires_at, t.max_expires_at, t.revoked_at, t.created_at,
  greatest(0, round(extract(epoch from t.expires_at - t.created_at)))::int as access_token_ttl,
  greatest(0, round(extract(epoch from t.max_expires_at - t.created_at)))::int as access_token_max_ttl`;

export function tokenAuthStore(sql: Queryable) {
  const values = (s: TokenAuthSettings) => ({
    access_token_ttl: s.accessTokenTtl,
    access_token_max_ttl: s.accessTokenMaxTtl,
    access_token_num_uses_limit: s.accessTokenNumUsesLimit,
    access_token_trusted_ips: sql.json(s.accessTokenTrustedIps as never),
  });

  async function token(id: string, opts: { forUpdate?: boolean } = {}): Promise<TokenAuthTokenRow | undefined> {
    const [row] = opts.forUpdate
      ? await sql<TokenAuthTokenRow[]>`select ${sql.unsafe(TOKEN_COLUMNS)} from identity_access_tokens t
          where t.id = ${id} and t.auth_method = 'token-auth' for update`
      : await sql<TokenAuthTokenRow[]>`select ${sql.unsafe(TOKEN_COLUMNS)} from identity_access_tokens t
          where t.id = ${id} and t.auth_method = 'token-auth'`;
    return row;
  }

  return {
    async get(identityId: string, opts: { forUpdate?: boolean } = {}): Promise<TokenAuthRow | undefined> {
      const [row] = opts.forUpdate
        ? await sql<TokenAuthRow[]>`select ${sql(COLUMNS)} from identity_token_auths where identity_id = ${identityId} for update`
        : await sql<TokenAuthRow[]>`select ${sql(COLUMNS)} from identity_token_auths where identity_id = ${identityId}`;
      return row;
    },

    async insert(identityId: string, s: TokenAuthSettings): Promise<TokenAuthRow> {
      const [out] = await sql<TokenAuthRow[]>`insert into identity_token_auths ${sql({ identity_id: identityId, ...values(s) })} returning ${sql(COLUMNS)}`;
      return out!;
    },

    async update(identityId: string, s: TokenAuthSettings): Promise<TokenAuthRow | undefined> {
      const [out] = await sql<TokenAuthRow[]>`update identity_token_auths set ${sql(values(s))}, updated_at = now()
        where identity_id = ${identityId} returning ${sql(COLUMNS)}`;
      return out;
    },

    /** Removes the method and revokes every token minted with it, in the caller's transaction. */
    async remove(identityId: string): Promise<TokenAuthRow | undefined> {
      const [out] = await sql<TokenAuthRow[]>`delete from identity_token_auths where identity_id = ${identityId} returning ${sql(COLUMNS)}`;
      if (!out) return undefined;
      await sql`update identity_access_tokens set revoked_at = now()
        where identity_id = ${identityId} and auth_method = 'token-auth' and revoked_at is null`;
      return out;
    },

    /** The identity's tokens that are not revoked (nor expired), oldest first (Infisical's order), a page of them. */
    async listTokens(identityId: string, page: { offset: number; limit: number }): Promise<TokenAuthTokenRow[]> {
      return sql<TokenAuthTokenRow[]>`select ${sql.unsafe(TOKEN_COLUMNS)} from identity_access_tokens t
        where t.identity_id = ${identityId} and t.auth_method = 'token-auth' and t.revoked_at is null and t.expires_at > now()
        order by t.created_at, t.id offset ${page.offset} limit ${page.limit}`;
    },

    token,

    async renameToken(id: string, name: string): Promise<TokenAuthTokenRow | undefined> {
      const rows = await sql`update identity_access_tokens set name = ${name} where id = ${id} and auth_method = 'token-auth' returning id`;
      return rows.length === 1 ? token(id) : undefined;
    },

    /** True when this call revoked it (false: revoked already, or no such token). */
    async revokeToken(id: string): Promise<boolean> {
      const rows = await sql`update identity_access_tokens set revoked_at = now()
        where id = ${id} and auth_method = 'token-auth' and revoked_at is null returning id`;
      return rows.length === 1;
    },
  };
}
export type TokenAuthStore = ReturnType<typeof tokenAuthStore>;

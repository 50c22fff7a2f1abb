// JWT auth and OIDC auth of machine identities: one row per identity and method
// (migration 0013). Public keys, URLs and CA certificates are public material.
import type { Queryable } from './db.js';
import type { TrustedIp } from './identities.js';

export type TokenAuthMethod = 'jwt-auth' | 'oidc-auth';

/** The settings of either method; fields of the other method are '' / [] / null. */
export interface JwtAuthSettings {
  /** jwt-auth only ('static': publicKeys, 'jwks': jwksUrl); null for oidc-auth. */
  configurationType: 'static' | 'jwks' | null;
  jwksUrl: string;
  publicKeys: string[];
  oidcDiscoveryUrl: string;
  caCert: string;
  boundIssuer: string;
  /** Infisical's form: values joined with ', ', each exact or a glob. */
  boundAudiences: string;
  /** Claim (dotted path) → values joined with ', ', each exact or a glob. */
  boundClaims: Record<string, string>;
  boundSubject: string;
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  accessTokenNumUsesLimit: number;
  accessTokenTrustedIps: TrustedIp[];
}

export interface JwtAuthRow extends JwtAuthSettings {
  identityId: string;
  method: TokenAuthMethod;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = [
  'identity_id', 'method', 'configuration_type', 'jwks_url', 'public_keys', 'oidc_discovery_url', 'ca_cert',
  'bound_issuer', 'bound_audiences', 'bound_claims', 'bound_subject', 'access_token_ttl', 'access_token_max_ttl',
  'access_token_num_uses_limit', 'access_token_trusted_ips', 'created_at', 'updated_at',
] as const;

export function jwtAuthStore(sql: Queryable) {
  const values = (s: JwtAuthSettings) => ({
    configuration_type: s.configurationType,
    jwks_url: s.jwksUrl,
    public_keys: sql.json(s.publicKeys),
    oidc_discovery_url: s.oidcDiscoveryUrl,
    ca_cert: s.caCert,
    bound_issuer: s.boundIssuer,
    bound_audiences: s.boundAudiences,
    bound_claims: sql.json(s.boundClaims),
    bound_subject: s.boundSubject,
    access_token_ttl: s.accessTokenTtl,
    access_token_max_ttl: s.accessTokenMaxTtl,
    access_token_num_uses_limit: s.accessTokenNumUsesLimit,
    access_token_trusted_ips: sql.json(s.accessTokenTrustedIps as never),
  });

  return {
    async get(identityId: string, method: TokenAuthMethod, opts: { forUpdate?: boolean } = {}): Promise<JwtAuthRow | undefined> {
      const [row] = opts.forUpdate
        ? await sql<JwtAuthRow[]>`select ${sql(COLUMNS)} from identity_jwt_auths
            where identity_id = ${identityId} and method = ${method} for update`
        : await sql<JwtAuthRow[]>`select ${sql(COLUMNS)} from identity_jwt_auths
            where identity_id = ${identityId} and method = ${method}`;
      return row;
    },

    async insert(identityId: string, method: TokenAuthMethod, s: JwtAuthSettings): Promise<JwtAuthRow> {
      const row = { identity_id: identityId, method, ...values(s) };
      const [out] = await sql<JwtAuthRow[]>`insert into identity_jwt_auths ${sql(row)} returning ${sql(COLUMNS)}`;
      return out!;
    },

    async update(identityId: string, method: TokenAuthMethod, s: JwtAuthSettings): Promise<JwtAuthRow | undefined> {
      const [out] = await sql<JwtAuthRow[]>`update identity_jwt_auths set ${sql(values(s))}, updated_at = now()
        where identity_id = ${identityId} and method = ${method} returning ${sql(COLUMNS)}`;
      return out;
    },

    /**
     * Removes the method and revokes every token it issued, in the caller's transaction:
     * attaching the method again later does not bring them back.
     */
    async remove(identityId: string, method: TokenAuthMethod): Promise<JwtAuthRow | undefined> {
      const [out] = await sql<JwtAuthRow[]>`delete from identity_jwt_auths
        where identity_id = ${identityId} and method = ${method} returning ${sql(COLUMNS)}`;
      if (!out) return undefined;
      await sql`update identity_access_tokens set revoked_at = now()
        where identity_id = ${identityId} and auth_method = ${method} and revoked_at is null`;
      return out;
    },
  };
}
export type JwtAuthStore = ReturnType<typeof jwtAuthStore>;

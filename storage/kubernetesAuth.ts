// Kubernetes Auth of machine identities: one row per identity (migration 0015). The
// reviewer JWT is a sealed blob under the row's own data key (crypto_keys purpose
// 'identity'); only its wrapped key and ciphertext pass through here.
import type { Queryable } from './db.js';
import type { TrustedIp } from './identities.js';

export interface KubernetesAuthSettings {
  /** https://host[:port]. */
  kubernetesHost: string;
  /** PEM ('' = the system CAs). */
  caCert: string;
  /** Infisical's form: values joined with ', ', each exact or a glob. */
  allowedNamespaces: string;
  allowedNames: string;
  /** One audience ('' = none asked for). */
  allowedAudience: string;
  accessTokenTtl: number;
  accessTokenMaxTtl: number;
  accessTokenNumUsesLimit: number;
  accessTokenTrustedIps: TrustedIp[];
}

export interface KubernetesAuthRow extends KubernetesAuthSettings {
  identityId: string;
  dataKeyId: string;
  /** Whether a reviewer JWT is configured (else the caller's token reviews itself). */
  hasReviewerJwt: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** What a login needs to open the reviewer JWT: the blob and its data key, wrapped. */
export interface KubernetesAuthLoginRow extends KubernetesAuthRow {
  tokenReviewerJwt: Buffer | null;
  wrappedKey: Buffer;
}

const COLUMNS = `k.identity_id, k.kubernetes_host, k.ca_cert, k.data_key_id, (k.token_reviewer_jwt is not null) as has_reviewer_jwt,
  k.allowed_namespaces, k.allowed_names, k.allowed_audience, k.access_token_ttl, k.access_token_max_ttl,
  k.access_token_num_uses_limit, k.access_token_trusted_ips, k.created_at, k.updated_at`;

export function kubernetesAuthStore(sql: Queryable) {
  const values = (s: KubernetesAuthSettings) => ({
    kubernetes_host: s.kubernetesHost,
    ca_cert: s.caCert,
    allowed_namespaces: s.allowedNamespaces,
    allowed_names: s.allowedNames,
    allowed_audience: s.allowedAudience,
    access_token_ttl: s.accessTokenTtl,
    access_token_max_ttl: s.accessTokenMaxTtl,
    access_token_num_uses_limit: s.accessTokenNumUsesLimit,
    access_token_trusted_ips: sql.json(s.accessTokenTrustedIps as never),
  });

  async function get(identityId: string, opts: { forUpdate?: boolean } = {}): Promise<KubernetesAuthRow | undefined> {
    const [row] = opts.forUpdate
      ? await sql<KubernetesAuthRow[]>`select ${sql.unsafe(COLUMNS)} from identity_kubernetes_auths k where k.identity_id = ${identityId} for update`
      : await sql<KubernetesAuthRow[]>`select ${sql.unsafe(COLUMNS)} from identity_kubernetes_auths k where k.identity_id = ${identityId}`;
    return row;
  }

  return {
    get,

    /** With the sealed reviewer JWT and its wrapped data key (a login). */
    async forLogin(identityId: string): Promise<KubernetesAuthLoginRow | undefined> {
      const [row] = await sql<KubernetesAuthLoginRow[]>`select ${sql.unsafe(COLUMNS)}, k.token_reviewer_jwt, c.wrapped as wrapped_key
        from identity_kubernetes_auths k join crypto_keys c on c.id = k.data_key_id where k.identity_id = ${identityId}`;
      return row;
    },

    /** `dataKeyId` names a crypto_keys row inserted in the same transaction. */
    async insert(identityId: string, dataKeyId: string, s: KubernetesAuthSettings, reviewerJwt: Buffer | null): Promise<KubernetesAuthRow> {
      const row = { identity_id: identityId, data_key_id: dataKeyId, token_reviewer_jwt: reviewerJwt, ...values(s) };
      await sql`insert into identity_kubernetes_auths ${sql(row)}`;
      return (await get(identityId))!;
    },

    /** `reviewerJwt`: undefined keeps the sealed one, null removes it, a blob replaces it. */
    async update(identityId: string, s: KubernetesAuthSettings, reviewerJwt: Buffer | null | undefined): Promise<KubernetesAuthRow | undefined> {
      const set = reviewerJwt === undefined ? values(s) : { ...values(s), token_reviewer_jwt: reviewerJwt };
      const rows = await sql`update identity_kubernetes_auths set ${sql(set)}, updated_at = now() where identity_id = ${identityId} returning identity_id`;
      return rows.length === 1 ? get(identityId) : undefined;
    },

    /**
     * Removes the method (its data key goes with it: a trigger) and revokes every token it
     * issued, in the caller's transaction.
     */
    async remove(identityId: string): Promise<KubernetesAuthRow | undefined> {
      const cur = await get(identityId);
      if (!cur) return undefined;
      await sql`delete from identity_kubernetes_auths where identity_id = ${identityId}`;
      await sql`update identity_access_tokens set revoked_at = now()
        where identity_id = ${identityId} and auth_method = 'kubernetes-auth' and revoked_at is null`;
      return cur;
    },
  };
}
export type KubernetesAuthStore = ReturnType<typeof kubernetesAuthStore>;

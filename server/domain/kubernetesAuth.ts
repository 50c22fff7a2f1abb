// Kubernetes Auth of machine identities (Infisical's kubernetes-auth): a pod presents
// its service-account token; the service asks the cluster's API server whether the token
// is valid (TokenReview, server/domain/tokenReview.ts), then applies the identity's
// bindings (namespaces, service account names, audience) and issues an access token.
//
// The reviewer JWT (a token allowed to create TokenReviews) is a credential: it is sealed
// in the crypto workers under a data key of its own, bound to the identity, opened only
// for a login's review, and never answered (GET answers `tokenReviewerJwt: ""`; Infisical
// answers it in clear, which this service does not). Without one, the caller's own token
// is its reviewer (Infisical's behaviour when none is configured).
//
// Statuses, as Infisical answers them: no configuration 404; the token not authenticated
// (or the caller's own token refused as its reviewer) 401; a namespace, name or audience
// not allowed 401. Unlike Infisical, a review that cannot be had (API server down, slow,
// TLS failure, 5xx, the configured reviewer refused) is a 503 with Retry-After, never a
// verdict on the token. Failed logins are not counted toward a lockout (the token is
// not guessable, as in JWT auth).
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import type { TrustedIp } from '../../storage/identities.js';
import type { KubernetesAuthRow, KubernetesAuthSettings } from '../../storage/kubernetesAuth.js';
import { AppError } from '../errors.js';
import { isUuid, requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { globMatch } from './glob.js';
import { checkAccessTokenSettings, existingIdentity } from './identities.js';
import { policyList } from './jwtAuth.js';
import { isCertificate } from './jwtKeys.js';
import { dataKeyAad } from './keyring.js';
import { methodToken, newAccessToken, type LoginResult, type MachineAuth } from './machineAuth.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { parseKubernetesHost, reviewToken, ReviewUnavailable, type ReviewOutcome, type TokenReviewRequest } from './tokenReview.js';

/** Settings as a request gives them; `tokenReviewerJwt`: undefined or '' keeps, null removes. */
export type KubernetesAuthInput = Partial<KubernetesAuthSettings> & { tokenReviewerJwt?: string | null };

export interface KubernetesAuthDeps {
  store: { identities: Pick<Store['identities'], 'byIdWithAuth'>; kubernetesAuths: Pick<Store['kubernetesAuths'], 'get' | 'forLogin'> };
  crypto: Pick<Crypto, 'generateDataKey' | 'sealMany' | 'openMany' | 'rootKeyVersion'>;
  changes: Pick<WritePipeline, 'inOrganization' | 'byCaller'>;
  machineAuth: Pick<MachineAuth, 'issue'>;
  /** The deadline of one TokenReview (connect, TLS, answer). */
  reviewTimeoutMs: number;
  /** Tests replace the call. */
  review?: (r: TokenReviewRequest) => Promise<ReviewOutcome>;
  now?: () => number;
}

const ALL_ADDRESSES: TrustedIp[] = [
  { ipAddress: '0.0.0.0', type: 'ipv4', prefix: 0 },
  { ipAddress: '::', type: 'ipv6', prefix: 0 },
];

const DEFAULTS: Omit<KubernetesAuthSettings, 'kubernetesHost'> = {
  caCert: '',
  allowedNamespaces: '',
  allowedNames: '',
  allowedAudience: '',
  accessTokenTtl: 2_592_000,
  accessTokenMaxTtl: 2_592_000,
  accessTokenNumUsesLimit: 0,
  accessTokenTrustedIps: ALL_ADDRESSES,
};

const LIMITS = { host: 2048, pem: 16_384, list: 4096, audience: 1024, reviewerJwt: 16_384 };

/** The AAD binding a sealed reviewer JWT to its identity. */
export const reviewerJwtAad = (identityId: string) => `vault-standalone:kubernetes-auth:reviewer-jwt:v1:${identityId}`;

const invalid = (message: string) => new AppError('VALIDATION', message);
const unavailable = (why: string) =>
  new AppError('UNAVAILABLE', `Access denied for now: the Kubernetes API server could not review the token (${why}); retry shortly`, {
    headers: { 'Retry-After': '5' },
  });
const denied = (why: string) => new AppError('UNAUTHORIZED', `Access denied: ${why}`);

/** Every rule of a complete configuration; 422 naming the field (400 for the TTL pair, as the other methods). */
export function checkSettings(s: KubernetesAuthSettings): void {
  if (s.kubernetesHost.length > LIMITS.host) throw invalid(`kubernetesHost: at most ${LIMITS.host} characters`);
  const host = parseKubernetesHost(s.kubernetesHost);
  if (typeof host === 'string') throw invalid(host);
  if (s.caCert !== '' && (s.caCert.length > LIMITS.pem || !isCertificate(s.caCert))) throw invalid('caCert is not a PEM certificate');
  if (s.allowedNamespaces.length > LIMITS.list) throw invalid(`allowedNamespaces: at most ${LIMITS.list} characters`);
  if (s.allowedNames.length > LIMITS.list) throw invalid(`allowedNames: at most ${LIMITS.list} characters`);
  if (s.allowedAudience.length > LIMITS.audience) throw invalid(`allowedAudience: at most ${LIMITS.audience} characters`);
  checkAccessTokenSettings(s);
}

/** Given fields over `base`, in their normal form (the host as an https URL, lists as Infisical joins them). */
function merge(base: KubernetesAuthSettings, input: KubernetesAuthInput): KubernetesAuthSettings {
  const { tokenReviewerJwt: _jwt, ...fields } = input;
  const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<KubernetesAuthSettings>;
  const next = { ...base, ...defined };
  const host = parseKubernetesHost(next.kubernetesHost);
  if (typeof host !== 'string') next.kubernetesHost = host.href.replace(/\/+$/, '');
  next.allowedNamespaces = policyList(next.allowedNamespaces);
  next.allowedNames = policyList(next.allowedNames);
  next.allowedAudience = next.allowedAudience.trim();
  return next;
}

const ipTexts = (list: TrustedIp[]) => list.map((r) => (r.prefix === undefined ? r.ipAddress : `${r.ipAddress}/${r.prefix}`)).join(', ');

/** Scalars only; never the reviewer JWT (only whether one is configured). */
function settingsMetadata(row: KubernetesAuthRow) {
  return {
    identityId: row.identityId,
    kubernetesHost: row.kubernetesHost,
    caCert: row.caCert !== '',
    tokenReviewerJwt: row.hasReviewerJwt,
    allowedNamespaces: row.allowedNamespaces,
    allowedNames: row.allowedNames,
    allowedAudience: row.allowedAudience,
    accessTokenTTL: row.accessTokenTtl,
    accessTokenMaxTTL: row.accessTokenMaxTtl,
    accessTokenNumUsesLimit: row.accessTokenNumUsesLimit,
    accessTokenTrustedIps: ipTexts(row.accessTokenTrustedIps),
  };
}

/** `system:serviceaccount:<namespace>:<name>`; undefined for any other username. */
export function serviceAccountOf(username: string): { namespace: string; name: string } | undefined {
  const parts = username.split(':');
  if (parts.length !== 4 || parts[0] !== 'system' || parts[1] !== 'serviceaccount' || !parts[2] || !parts[3]) return undefined;
  return { namespace: parts[2], name: parts[3] };
}

const allowedBy = (list: string, value: string) => list === '' || list.split(', ').some((p) => globMatch(value, p));

export function kubernetesAuthDomain(deps: KubernetesAuthDeps) {
  const { store, crypto, changes, machineAuth } = deps;
  const review = deps.review ?? reviewToken;
  const now = deps.now ?? Date.now;
  const notConfigured = (identityId: string) => new AppError('NOT_FOUND', `Kubernetes Auth is not configured for identity '${identityId}'`);

  async function configOf(s: KubernetesAuthDeps['store'], identityId: string, forUpdate = false): Promise<KubernetesAuthRow> {
    const identity = await existingIdentity(s, identityId);
    const row = await s.kubernetesAuths.get(identity.id, { forUpdate });
    if (!row) throw notConfigured(identityId);
    return row;
  }

  function checkReviewerJwt(jwt: string | null | undefined): void {
    if (typeof jwt === 'string' && jwt.length > LIMITS.reviewerJwt) throw invalid(`tokenReviewerJwt: at most ${LIMITS.reviewerJwt} characters`);
  }

  const seal = async (wrapped: Buffer, keyId: string, identityId: string, jwt: string) =>
    (await crypto.sealMany(wrapped, dataKeyAad(keyId), [{ plaintext: jwt, aad: reviewerJwtAad(identityId) }]))[0]!;

  return {
    async attach(actor: Actor | SystemActor, identityId: string, input: KubernetesAuthInput, origin?: Origin): Promise<KubernetesAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      if (input.kubernetesHost === undefined) throw invalid('kubernetesHost is required');
      // Infisical's default max TTL follows a longer TTL.
      const withMax = input.accessTokenMaxTtl === undefined && input.accessTokenTtl !== undefined
        ? { ...input, accessTokenMaxTtl: Math.max(DEFAULTS.accessTokenMaxTtl, input.accessTokenTtl) }
        : input;
      const settings = merge({ ...DEFAULTS, kubernetesHost: input.kubernetesHost }, withMax);
      checkSettings(settings);
      checkReviewerJwt(input.tokenReviewerJwt);
      const jwt = input.tokenReviewerJwt ? input.tokenReviewerJwt : null;
      const keyId = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(keyId));
      return grant.run(async ({ s, audit }) => {
        const identity = await existingIdentity(s, identityId);
        if (await s.kubernetesAuths.get(identity.id)) throw new AppError('BAD_REQUEST', 'Kubernetes Auth is already configured for this identity');
        const blob = jwt === null ? null : await seal(wrapped, keyId, identity.id, jwt);
        await s.keys.insert({ id: keyId, purpose: 'identity', rootKeyVersion: crypto.rootKeyVersion, wrapped });
        const row = await s.kubernetesAuths.insert(identity.id, keyId, settings, blob);
        await audit({ eventType: 'add-identity-kubernetes-auth', metadata: settingsMetadata(row) });
        return row;
      });
    },

    /** Changes the given fields, keeps the others; trusted IPs and TTLs apply to live tokens at once, on every replica. */
    async update(actor: Actor | SystemActor, identityId: string, input: KubernetesAuthInput, origin?: Origin): Promise<KubernetesAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      checkReviewerJwt(input.tokenReviewerJwt);
      return grant.run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, identityId, true);
        const next = merge(cur, input);
        checkSettings(next);
        let blob: Buffer | null | undefined;
        if (input.tokenReviewerJwt === null) blob = null;
        else if (input.tokenReviewerJwt) {
          const key = await s.keys.get(cur.dataKeyId);
          if (!key) throw new Error(`the data key of identity ${cur.identityId}'s Kubernetes Auth is missing`);
          blob = await seal(key.wrapped, key.id, cur.identityId, input.tokenReviewerJwt);
        }
        const row = (await s.kubernetesAuths.update(cur.identityId, next, blob))!;
        await audit({ eventType: 'update-identity-kubernetes-auth', metadata: settingsMetadata(row) });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    async get(actor: Actor | SystemActor, identityId: string): Promise<KubernetesAuthRow> {
      requireOrgAdmin(actor);
      return configOf(store, identityId);
    },

    /** Removes the method (and its sealed reviewer JWT's key); the tokens it issued stop working at once, on every replica. */
    async revoke(actor: Actor | SystemActor, identityId: string, origin?: Origin): Promise<KubernetesAuthRow> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, identityId, true);
        const row = (await s.kubernetesAuths.remove(cur.identityId))!;
        await audit({ eventType: 'revoke-identity-kubernetes-auth', metadata: { identityId: cur.identityId } });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    /**
     * Infisical's order: no configuration (404); the TokenReview (503 when it cannot be
     * had; 401 when the token is not authenticated); then the bindings (401 each).
     */
    async login(input: { identityId: string; jwt: string; ip?: string | null }): Promise<LoginResult> {
      const identityId = input.identityId.toLowerCase();
      const cfg = isUuid(identityId) ? await store.kubernetesAuths.forLogin(identityId) : undefined;
      if (!cfg) throw new AppError('NOT_FOUND', 'Kubernetes Auth method not found for identity, did you configure Kubernetes Auth?');
      const host = parseKubernetesHost(cfg.kubernetesHost);
      if (typeof host === 'string') throw unavailable('the configured host is refused');
      // Opened for this review only; it is never kept.
      const bearer = cfg.tokenReviewerJwt
        ? (await crypto.openMany(cfg.wrappedKey, dataKeyAad(cfg.dataKeyId), [{ blob: cfg.tokenReviewerJwt, aad: reviewerJwtAad(cfg.identityId) }]))[0]!
        : input.jwt;
      let outcome: ReviewOutcome;
      try {
        outcome = await review({
          host,
          caCert: cfg.caCert,
          bearer,
          token: input.jwt,
          audiences: cfg.allowedAudience !== '' ? [cfg.allowedAudience] : undefined,
          timeoutMs: deps.reviewTimeoutMs,
        });
      } catch (err) {
        if (err instanceof ReviewUnavailable) throw unavailable(err.why);
        throw err;
      }
      if (outcome.kind === 'reviewer-refused') {
        // The configured reviewer's credential refused: the configuration's fault, not the token's.
        if (cfg.hasReviewerJwt) throw unavailable(`the API server refused the token reviewer JWT (${outcome.status})`);
        throw denied(`the Kubernetes API server refused the service account token as its own reviewer (${outcome.status})`);
      }
      const st = outcome.status;
      if (st.error !== '' && !st.authenticated) throw denied(`Kubernetes token not authenticated: ${st.error}`);
      if (!st.authenticated) throw denied('Kubernetes token not authenticated');
      const sa = serviceAccountOf(st.username);
      if (!sa) throw denied('the token is not a Kubernetes service account token');
      if (!allowedBy(cfg.allowedNamespaces, sa.namespace)) throw denied('K8s namespace not allowed.');
      if (!allowedBy(cfg.allowedNames, sa.name)) throw denied('K8s name not allowed.');
      if (cfg.allowedAudience !== '' && !st.audiences.includes(cfg.allowedAudience)) throw denied('K8s audience not allowed.');

      const issuedAt = now();
      const { tokenId, secret, secretHash } = newAccessToken();
      const row = await changes.byCaller({ actorType: 'identity', actorId: cfg.identityId }, { ip: input.ip }).run(async ({ s, audit }) => {
        // As the configuration is now: removed or changed meanwhile, the token follows it.
        const cur = await s.kubernetesAuths.get(cfg.identityId);
        if (!cur) throw denied('the auth method was removed');
        await s.identities.insertAccessToken({
          id: tokenId,
          secretHash,
          identityId: cfg.identityId,
          clientSecretId: null,
          authMethod: 'kubernetes-auth',
          expiresAt: new Date(issuedAt + cur.accessTokenTtl * 1000),
          maxExpiresAt: new Date(issuedAt + cur.accessTokenMaxTtl * 1000),
          numUsesLimit: cur.accessTokenNumUsesLimit,
        });
        await audit({
          eventType: 'login-identity-kubernetes-auth',
          metadata: { identityId: cfg.identityId, accessTokenId: tokenId, namespace: sa.namespace.slice(0, 256), serviceAccount: sa.name.slice(0, 256) },
        });
        return cur;
      });
      return machineAuth.issue(methodToken(cfg.identityId, { tokenId, secret }, issuedAt, row, 'kubernetes-auth'));
    },
  };
}
export type KubernetesAuthDomain = ReturnType<typeof kubernetesAuthDomain>;

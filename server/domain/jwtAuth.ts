// JWT auth and OIDC auth of machine identities (Infisical's jwt-auth and oidc-auth): a
// signed identity token from an issuer the identity trusts (a Kubernetes cluster, a CI
// system) is exchanged for an access token, with no static secret anywhere.
//
// Configuration is the superadmin's (like Universal Auth). A login verifies the token's
// signature (server/domain/jwtKeys.ts: static keys, a JWKS, or an OIDC provider's
// discovery document), then its bindings in Infisical's order and with Infisical's
// statuses: issuer (403), subject (403), audiences (401), claims (401). Each bound value
// is a list of exact values or globs (`*` within a path segment, `**` across `/`).
//
// A configuration must bind the issuer and the workload: `boundIssuer` for JWT Auth (OIDC
// Auth binds the discovery document's issuer when none is given), and `boundSubject` or
// at least one bound claim. An audience alone is not enough: public issuers (GitHub
// Actions, GitLab) give anyone on the internet a token of any audience they ask for.
// A configuration stored before this rule that binds less is refused at login (403).
//
// Failed logins are not counted towards a lockout: a signed token cannot be guessed, so
// a lockout would stop no attacker and would let anyone who knows an identity id lock
// its workload out.
import type { JWTPayload } from 'jose';
import type { Store } from '../../storage/index.js';
import type { TrustedIp } from '../../storage/identities.js';
import type { JwtAuthRow, JwtAuthSettings, TokenAuthMethod } from '../../storage/jwtAuth.js';
import { AppError } from '../errors.js';
import { isUuid, requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { globMatch } from './glob.js';
import { checkAccessTokenSettings, existingIdentity } from './identities.js';
import { hostRefusal } from './fetchGuard.js';
import { isCertificate, parseFetchUrl, parsePublicKey, type KeySources } from './jwtKeys.js';
import { methodToken, newAccessToken, type LoginResult, type MachineAuth } from './machineAuth.js';
import type { Origin, WritePipeline } from './pipeline.js';

export type { TokenAuthMethod } from '../../storage/jwtAuth.js';

/** Settings as a request gives them: absent fields keep their value (or take the default on attach). */
export type JwtAuthInput = Partial<JwtAuthSettings>;

export interface JwtAuthDeps {
  store: { identities: Pick<Store['identities'], 'byIdWithAuth'>; jwtAuths: Pick<Store['jwtAuths'], 'get'> };
  changes: Pick<WritePipeline, 'inOrganization' | 'byCaller'>;
  keys: KeySources;
  machineAuth: Pick<MachineAuth, 'issue'>;
  now?: () => number;
}

const NAMES: Record<TokenAuthMethod, { label: string; event: string }> = {
  'jwt-auth': { label: 'JWT Auth', event: 'jwt-auth' },
  'oidc-auth': { label: 'OIDC Auth', event: 'oidc-auth' },
};

const ALL_ADDRESSES: TrustedIp[] = [
  { ipAddress: '0.0.0.0', type: 'ipv4', prefix: 0 },
  { ipAddress: '::', type: 'ipv6', prefix: 0 },
];

export const DEFAULT_SETTINGS: JwtAuthSettings = {
  configurationType: null,
  jwksUrl: '',
  publicKeys: [],
  oidcDiscoveryUrl: '',
  caCert: '',
  boundIssuer: '',
  boundAudiences: '',
  boundClaims: {},
  boundSubject: '',
  accessTokenTtl: 2_592_000,
  accessTokenMaxTtl: 2_592_000,
  accessTokenNumUsesLimit: 0,
  accessTokenTrustedIps: ALL_ADDRESSES,
};

const invalid = (message: string) => new AppError('VALIDATION', message);

/** Infisical's normal form of a comma-separated list: trimmed values, empty ones dropped, joined by ', '. */
export const policyList = (text: string) =>
  text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
    .join(', ');

/** A claim's value against one policy entry (Infisical: booleans and numbers compare as such, lists by any entry). */
function claimMatches(value: unknown, policy: string): boolean {
  if (typeof value === 'boolean') return value === (policy === 'true');
  if (typeof value === 'number') return String(value) === policy;
  if (typeof value === 'string') return globMatch(value, policy);
  if (Array.isArray(value)) return value.some((v) => typeof v === 'string' && globMatch(v, policy));
  return false;
}

/**
 * `a.b.c` into the payload, own properties only. A claim name may itself hold dots
 * (Kubernetes' `kubernetes.io`): a segment is matched whole before it is split.
 */
function valueAt(obj: unknown, path: string): unknown {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const own = (k: string) => Object.prototype.hasOwnProperty.call(obj, k);
  if (own(path)) return (obj as Record<string, unknown>)[path];
  for (let i = path.lastIndexOf('.'); i > 0; i = path.lastIndexOf('.', i - 1)) {
    const head = path.slice(0, i);
    if (!own(head)) continue;
    const v = valueAt((obj as Record<string, unknown>)[head], path.slice(i + 1));
    if (v !== undefined) return v;
  }
  return undefined;
}

/** The bindings, in Infisical's order and with its statuses. `providerIssuer`: OIDC's discovery `issuer`. */
export function checkBindings(payload: JWTPayload, cfg: JwtAuthSettings, providerIssuer?: string): void {
  if (cfg.boundIssuer !== '' ? payload.iss !== cfg.boundIssuer : providerIssuer !== undefined && payload.iss !== providerIssuer) {
    throw new AppError('FORBIDDEN', 'Access denied: issuer mismatch');
  }
  if (cfg.boundSubject !== '') {
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new AppError('UNAUTHORIZED', 'Access denied: token has no subject field');
    if (!globMatch(payload.sub, cfg.boundSubject)) throw new AppError('FORBIDDEN', 'Access denied: subject not allowed');
  }
  if (cfg.boundAudiences !== '') {
    const aud = payload.aud;
    if (aud === undefined || aud === '' || (Array.isArray(aud) && aud.length === 0)) {
      throw new AppError('UNAUTHORIZED', 'Access denied: token has no audience field');
    }
    const auds = Array.isArray(aud) ? aud : [aud];
    if (!cfg.boundAudiences.split(', ').some((p) => auds.some((a) => typeof a === 'string' && globMatch(a, p)))) {
      throw new AppError('UNAUTHORIZED', 'Access denied: token audience not allowed');
    }
  }
  for (const [claim, policy] of Object.entries(cfg.boundClaims)) {
    const value = valueAt(payload, claim);
    if (value === undefined || value === null || value === '') throw new AppError('UNAUTHORIZED', `Access denied: token has no ${claim} field`);
    if (!policy.split(', ').some((p) => claimMatches(value, p))) {
      throw new AppError('UNAUTHORIZED', `Access denied: claim mismatch for field ${claim}`);
    }
  }
}

/** A bound value made only of `*`, `?` and `/` admits (nearly) every value: it binds nothing. */
const admitsAll = (pattern: string) => /^[*?/]+$/.test(pattern);

/**
 * What a configuration leaves unbound, as the fields to set; empty when it binds the
 * issuer and the subject or a claim. A claim whose list holds an admit-all entry, or a
 * subject that admits all, does not count.
 */
export function missingBindings(method: TokenAuthMethod, s: Pick<JwtAuthSettings, 'boundIssuer' | 'boundSubject' | 'boundClaims'>): string[] {
  const missing: string[] = [];
  if (method === 'jwt-auth' && s.boundIssuer === '') missing.push('boundIssuer');
  const subject = s.boundSubject !== '' && !admitsAll(s.boundSubject);
  const claim = Object.values(s.boundClaims).some((list) => list !== '' && !list.split(',').some((p) => admitsAll(p.trim())));
  if (!subject && !claim) missing.push('boundSubject or boundClaims');
  return missing;
}

/** Why a configuration that binds too little is refused (names the fields to set). */
export function bindingsMessage(method: TokenAuthMethod, missing: string[]): string {
  const why = missing.map((m) =>
    m === 'boundIssuer'
      ? 'boundIssuer is required (without it a token of any issuer is accepted)'
      : "boundSubject or boundClaims is required, with a value that is not only '*', '?' and '/' (without them any token of the issuer is accepted; " +
        'boundAudiences alone is not enough: public issuers such as GitHub Actions and GitLab give anyone a token of any audience)',
  );
  return `${NAMES[method].label} must bind the issuer and the subject or a claim: ${why.join('; ')}`;
}

const LIMITS = { url: 2048, pem: 16_384, publicKeys: 20, bound: 1024, audiences: 4096, claims: 50, claimName: 256, claimValue: 2048 };

/** Every rule of a complete configuration; throws 422 naming the field (400 for the TTL pair, as Universal Auth). */
export function checkSettings(method: TokenAuthMethod, s: JwtAuthSettings): void {
  if (method === 'jwt-auth') {
    if (s.configurationType === 'static') {
      if (s.publicKeys.length === 0) throw invalid("publicKeys: configurationType 'static' needs at least one public key");
      if (s.jwksUrl !== '' || s.caCert !== '') throw invalid("jwksUrl and jwksCaCert apply only to configurationType 'jwks'");
    } else if (s.configurationType === 'jwks') {
      if (s.publicKeys.length > 0) throw invalid("publicKeys apply only to configurationType 'static'");
      const url = parseFetchUrl(s.jwksUrl);
      if (!url || s.jwksUrl.length > LIMITS.url) throw invalid('jwksUrl must be an http(s) URL');
      const refused = hostRefusal(url);
      if (refused) throw invalid(`jwksUrl: ${refused}, which is never fetched`);
    } else throw invalid("configurationType must be 'static' or 'jwks'");
    if (s.publicKeys.length > LIMITS.publicKeys) throw invalid(`publicKeys: at most ${LIMITS.publicKeys} keys`);
    s.publicKeys.forEach((pem, i) => {
      if (pem.length > LIMITS.pem || !parsePublicKey(pem)) throw invalid(`publicKeys[${i}] is not a PEM public key (RSA, EC or Ed25519)`);
    });
    if (s.caCert !== '' && (s.caCert.length > LIMITS.pem || !isCertificate(s.caCert))) throw invalid('jwksCaCert is not a PEM certificate');
  } else {
    const url = parseFetchUrl(s.oidcDiscoveryUrl);
    if (!url || s.oidcDiscoveryUrl.length > LIMITS.url) throw invalid('oidcDiscoveryUrl must be an http(s) URL');
    const refused = hostRefusal(url);
    if (refused) throw invalid(`oidcDiscoveryUrl: ${refused}, which is never fetched`);
    if (s.caCert !== '' && (s.caCert.length > LIMITS.pem || !isCertificate(s.caCert))) throw invalid('caCert is not a PEM certificate');
  }
  if (s.boundIssuer.length > LIMITS.bound) throw invalid(`boundIssuer: at most ${LIMITS.bound} characters`);
  if (s.boundSubject.length > LIMITS.bound) throw invalid(`boundSubject: at most ${LIMITS.bound} characters`);
  if (s.boundAudiences.length > LIMITS.audiences) throw invalid(`boundAudiences: at most ${LIMITS.audiences} characters`);
  const claims = Object.entries(s.boundClaims);
  if (claims.length > LIMITS.claims) throw invalid(`boundClaims: at most ${LIMITS.claims} claims`);
  for (const [k, v] of claims) {
    if (k === '' || k.length > LIMITS.claimName || k.split('.').some((p) => p === '')) throw invalid(`boundClaims: '${k.slice(0, 64)}' is not a claim name`);
    if (v === '' || v.length > LIMITS.claimValue) throw invalid(`boundClaims.${k}: from 1 to ${LIMITS.claimValue} characters`);
  }
  checkAccessTokenSettings(s);
  const missing = missingBindings(method, s);
  if (missing.length > 0) throw invalid(bindingsMessage(method, missing));
}

/** Given fields over `base`, in their normal form (audiences and claim values as Infisical lists them). */
function merge(base: JwtAuthSettings, input: JwtAuthInput): JwtAuthSettings {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as JwtAuthInput;
  const next = { ...base, ...defined };
  // Switching a JWT configuration's type drops what belonged to the other type, unless given.
  if (input.configurationType && input.configurationType !== base.configurationType) {
    if (input.configurationType === 'static') {
      next.jwksUrl = input.jwksUrl ?? '';
      next.caCert = input.caCert ?? '';
    } else next.publicKeys = input.publicKeys ?? [];
  }
  next.boundAudiences = policyList(next.boundAudiences);
  next.boundClaims = Object.fromEntries(Object.entries(next.boundClaims).map(([k, v]) => [k.trim(), policyList(v)]));
  return next;
}

const ipTexts = (list: TrustedIp[]) => list.map((r) => (r.prefix === undefined ? r.ipAddress : `${r.ipAddress}/${r.prefix}`)).join(', ');

/** Scalars only; public material, never a token. */
function settingsMetadata(identityId: string, s: JwtAuthSettings) {
  return {
    identityId,
    ...(s.configurationType ? { configurationType: s.configurationType, jwksUrl: s.jwksUrl, publicKeys: s.publicKeys.length } : { oidcDiscoveryUrl: s.oidcDiscoveryUrl }),
    caCert: s.caCert !== '',
    boundIssuer: s.boundIssuer,
    boundAudiences: s.boundAudiences,
    boundClaims: JSON.stringify(s.boundClaims),
    boundSubject: s.boundSubject,
    accessTokenTTL: s.accessTokenTtl,
    accessTokenMaxTTL: s.accessTokenMaxTtl,
    accessTokenNumUsesLimit: s.accessTokenNumUsesLimit,
    accessTokenTrustedIps: ipTexts(s.accessTokenTrustedIps),
  };
}

export function jwtAuthDomain(deps: JwtAuthDeps) {
  const { store, changes, keys, machineAuth } = deps;
  const now = deps.now ?? Date.now;
  const notConfigured = (method: TokenAuthMethod, identityId: string) =>
    new AppError('NOT_FOUND', `${NAMES[method].label} is not configured for identity '${identityId}'`);

  async function configOf(s: JwtAuthDeps['store'], method: TokenAuthMethod, identityId: string, forUpdate = false): Promise<JwtAuthRow> {
    const identity = await existingIdentity(s, identityId);
    const row = await s.jwtAuths.get(identity.id, method, { forUpdate });
    if (!row) throw notConfigured(method, identityId);
    return row;
  }

  return {
    async attach(actor: Actor | SystemActor, method: TokenAuthMethod, identityId: string, input: JwtAuthInput, origin?: Origin): Promise<JwtAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      const base = { ...DEFAULT_SETTINGS, configurationType: method === 'jwt-auth' ? 'static' : null } satisfies JwtAuthSettings;
      // Infisical's default max TTL follows a longer TTL, as Universal Auth here.
      const withMax = input.accessTokenMaxTtl === undefined && input.accessTokenTtl !== undefined
        ? { ...input, accessTokenMaxTtl: Math.max(DEFAULT_SETTINGS.accessTokenMaxTtl, input.accessTokenTtl) }
        : input;
      const settings = merge(base, withMax);
      checkSettings(method, settings);
      return grant.run(async ({ s, audit }) => {
        const identity = await existingIdentity(s, identityId);
        if (await s.jwtAuths.get(identity.id, method)) throw new AppError('BAD_REQUEST', `${NAMES[method].label} is already configured for this identity`);
        const row = await s.jwtAuths.insert(identity.id, method, settings);
        await audit({ eventType: `add-identity-${NAMES[method].event}`, metadata: settingsMetadata(identity.id, row) });
        return row;
      });
    },

    /** Changes the given fields, keeps the others; trusted IPs and TTLs apply to live tokens at once, on every replica. */
    async update(actor: Actor | SystemActor, method: TokenAuthMethod, identityId: string, input: JwtAuthInput, origin?: Origin): Promise<JwtAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      return grant.run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, method, identityId, true);
        const next = merge(cur, input);
        checkSettings(method, next);
        const row = (await s.jwtAuths.update(cur.identityId, method, next))!;
        await audit({ eventType: `update-identity-${NAMES[method].event}`, metadata: settingsMetadata(cur.identityId, row) });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    async get(actor: Actor | SystemActor, method: TokenAuthMethod, identityId: string): Promise<JwtAuthRow> {
      requireOrgAdmin(actor);
      return configOf(store, method, identityId);
    },

    /** Removes the method; every access token it issued stops working at once, on every replica. */
    async revoke(actor: Actor | SystemActor, method: TokenAuthMethod, identityId: string, origin?: Origin): Promise<JwtAuthRow> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, method, identityId, true);
        const row = (await s.jwtAuths.remove(cur.identityId, method))!;
        await audit({ eventType: `revoke-identity-${NAMES[method].event}`, metadata: { identityId: cur.identityId } });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    /**
     * Infisical's order: no such configuration (404), the token's signature and times
     * (401; 503 when the key source cannot be read), then its bindings.
     */
    async login(method: TokenAuthMethod, input: { identityId: string; jwt: string; ip?: string | null }): Promise<LoginResult> {
      const identityId = input.identityId.toLowerCase();
      const cfg = isUuid(identityId) ? await store.jwtAuths.get(identityId, method) : undefined;
      if (!cfg) throw new AppError('NOT_FOUND', `${NAMES[method].label} method not found for identity, did you configure ${NAMES[method].label}?`);
      // A configuration stored before bindings were required: refused before any key is fetched.
      const missing = missingBindings(method, cfg);
      if (missing.length > 0) {
        throw new AppError('FORBIDDEN', `Access denied: ${bindingsMessage(method, missing)}. A superadmin must PATCH the configuration to bind them.`);
      }
      let payload: JWTPayload;
      let providerIssuer: string | undefined;
      if (method === 'oidc-auth') ({ payload, issuer: providerIssuer } = await keys.verifyOidc(input.jwt, cfg.oidcDiscoveryUrl, cfg.caCert));
      else if (cfg.configurationType === 'jwks') payload = await keys.verifyJwks(input.jwt, cfg.jwksUrl, cfg.caCert);
      else payload = await keys.verifyStatic(input.jwt, cfg.publicKeys);
      checkBindings(payload, cfg, providerIssuer);

      const issuedAt = now();
      const { tokenId, secret, secretHash } = newAccessToken();
      const row = await changes.byCaller({ actorType: 'identity', actorId: identityId }, { ip: input.ip }).run(async ({ s, audit }) => {
        // As the configuration is now: removed or changed meanwhile, the token follows it.
        const cur = await s.jwtAuths.get(identityId, method);
        if (!cur) throw new AppError('UNAUTHORIZED', 'Access denied: the auth method was removed');
        await s.identities.insertAccessToken({
          id: tokenId,
          secretHash,
          identityId,
          clientSecretId: null,
          authMethod: method,
          expiresAt: new Date(issuedAt + cur.accessTokenTtl * 1000),
          maxExpiresAt: new Date(issuedAt + cur.accessTokenMaxTtl * 1000),
          numUsesLimit: cur.accessTokenNumUsesLimit,
        });
        // The token's subject names the workload (never the token itself).
        await audit({
          eventType: `login-identity-${NAMES[method].event}`,
          metadata: { identityId, accessTokenId: tokenId, subject: typeof payload.sub === 'string' ? payload.sub.slice(0, 256) : null },
        });
        return cur;
      });
      return machineAuth.issue(methodToken(identityId, { tokenId, secret }, issuedAt, row, method));
    },
  };
}
export type JwtAuthDomain = ReturnType<typeof jwtAuthDomain>;

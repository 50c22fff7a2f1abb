// A real token issuer for the JWT / OIDC auth tests: a node:http server on a free port
// serving an OIDC discovery document and a JWKS at Kubernetes' paths
// (/.well-known/openid-configuration, /openid/v1/jwks), with keys made by jose. It can
// rotate its key, hang (accept and never answer) or stop (connection refused). With
// `tls` it serves https; its discovery document may name another jwks_uri (`jwksUri`).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface IssuerKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  spki: string;
}

export async function makeKey(kid: string, alg = 'RS256'): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk, spki: await exportSPKI(publicKey) };
}

export type IssuerMode = 'up' | 'hang' | 'error';

export interface Issuer {
  url: string;
  jwksUrl: string;
  keys: IssuerKey[];
  hits: { jwks: number; discovery: number };
  mode: IssuerMode;
  /** What the discovery document names as jwks_uri when set (this server's JWKS otherwise). */
  jwksUri?: string;
  /** Replaces the served keys with a new one (the old key is gone from the JWKS). */
  rotate(kid: string): Promise<IssuerKey>;
  /** A token signed with the first served key (or `key`); claims default to a Kubernetes service account's. */
  sign(claims?: JWTPayload, opts?: { key?: IssuerKey; exp?: number | string; nbf?: number; kid?: string | null }): Promise<string>;
  /** Closes the server: connections are refused from now on. */
  stop(): Promise<void>;
}

/** What a Kubernetes service-account token (projected, audience set) carries. */
export const k8sClaims = (issuer: string): JWTPayload => ({
  iss: issuer,
  sub: 'system:serviceaccount:external-secrets:external-secrets',
  aud: ['https://vault.example.test'],
  'kubernetes.io': { namespace: 'external-secrets', serviceaccount: { name: 'external-secrets', uid: '3f1e9a77-0000-4000-8000-000000000001' } },
});

export async function startIssuer(
  t: { teardown(fn: () => unknown): void },
  opts: { issuerOverride?: string; tls?: { key: string; cert: string } } = {},
): Promise<Issuer> {
  const send = (res: ServerResponse, body: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const issuer: Issuer = {
    url: '',
    jwksUrl: '',
    keys: [await makeKey('k1')],
    hits: { jwks: 0, discovery: 0 },
    mode: 'up',
    async rotate(kid) {
      const key = await makeKey(kid);
      issuer.keys = [key];
      return key;
    },
    async sign(claims = k8sClaims(issuer.url), o = {}) {
      const key = o.key ?? issuer.keys[0]!;
      const kid = o.kid === undefined ? key.kid : o.kid;
      const jwt = new SignJWT(claims).setProtectedHeader(kid === null ? { alg: key.alg } : { alg: key.alg, kid }).setIssuedAt().setExpirationTime(o.exp ?? '10m');
      if (o.nbf !== undefined) jwt.setNotBefore(o.nbf);
      return jwt.sign(key.privateKey);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (issuer.mode === 'hang') return; // accepted, never answered
    if (issuer.mode === 'error') {
      res.writeHead(500).end('down for maintenance');
      return;
    }
    if (req.url === '/.well-known/openid-configuration') {
      issuer.hits.discovery++;
      send(res, { issuer: opts.issuerOverride ?? issuer.url, jwks_uri: issuer.jwksUri ?? issuer.jwksUrl, id_token_signing_alg_values_supported: ['RS256'] });
    } else if (req.url === '/openid/v1/jwks') {
      issuer.hits.jwks++;
      send(res, { keys: issuer.keys.map((k) => k.publicJwk) });
    } else res.writeHead(404).end();
  };
  const server = opts.tls ? createTlsServer(opts.tls, handler) : createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer.url = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  issuer.jwksUrl = `${issuer.url}/openid/v1/jwks`;
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return issuer;
}

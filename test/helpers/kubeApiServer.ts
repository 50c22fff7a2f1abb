// A fake Kubernetes API server for the Kubernetes Auth tests: node:https on a free port,
// with a CA and a server certificate made here by openssl (SAN IP:127.0.0.1 and
// DNS:localhost), serving POST /apis/authentication.k8s.io/v1/tokenreviews the way
// kube-apiserver does (k8s.io/kubernetes pkg/registry/authentication/tokenreview):
//   - the caller authenticates with its bearer token: 401 (a Status) without a known one;
//     403 (a Status) when that identity may not create TokenReviews (no system:auth-delegator);
//   - a body that is not a TokenReview is a 400;
//   - otherwise 201 with the TokenReview echoed and `status`: {authenticated: true, user:
//     {username, uid, groups}, audiences} for a known token whose audiences meet
//     spec.audiences (the intersection; the token's own when none asked), else {user: {},
//     error: "..."} with `authenticated` left out, as the API server leaves out a false.
// It can hang (accept and never answer), fail (500) or stop (connection refused).
// What it does not do (tested against no real cluster): token signatures and expiry,
// bound-object (pod) checks, RBAC beyond a per-token "may review" flag.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServiceAccountToken {
  /** system:serviceaccount:<namespace>:<name>, or any other username (a user's token). */
  username: string;
  audiences: string[];
  /** May this token, as a bearer, create TokenReviews (system:auth-delegator)? */
  canReview?: boolean;
}

export type KubeMode = 'up' | 'hang' | 'error';

export interface KubeApiServer {
  /** https://127.0.0.1:<port> */
  url: string;
  port: number;
  /** PEM of the CA the server's certificate chains to. */
  ca: string;
  /** PEM of another CA (the server's certificate does not chain to it). */
  otherCa: string;
  tokens: Map<string, ServiceAccountToken>;
  mode: KubeMode;
  /** Every TokenReview request received: its bearer and body. */
  reviews: Array<{ bearer: string | undefined; body: any }>;
  stop(): Promise<void>;
}

export const saUsername = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

function makeCerts(): { ca: string; otherCa: string; key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kube-ca-'));
  try {
    const ossl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    ossl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=test-kubernetes-ca');
    ossl('req', '-x509', ...ec, '-keyout', 'other.key', '-out', 'other.crt', '-days', '2', '-subj', '/CN=some-other-ca');
    ossl('req', ...ec, '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=kube-apiserver');
    writeFileSync(join(dir, 'ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
    ossl('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'srv.crt', '-days', '2', '-extfile', 'ext');
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    return { ca: read('ca.crt'), otherCa: read('other.crt'), key: read('srv.key'), cert: read('srv.crt') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

export async function startKubeApi(t: { teardown(fn: () => unknown): void }): Promise<KubeApiServer> {
  const certs = makeCerts();
  const api: KubeApiServer = {
    url: '',
    port: 0,
    ca: certs.ca,
    otherCa: certs.otherCa,
    tokens: new Map(),
    mode: 'up',
    reviews: [],
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const send = (res: ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server: Server = createServer({ key: certs.key, cert: certs.cert }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (api.mode === 'hang') return; // accepted, never answered
      if (api.mode === 'error') return send(res, 500, status(500, 'InternalError', 'etcdserver: request timed out'));
      if (req.method !== 'POST' || req.url !== '/apis/authentication.k8s.io/v1/tokenreviews') return send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      api.reviews.push({ bearer, body });
      const caller = bearer === undefined ? undefined : api.tokens.get(bearer);
      if (!caller) return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
      if (!caller.canReview) {
        return send(res, 403, status(403, 'Forbidden', `tokenreviews.authentication.k8s.io is forbidden: User "${caller.username}" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`));
      }
      if (body?.kind !== 'TokenReview' || body?.apiVersion !== 'authentication.k8s.io/v1' || typeof body?.spec?.token !== 'string') {
        return send(res, 400, status(400, 'BadRequest', 'the body of the request was in an unknown format'));
      }
      const wanted: string[] | undefined = Array.isArray(body.spec.audiences) && body.spec.audiences.length > 0 ? body.spec.audiences : undefined;
      const reviewed = api.tokens.get(body.spec.token);
      const echo = { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec: body.spec };
      if (!reviewed) return send(res, 201, { ...echo, status: { user: {}, error: '[invalid bearer token, square/go-jose: error in cryptographic primitive]' } });
      const audiences = wanted ? reviewed.audiences.filter((a) => wanted.includes(a)) : reviewed.audiences;
      if (wanted && audiences.length === 0) {
        return send(res, 201, { ...echo, status: { user: {}, error: `[invalid bearer token, token audiences ${JSON.stringify(reviewed.audiences)} is invalid for the target audiences ${JSON.stringify(wanted)}]` } });
      }
      send(res, 201, {
        ...echo,
        status: {
          authenticated: true,
          user: { username: reviewed.username, uid: '3f1e9a77-0000-4000-8000-000000000001', groups: ['system:serviceaccounts', 'system:authenticated'] },
          audiences,
        },
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api.port = (server.address() as AddressInfo).port;
  api.url = `https://127.0.0.1:${api.port}`;
  t.teardown(() => api.stop().catch(() => {}));
  return api;
}

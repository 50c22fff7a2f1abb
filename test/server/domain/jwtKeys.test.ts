// The key sources of JWT / OIDC auth against a real local issuer (node:http, keys made by
// jose): algorithms allowed, times checked with a bounded skew, a JWKS reloaded for a new
// key id at most once per cooldown, an issuer that hangs or is down answered with
// 503 within the fetch deadline, and the fetch rules (server/domain/fetchGuard.ts) held
// on real connections.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, base64url } from 'jose';
import t from 'tap';
import { AppError } from '../../../server/errors.js';
import { ALLOWED_ALGORITHMS, CLOCK_SKEW_SECONDS, keySources } from '../../../server/domain/jwtKeys.js';
import { makeKey, startIssuer } from '../../helpers/issuer.js';

async function refusal(p: Promise<unknown>): Promise<{ status: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal, got an answer');
}

t.test('static keys: the signing key verifies, any other key or algorithm is refused', async (t) => {
  const issuer = await startIssuer(t);
  const keys = keySources();
  const good = issuer.keys[0]!;
  const other = await makeKey('other');
  const jwt = await issuer.sign();
  t.match(await keys.verifyStatic(jwt, [good.spki]), { sub: 'system:serviceaccount:external-secrets:external-secrets' });
  t.match(await keys.verifyStatic(jwt, [other.spki, good.spki]), { iss: issuer.url }, 'the second key of a list verifies');
  t.match(await refusal(keys.verifyStatic(jwt, [other.spki])), { status: 'UNAUTHORIZED', message: /invalid signature/ });

  const es = await makeKey('es', 'ES256');
  const ed = await makeKey('ed', 'EdDSA');
  t.ok(await keys.verifyStatic(await issuer.sign(undefined, { key: es }), [es.spki]), 'ES256');
  t.ok(await keys.verifyStatic(await issuer.sign(undefined, { key: ed }), [ed.spki]), 'EdDSA');
  t.same(ALLOWED_ALGORITHMS.filter((a) => a.startsWith('HS') || a === 'none'), [], 'no HMAC, no none');

  await t.test("alg 'none'", async (t) => {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
    const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(payload))}.`;
    t.match(await refusal(keys.verifyStatic(unsigned, [good.spki])), { status: 'UNAUTHORIZED', message: /allowed algorithm/ });
  });

  await t.test('HS256 keyed with the public key (the algorithm-confusion attack)', async (t) => {
    const forged = await new SignJWT({ sub: 'system:serviceaccount:kube-system:admin', iss: issuer.url })
      .setProtectedHeader({ alg: 'HS256', kid: good.kid })
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(good.spki));
    t.match(await refusal(keys.verifyStatic(forged, [good.spki])), { status: 'UNAUTHORIZED', message: /allowed algorithm/ });
    t.match(await refusal(keys.verifyJwks(forged, issuer.jwksUrl, '')), { status: 'UNAUTHORIZED', message: /allowed algorithm/ });
    t.equal(issuer.hits.jwks, 0, 'refused before any key was fetched');
  });

  await t.test('times: expired, not yet valid, no expiry; skew bounded', async (t) => {
    const now = Math.floor(Date.now() / 1000);
    t.match(await refusal(keys.verifyStatic(await issuer.sign(undefined, { exp: now - CLOCK_SKEW_SECONDS - 5 }), [good.spki])), { message: /jwt expired/ });
    t.ok(await keys.verifyStatic(await issuer.sign(undefined, { exp: now - 5 }), [good.spki]), 'expired 5 s ago is within the skew');
    t.match(await refusal(keys.verifyStatic(await issuer.sign(undefined, { nbf: now + CLOCK_SKEW_SECONDS + 60 }), [good.spki])), { message: /not active/ });
    const noExp = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'RS256' }).sign(good.privateKey);
    t.match(await refusal(keys.verifyStatic(noExp, [good.spki])), { status: 'UNAUTHORIZED', message: /exp/ }, 'a token that never expires is refused');
    // Expired under the right key: the other keys of the list are not tried (same answer).
    t.match(await refusal(keys.verifyStatic(await issuer.sign(undefined, { exp: now - 600 }), [good.spki, other.spki])), { message: /jwt expired/ });
  });

  await t.test('garbage', async (t) => {
    for (const bad of ['', 'a.b.c', 'not a jwt', `${jwt}x`, jwt.split('.').slice(0, 2).join('.')]) {
      t.equal((await refusal(keys.verifyStatic(bad, [good.spki]))).status, 'UNAUTHORIZED', JSON.stringify(bad.slice(0, 20)));
    }
  });
});

t.test('JWKS: cached, a rotated key picked up on the next reload, reloads bounded by the cooldown', async (t) => {
  const issuer = await startIssuer(t);
  const eager = keySources({ cooldownMs: 0 });
  t.ok(await eager.verifyJwks(await issuer.sign(), issuer.jwksUrl, ''));
  t.ok(await eager.verifyJwks(await issuer.sign(), issuer.jwksUrl, ''));
  t.equal(issuer.hits.jwks, 1, 'one fetch for two logins');

  const k2 = await issuer.rotate('k2');
  t.ok(await eager.verifyJwks(await issuer.sign(undefined, { key: k2 }), issuer.jwksUrl, ''), 'a token of the new key verifies');
  t.equal(issuer.hits.jwks, 2, 'after one reload');
  t.match(await refusal(eager.verifyJwks(await issuer.sign(undefined, { key: await makeKey('k1') }), issuer.jwksUrl, '')), {
    status: 'UNAUTHORIZED',
    message: /no key of the issuer matches/,
  });

  // With a cooldown, a flood of unknown key ids costs no fetch until the cooldown ends.
  const guarded = keySources({ cooldownMs: 60_000 });
  t.ok(await guarded.verifyJwks(await issuer.sign(), issuer.jwksUrl, ''));
  const before = issuer.hits.jwks;
  const stranger = await makeKey('made-up');
  for (let i = 0; i < 20; i++) {
    t.equal((await refusal(guarded.verifyJwks(await issuer.sign(undefined, { key: stranger }), issuer.jwksUrl, ''))).status, 'UNAUTHORIZED');
  }
  t.equal(issuer.hits.jwks, before, 'no fetch for unknown key ids within the cooldown');
});

t.test('an issuer that hangs, errs or is down: 503 within the deadline, never a verdict on the token', async (t) => {
  const issuer = await startIssuer(t);
  const keys = keySources({ timeoutMs: 300, cooldownMs: 0 });
  const jwt = await issuer.sign();

  issuer.mode = 'hang';
  const started = Date.now();
  const hung = await refusal(keys.verifyJwks(jwt, issuer.jwksUrl, ''));
  const took = Date.now() - started;
  t.match(hung, { status: 'UNAVAILABLE', message: /JWKS could not be read/ });
  t.ok(took >= 250 && took < 2000, `answered after the 300 ms deadline, not later (${took} ms)`);

  issuer.mode = 'error';
  t.match(await refusal(keys.verifyJwks(jwt, issuer.jwksUrl, '')), { status: 'UNAVAILABLE' }, 'a 500 from the JWKS server');
  t.match(await refusal(keys.verifyOidc(jwt, issuer.url, '')), { status: 'UNAVAILABLE', message: /discovery document/ });

  issuer.mode = 'up';
  t.ok(await keys.verifyJwks(jwt, issuer.jwksUrl, ''), 'verifies once the server is back');
  await issuer.stop();
  const fresh = keySources({ timeoutMs: 300 });
  t.match(await refusal(fresh.verifyJwks(jwt, issuer.jwksUrl, '')), { status: 'UNAVAILABLE' }, 'connection refused');
  t.ok(await keys.verifyJwks(jwt, issuer.jwksUrl, ''), 'a JWKS fetched before the outage still verifies (cache, bounded by its max age)');
});

t.test('OIDC: discovery cached; a failed discovery is not retried within the cooldown', async (t) => {
  const issuer = await startIssuer(t);
  const keys = keySources({ cooldownMs: 60_000, timeoutMs: 300 });
  const jwt = await issuer.sign();
  const { payload, issuer: named } = await keys.verifyOidc(jwt, issuer.url, '');
  t.equal(named, issuer.url);
  t.equal(payload.iss, issuer.url);
  await keys.verifyOidc(jwt, `${issuer.url}/`, '');
  t.equal(issuer.hits.discovery, 2, 'one fetch per distinct URL form');
  await keys.verifyOidc(jwt, issuer.url, '');
  t.equal(issuer.hits.discovery, 2, 'cached');

  const other = await startIssuer(t);
  other.mode = 'error';
  const otherJwt = await other.sign();
  t.equal((await refusal(keys.verifyOidc(otherJwt, other.url, ''))).status, 'UNAVAILABLE');
  other.mode = 'up';
  t.equal((await refusal(keys.verifyOidc(otherJwt, other.url, ''))).status, 'UNAVAILABLE', 'still refused within the cooldown');
  t.equal(other.hits.discovery, 0, 'without another fetch');
});

type Line = Record<string, unknown>;

t.test("fetch rules: a discovery document's jwks_uri keeps its origin; a refusal is a 503 and one log line", async (t) => {
  const a = await startIssuer(t);
  const b = await startIssuer(t);
  const lines: Line[] = [];
  const keys = keySources({ cooldownMs: 0, timeoutMs: 1000, log: (f) => lines.push(f) });
  const jwt = await a.sign();
  const portA = new URL(a.url).port;
  const steered = [
    b.jwksUrl, // another port of the same address: another origin
    b.jwksUrl.replace('127.0.0.1', '0x7f000001'),
    b.jwksUrl.replace('127.0.0.1', '2130706433'),
    `http://[::1]:${portA}/openid/v1/jwks`,
    `http://localhost:${portA}/openid/v1/jwks`,
    'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'http://[::ffff:169.254.169.254]/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
  ];
  for (const uri of steered) {
    a.jwksUri = uri;
    t.match(await refusal(keys.verifyOidc(jwt, a.url, '')), { status: 'UNAVAILABLE', message: /OIDC discovery document could not be read/ }, uri);
    t.match(lines.at(-1), { event: 'jwt-key-source-refused', source: 'OIDC discovery document', reason: /^jwks_uri .* is not the discovery document's origin/ }, uri);
  }
  t.equal(lines.length, steered.length, 'one line per refused fetch');
  t.notMatch(JSON.stringify(lines), /eyJ/, 'no token in the log');
  t.equal(a.hits.jwks + b.hits.jwks, 0, 'no key fetch reached either server');

  a.jwksUri = undefined;
  t.ok(await keys.verifyOidc(jwt, a.url, ''), "the document's own origin is fetched");

  // An origin the operator listed is fetched.
  const listed = keySources({ jwksAllowedOrigins: [new URL(b.url).origin] });
  b.keys = a.keys;
  a.jwksUri = b.jwksUrl;
  t.ok(await listed.verifyOidc(jwt, a.url, ''), 'a listed origin');
  t.equal(b.hits.jwks, 1);
});

t.test('fetch rules: every fetch refuses metadata literals; names are checked on what they resolve to, at connect time', async (t) => {
  const issuer = await startIssuer(t);
  const port = new URL(issuer.url).port;
  const jwt = await issuer.sign();
  const lines: Line[] = [];
  let answer = '127.0.0.1';
  const resolve = async (name: string) => {
    if (name !== 'localhost' && name !== 'issuer.example.test') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return [{ address: answer, family: 4 }];
  };
  const keys = keySources({ resolve, cooldownMs: 0, timeoutMs: 1000, log: (f) => lines.push(f) });

  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://0xa9fea9fe/jwks', 'http://[fd00:ec2::254]/jwks', 'http://100.100.100.200/jwks', 'http://metadata.google.internal/jwks']) {
    t.match(await refusal(keys.verifyJwks(jwt, url, '')), { status: 'UNAVAILABLE', message: /JWKS could not be read/ }, url);
    t.match(lines.at(-1), { event: 'jwt-key-source-refused', source: 'JWKS', reason: /link-local|metadata/ }, url);
  }
  t.match(await refusal(keys.verifyOidc(jwt, 'http://[fe80::1]', '')), { status: 'UNAVAILABLE', message: /discovery document/ }, 'a discovery URL too');
  t.match(lines.at(-1), { source: 'OIDC discovery document', reason: /fe80::1 is a link-local address/ });

  t.ok(await keys.verifyJwks(jwt, `http://localhost:${port}/openid/v1/jwks`, ''), 'localhost names loopback: fetched');
  t.equal(issuer.hits.jwks, 1);
  t.match(await refusal(keys.verifyJwks(jwt, `http://issuer.example.test:${port}/openid/v1/jwks`, '')), { status: 'UNAVAILABLE' });
  t.match(lines.at(-1), { reason: /issuer\.example\.test resolves to a loopback address/ }, 'a name that only resolves to loopback is not');
  // The name now answers a metadata address (DNS rebinding): the connection checks the new answer.
  answer = '169.254.169.254';
  t.match(await refusal(keys.verifyJwks(jwt, `http://localhost:${port}/openid/v1/jwks?v=2`, '')), { status: 'UNAVAILABLE' });
  t.match(lines.at(-1), { url: `http://localhost:${port}/openid/v1/jwks`, reason: /localhost resolves to 169\.254\.169\.254: 169\.254\.169\.254 is a link-local address/ }, 'the log names the origin and path, not the query');
  t.equal(issuer.hits.jwks, 1, 'no refused fetch reached the server');
});

t.test('fetch rules: an https discovery document cannot send the key fetch to http', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  const tls = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  const issuer = await startIssuer(t, { tls });
  const plain = await startIssuer(t);
  plain.keys = issuer.keys;
  const lines: Line[] = [];
  const keys = keySources({ cooldownMs: 0, timeoutMs: 1000, jwksAllowedOrigins: [new URL(plain.url).origin], log: (f) => lines.push(f) });
  const jwt = await issuer.sign();
  for (const uri of [issuer.jwksUrl.replace('https:', 'http:'), plain.jwksUrl]) {
    issuer.jwksUri = uri;
    t.match(await refusal(keys.verifyOidc(jwt, issuer.url, tls.cert)), { status: 'UNAVAILABLE' }, uri);
    t.match(lines.at(-1), { reason: /downgrades the discovery document's https to http/ }, `${uri}: refused even when listed`);
  }
  t.equal(plain.hits.jwks + issuer.hits.jwks, 0);
  issuer.jwksUri = undefined;
  t.match(await keys.verifyOidc(jwt, issuer.url, tls.cert), { issuer: issuer.url }, 'https under https verifies (with the CA)');
  t.equal(issuer.hits.jwks, 1);
});

// The rules of the issuer-key fetches (server/domain/fetchGuard.ts), without a network:
// every spelling of a metadata or link-local address refused, loopback only when the URL
// names it, each resolved address checked, a discovery document's jwks_uri held to the
// document's origin (or the operator's list) and never downgraded to http.
import t from 'tap';
import type { LookupAddress } from 'node:dns';
import { classifyAddress, FetchRefused, guardedLookup, hostRefusal, jwksUriRefusal, parseOriginList } from '../../../server/domain/fetchGuard.js';

t.test('addresses: metadata, link-local, unspecified and non-unicast refused in every form; loopback apart; the rest allowed', async (t) => {
  const refused = [
    '169.254.169.254', '169.254.0.1', '169.254.170.2', '100.100.100.200', '168.63.129.16', '192.0.0.192', '0.0.0.0', '0.1.2.3',
    '224.0.0.1', '255.255.255.255', '240.0.0.1',
    'fe80::1', 'FE80::abcd:1', 'febf::1', 'fec0::1', 'fd00:ec2::254', '::', 'ff02::1',
    // IPv4 inside IPv6: mapped (both spellings), compatible, SIIT, NAT64, 6to4.
    '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '::169.254.169.254', '::ffff:0:169.254.169.254', '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe', '2002:a9fe:a9fe::1', '::ffff:100.100.100.200', '::ffff:0.0.0.0',
  ];
  for (const a of refused) t.equal(classifyAddress(a).kind, 'refused', a);
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::7f00:1']) t.equal(classifyAddress(a).kind, 'loopback', a);
  for (const a of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', '8.8.8.8', '2606:4700::1111', 'fc00::1', 'fd12:3456::1', '2002:0808:0808::1']) {
    t.equal(classifyAddress(a).kind, 'ok', a);
  }
  t.equal(classifyAddress('not-an-address').kind, 'refused');
  t.match(classifyAddress('::ffff:a9fe:a9fe'), { why: /IPv4 169\.254\.169\.254.*link-local/ }, 'the refusal names the IPv4 address it carries');
});

t.test('URLs: every spelling of a metadata address, and metadata names, refused before any connection', async (t) => {
  const refused = [
    'http://169.254.169.254/latest/meta-data/',
    'http://0xa9fea9fe/', // hex
    'http://2852039166/', // one decimal number
    'http://0251.0376.0251.0376/', // octal
    'http://169.254.43518/', // a.b.c
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[fd00:ec2::254]/latest/meta-data/',
    'http://[fe80::1]/',
    'http://100.100.100.200/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://METADATA.GOOGLE.INTERNAL./',
    'http://metadata/',
    'https://0.0.0.0:8443/',
  ];
  for (const u of refused) t.type(hostRefusal(new URL(u)), 'string', u);
  // Loopback literals are the operator's own choice (a local issuer): allowed when the URL names them.
  for (const u of ['http://127.0.0.1:8080/', 'http://0x7f000001/', 'http://2130706433/', 'http://[::1]/', 'http://localhost/', 'https://issuer.example.test/', 'https://10.96.0.1/']) {
    t.equal(hostRefusal(new URL(u)), undefined, u);
  }
});

t.test("a discovery document's jwks_uri: its own origin, or a listed one; never https to http", async (t) => {
  const discovery = new URL('https://issuer.example.test/.well-known/openid-configuration');
  t.equal(jwksUriRefusal(discovery, new URL('https://issuer.example.test/keys')), undefined, 'same origin');
  t.equal(jwksUriRefusal(discovery, new URL('https://ISSUER.example.test:443/a/b/jwks')), undefined, 'same origin, other spelling');
  const elsewhere = [
    'http://issuer.example.test/keys', // downgrade
    'https://issuer.example.test:8443/keys', // another port
    'https://keys.example.test/keys', // another host
    'http://169.254.169.254/latest/meta-data/iam/',
    'https://[::1]/jwks',
    'https://0x7f000001/jwks',
    'https://2130706433/jwks',
    'https://127.0.0.1/jwks',
    'https://[::ffff:169.254.169.254]/jwks',
    'https://localhost/jwks',
  ];
  for (const u of elsewhere) t.type(jwksUriRefusal(discovery, new URL(u)), 'string', u);
  t.match(jwksUriRefusal(discovery, new URL('http://issuer.example.test/keys')), /downgrades/);
  t.match(jwksUriRefusal(discovery, new URL('https://keys.example.test/keys')), /not the discovery document's origin/);

  const allowed = ['https://keys.example.test', 'http://plain.example.test:8080'];
  t.equal(jwksUriRefusal(discovery, new URL('https://keys.example.test/certs'), allowed), undefined, 'a listed origin');
  t.type(jwksUriRefusal(discovery, new URL('https://keys.example.test:8443/certs'), allowed), 'string', 'a listed host on another port is another origin');
  t.match(jwksUriRefusal(discovery, new URL('http://plain.example.test:8080/certs'), allowed), /downgrades/, 'never https to http, listed or not');
  const plain = new URL('http://issuer.example.test/.well-known/openid-configuration');
  t.equal(jwksUriRefusal(plain, new URL('http://plain.example.test:8080/certs'), allowed), undefined, 'http under http, listed');
  t.equal(jwksUriRefusal(plain, new URL('https://issuer.example.test/certs')), 'jwks_uri https://issuer.example.test is not the discovery document\'s origin (http://issuer.example.test) nor one listed in OIDC_JWKS_ALLOWED_ORIGINS');
});

t.test('OIDC_JWKS_ALLOWED_ORIGINS: origins only; metadata hosts refused', async (t) => {
  t.same(parseOriginList('https://keys.example.test, https://10.0.0.1:6443  http://x.example.test:8080/'), {
    origins: ['https://keys.example.test', 'https://10.0.0.1:6443', 'http://x.example.test:8080'],
  });
  t.same(parseOriginList(''), { origins: [] });
  for (const bad of ['keys.example.test', 'ftp://keys.example.test', 'https://keys.example.test/certs', 'https://u:p@keys.example.test', 'https://k.example.test?x=1', 'http://169.254.169.254', 'http://[fd00:ec2::254]']) {
    t.ok('error' in parseOriginList(bad), bad);
  }
});

t.test('resolved addresses: each answer checked at lookup; loopback only for a name that says so', async (t) => {
  const dns: Record<string, LookupAddress[]> = {
    'rebind.example.test': [{ address: '169.254.169.254', family: 4 }],
    'mixed.example.test': [{ address: '93.184.216.34', family: 4 }, { address: 'fd00:ec2::254', family: 6 }],
    'mapped.example.test': [{ address: '::ffff:169.254.169.254', family: 6 }],
    'loop.example.test': [{ address: '127.0.0.1', family: 4 }],
    localhost: [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }],
    'issuer.example.test': [{ address: '10.1.2.3', family: 4 }, { address: 'fd12::3', family: 6 }],
  };
  const resolve = async (name: string) => {
    const a = dns[name];
    if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return a;
  };
  const look = (host: string, options: { family?: number; all?: boolean } = {}) =>
    new Promise<{ err: Error | null; address: unknown; family?: number }>((done) =>
      guardedLookup(new URL(`https://${host}/`), resolve)(host, options, (err, address, family) => done({ err, address, family })),
    );
  for (const host of ['rebind.example.test', 'mixed.example.test', 'mapped.example.test', 'loop.example.test']) {
    const r = await look(host, { all: true });
    t.ok(r.err instanceof FetchRefused, `${host}: ${r.err?.message}`);
  }
  t.match((await look('rebind.example.test')).err?.message, /rebind\.example\.test resolves to 169\.254\.169\.254: 169\.254\.169\.254 is a link-local address/);
  t.match((await look('loop.example.test')).err?.message, /loopback/);
  t.same(await look('localhost', { all: true }), { err: null, address: dns.localhost, family: undefined }, 'localhost names loopback itself');
  t.same(await look('issuer.example.test'), { err: null, address: '10.1.2.3', family: 4 }, 'a private address (an in-cluster issuer) is allowed');
  t.same(await look('issuer.example.test', { family: 6 }), { err: null, address: 'fd12::3', family: 6 }, 'the family asked for');
  t.match((await look('unknown.example.test')).err, { code: 'ENOTFOUND' });
  t.notOk((await look('unknown.example.test')).err instanceof FetchRefused, 'an unknown name is a failure, not a refusal');
});

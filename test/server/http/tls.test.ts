// The HTTP front over TLS: a verifying client reaches it, a client with another CA and a
// TLS 1.0/1.1 client are refused, TLS 1.2 gets an ECDHE-AEAD suite, and reloadTls() makes
// new connections see the new certificate while the port stays the same.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import t from 'tap';
import { createHttpServer } from '../../../server/http/app.js';
import { checkTlsPair, readTlsPair, TlsPairError, withPrivateCopy } from '../../../server/http/tls.js';
import { httpsRequest } from '../../helpers/https.js';
import { issueServerCertificate, makeCertificates } from '../../helpers/tls.js';

function handshake(port: number, opts: { ca: Buffer; minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2'; maxVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'; ciphers?: string }) {
  return new Promise<{ protocol: string | null; cipher: string }>((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca: opts.ca, minVersion: opts.minVersion, maxVersion: opts.maxVersion, ciphers: opts.ciphers }, () => {
      const r = { protocol: s.getProtocol(), cipher: s.getCipher().name };
      s.end();
      resolve(r);
    });
    s.on('error', reject);
  });
}

t.test('a verifying client reaches the front over TLS; other CAs and old protocols are refused; reload swaps the certificate', async (t) => {
  const certs = await makeCertificates(t);
  const first = await issueServerCertificate(certs, 'first', 'DNS:localhost,IP:127.0.0.1');
  const server = createHttpServer({ tls: { certFile: first.cert, keyFile: first.key } });
  server.router.get('/ok', () => ({ body: { ok: true } }));
  const port = await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close(true));
  const url = `https://127.0.0.1:${port}/ok`;
  const firstSerial = new X509Certificate(readFileSync(first.cert)).serialNumber;

  const a = await httpsRequest(url, { caFile: certs.ca });
  t.equal(a.status, 200);
  t.same(JSON.parse(a.body), { ok: true });
  t.equal(a.serial, firstSerial, 'the configured certificate');

  await t.rejects(httpsRequest(url, { caFile: certs.otherCa }), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, 'another CA cannot verify it');

  const ca = readFileSync(certs.ca);
  for (const v of ['TLSv1', 'TLSv1.1'] as const) {
    // SECLEVEL=0 lets this client offer the old protocol at all: the refusal is the server's.
    await t.rejects(handshake(port, { ca, minVersion: v, maxVersion: v, ciphers: 'DEFAULT@SECLEVEL=0' }), { code: /ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION|ERR_SSL_UNSUPPORTED_PROTOCOL/ }, `${v} refused`);
  }
  const tls12 = await handshake(port, { ca, maxVersion: 'TLSv1.2' });
  t.equal(tls12.protocol, 'TLSv1.2');
  t.match(tls12.cipher, /^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/, 'an ECDHE AEAD suite');
  await t.rejects(handshake(port, { ca, maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA:AES256-SHA:ECDHE-RSA-AES128-SHA' }), 'CBC suites refused');
  t.equal((await handshake(port, { ca })).protocol, 'TLSv1.3');

  // Rotation: a new pair for the same names, served to clients that name the service.
  const next = await issueServerCertificate(certs, 'rotated', 'DNS:localhost,IP:127.0.0.1');
  const pair = readTlsPair({ certFile: next.cert, keyFile: next.key });
  t.not(pair.info.serial, firstSerial);
  t.same(pair.info.dnsNames, ['localhost']);
  withPrivateCopy(pair, (copy) => server.serveCertificate(pair.info.dnsNames, copy));
  const b = await httpsRequest(url, { caFile: certs.ca, servername: 'localhost' });
  t.equal(b.status, 200);
  t.equal(b.serial, pair.info.serial, 'new connections naming the service see the new certificate');
  // A second rotation replaces the first one's names.
  const third = await issueServerCertificate(certs, 'third', 'DNS:localhost');
  const pair3 = readTlsPair({ certFile: third.cert, keyFile: third.key });
  withPrivateCopy(pair3, (copy) => server.serveCertificate(pair3.info.dnsNames, copy));
  t.equal((await httpsRequest(url, { caFile: certs.ca, servername: 'localhost' })).serial, pair3.info.serial);
});

t.test('checkTlsPair names the problem in one line and never quotes the key', async (t) => {
  const certs = await makeCertificates(t);
  const other = await issueServerCertificate(certs, 'other');
  t.throws(() => checkTlsPair({ certFile: certs.cert, keyFile: other.key }), new TlsPairError(`TLS_KEY_FILE: ${other.key} is not the key of the certificate in ${certs.cert}`));
  t.throws(() => checkTlsPair({ certFile: certs.key, keyFile: certs.key }), new TlsPairError(`TLS_CERT_FILE: ${certs.key} holds no PEM certificate`));
  t.throws(() => checkTlsPair({ certFile: certs.cert, keyFile: certs.cert }), { message: /^TLS_KEY_FILE: .* holds no usable PEM private key/ });
  t.throws(() => checkTlsPair({ certFile: `${certs.dir}/missing.crt`, keyFile: certs.key }), new TlsPairError(`TLS_CERT_FILE: cannot read ${certs.dir}/missing.crt (ENOENT)`));
  t.throws(() => checkTlsPair({ certFile: certs.cert, keyFile: certs.key }, new Date(Date.now() + 10 * 86400_000)), { message: /^TLS_CERT_FILE: the certificate in .* expired on / });
  const keyText = readFileSync(other.key, 'utf8');
  try {
    checkTlsPair({ certFile: certs.cert, keyFile: other.key });
  } catch (err) {
    t.notMatch((err as Error).message, keyText.split('\n')[1]!, 'no key material in the message');
    t.notMatch((err as Error).message, /\n/, 'one line');
  }
});

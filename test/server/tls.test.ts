// The service over TLS (TLS_CERT_FILE / TLS_KEY_FILE): an ESO-style read (Universal Auth
// login, then GET /api/v3/secrets/raw) over verified TLS with the CA, the certificate
// reloaded when the files change, and bad settings refused at start with one line.
import { copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startService } from '../../server/app.js';
import { ConfigError, parseConfig } from '../../server/config.js';
import { checkTlsPair } from '../../server/http/tls.js';
import type { Logger } from '../../server/services.js';
import { ESO_LIST_QUERY } from '../helpers/http.js';
import { httpsRequest } from '../helpers/https.js';
import { runMain } from '../helpers/process.js';
import { INVENTORY, seedHomelab, testEnv } from '../helpers/service.js';
import { issueServerCertificate, makeCertificates } from '../helpers/tls.js';

t.test('an ESO-style client reads over verified TLS; a rotated pair is served after the files change', async (t) => {
  const certs = await makeCertificates(t);
  const first = await issueServerCertificate(certs, 'first', 'DNS:localhost,IP:127.0.0.1');
  // The mounted files, as a Secret volume presents them.
  const mounted = { cert: join(certs.dir, 'tls.crt'), key: join(certs.dir, 'tls.key') };
  copyFileSync(first.cert, mounted.cert);
  copyFileSync(first.key, mounted.key);
  const waiting: Array<{ event: string; resolve: (o: Record<string, unknown>) => void }> = [];
  const seen = (obj: Record<string, unknown>) => {
    for (const w of [...waiting]) {
      if (obj.event !== w.event) continue;
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(obj);
    }
  };
  const log: Logger = { info: (o: Record<string, unknown>) => seen(o), warn: (o: Record<string, unknown>) => seen(o), error: (o: unknown) => console.error(o) } as unknown as Logger;
  const next = (event: string) => new Promise<Record<string, unknown>>((resolve) => waiting.push({ event, resolve }));
  const env = await testEnv(t, 'postgres+redis', { TLS_CERT_FILE: mounted.cert, TLS_KEY_FILE: mounted.key });
  const svc = await startService(parseConfig(env), log);
  t.teardown(() => svc.close());
  const base = `https://127.0.0.1:${svc.port}`;
  const seeded = await seedHomelab(svc.services);

  const login = await httpsRequest(`${base}/api/v1/auth/universal-auth/login`, {
    caFile: certs.ca,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: seeded.clientId, clientSecret: seeded.clientSecret }),
  });
  t.equal(login.status, 200, 'login over TLS');
  const token = (JSON.parse(login.body) as { accessToken: string }).accessToken;
  const list = await httpsRequest(`${base}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { caFile: certs.ca, headers: { authorization: `Bearer ${token}` } });
  t.equal(list.status, 200);
  const secrets = (JSON.parse(list.body) as { secrets: Array<{ secretKey: string; secretValue: string }> }).secrets;
  t.same(Object.fromEntries(secrets.map((s) => [s.secretKey, s.secretValue])), INVENTORY, 'the secrets, over verified TLS');
  t.equal(list.serial, checkTlsPair({ certFile: first.cert, keyFile: first.key }).serial);
  await t.rejects(httpsRequest(`${base}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { caFile: certs.otherCa }), 'a client trusting another CA is refused');

  // Rotation as a Secret volume does it: each file replaced whole (rename).
  const rotated = await issueServerCertificate(certs, 'rotated', 'DNS:localhost,IP:127.0.0.1');
  const rotatedSerial = checkTlsPair({ certFile: rotated.cert, keyFile: rotated.key }).serial;
  let reloaded = next('tls_reloaded');
  copyFileSync(rotated.key, `${mounted.key}.new`);
  copyFileSync(rotated.cert, `${mounted.cert}.new`);
  renameSync(`${mounted.key}.new`, mounted.key);
  renameSync(`${mounted.cert}.new`, mounted.cert);
  for (;;) {
    // A watch event may come between the two renames: then the pair is refused (a warn
    // line) and the next event loads it.
    const o = await reloaded;
    if (o.serial === rotatedSerial) break;
    reloaded = next('tls_reloaded');
  }
  const after = await httpsRequest(`${base}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { caFile: certs.ca, servername: 'localhost', headers: { authorization: `Bearer ${token}` } });
  t.equal(after.status, 200);
  t.equal(after.serial, rotatedSerial, 'the new certificate, after the files changed');
});

t.test('TLS settings are refused at start with one line', async (t) => {
  const certs = await makeCertificates(t);
  const other = await issueServerCertificate(certs, 'other');
  const env = await testEnv(t, 'embedded');
  t.throws(() => parseConfig({ ...env, TLS_CERT_FILE: certs.cert }), new ConfigError('TLS_CERT_FILE is set but TLS_KEY_FILE is not: give both (or neither)'));
  t.throws(() => parseConfig({ ...env, TLS_KEY_FILE: certs.key }), new ConfigError('TLS_KEY_FILE is set but TLS_CERT_FILE is not: give both (or neither)'));
  t.throws(() => parseConfig({ ...env, TLS_CERT_FILE: certs.cert, TLS_KEY_FILE: other.key }), new ConfigError(`TLS_KEY_FILE: ${other.key} is not the key of the certificate in ${certs.cert}`));
  t.equal(parseConfig({ ...env, TLS_CERT_FILE: ' ', TLS_KEY_FILE: '' }).tls, undefined, 'blank is unset');

  const proc = runMain({ ...env, TLS_CERT_FILE: certs.cert, TLS_KEY_FILE: other.key });
  const r = await proc.exit;
  t.not(r.code, 0);
  t.equal(r.stderr.trim(), `TLS_KEY_FILE: ${other.key} is not the key of the certificate in ${certs.cert}`, 'one line, no stack');
});

// Conditional secret reads: an ETag on every secrets read, If-None-Match answered 304
// without opening anything, the same tag on every replica, and a new tag after any write
// the answer depends on (the folder, an imported folder, a referenced secret). The
// Kubernetes operator (go-sdk ListSecrets: If-None-Match, 304 → NotModifiedError) and the
// Infisical Agent (re-renders only when the ETag header changes, Infisical/cli
// packages/cmd/agent.go MonitorSecretChanges) depend on it. Also v4's defaults.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { INVENTORY, login, seedHomelab, startTestService, testEnv, type TestService } from '../../helpers/service.js';

const TAG = /^"[A-Za-z0-9_-]{22}"$/;

async function read(url: string, token: string, ifNoneMatch?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch;
  const res = await fetch(url, { headers });
  return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
}

/** Counts the crypto tasks a service starts (every open and render goes through these). */
function countCrypto(svc: TestService): { n: number } {
  const counter = { n: 0 };
  const crypto = svc.services.crypto as unknown as Record<string, unknown>;
  for (const name of ['openMany', 'render', 'rendered']) {
    const real = crypto[name];
    if (typeof real !== 'function') continue;
    crypto[name] = (...args: unknown[]) => {
      counter.n++;
      return (real as (...a: unknown[]) => unknown).apply(svc.services.crypto, args);
    };
  }
  return counter;
}

t.test('list and single reads: ETag, 304 without opening anything, the same tag on another replica, a new tag after a write', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startTestService(t, env);
  const seeded = await seedHomelab(A.services);
  const token = await login(A.url, seeded);
  const project = { id: seeded.projectId };
  const list = (svc: TestService) => `${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=%2F&expandSecretReferences=true&include_imports=true`;
  const one = (svc: TestService) => `${svc.url}/api/v3/secrets/raw/GATEWAY_TOKEN?environment=prod&workspaceSlug=homelab`;

  for (const [what, url] of [['list', list], ['single', one]] as const) {
    const first = await read(url(A), token);
    t.equal(first.status, 200, `${what}: 200`);
    t.match(first.etag, TAG, `${what}: a strong tag`);
    t.notMatch(first.etag, new RegExp(INVENTORY.GATEWAY_TOKEN!), `${what}: no value in the tag`);
    const onB = await read(url(B), token);
    t.equal(onB.etag, first.etag, `${what}: the same tag on another replica`);
    t.equal(onB.text, first.text, `${what}: for the same answer`);

    const crypto = countCrypto(A);
    const same = await read(url(A), token, first.etag!);
    t.equal(same.status, 304, `${what}: If-None-Match with the current tag: 304`);
    t.equal(same.text, '', `${what}: no body`);
    t.equal(same.etag, first.etag, `${what}: the tag again`);
    t.equal(crypto.n, 0, `${what}: nothing opened or rendered for the 304`);
    t.equal((await read(url(B), token, first.etag!)).status, 304, `${what}: 304 on the other replica too`);
    t.equal((await read(url(A), token, `W/${first.etag}, "other"`)).status, 304, `${what}: a list and a weak tag compare weakly`);
    t.equal((await read(url(A), token, '"other"')).status, 200, `${what}: another tag: the answer`);

    await A.services.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'GATEWAY_TOKEN', value: `${what}-changed` });
    const after = await read(url(B), token, first.etag!);
    t.equal(after.status, 200, `${what}: after a write, the old tag gets the answer (on the replica that did not write)`);
    t.not(after.etag, first.etag, `${what}: a new tag`);
    t.match(after.text, `${what}-changed`);
    t.equal((await read(url(A), token, after.etag!)).status, 304, `${what}: the new tag is current on the writer too`);
  }

  t.test('the query is part of the tag', async (t) => {
    const a = await read(list(A), token);
    const b = await read(`${list(A)}&viewSecretValue=false`, token);
    t.equal(b.status, 200);
    t.not(b.etag, a.etag, 'hidden values: another answer, another tag');
    t.equal((await read(`${list(A)}&viewSecretValue=false`, token, a.etag!)).status, 200, 'a tag of one query does not stand for another');
  });

  t.test('a caller who may not read gets its refusal, not a 304', async (t) => {
    const a = await read(list(A), token);
    await A.services.memberships.remove(SYSTEM, { project, member: { kind: 'identity', id: seeded.identityId } });
    const refused = await read(list(A), token, a.etag!);
    t.ok(refused.status === 403 || refused.status === 404, `refused (${refused.status})`);
    await A.services.memberships.upsertIdentity(SYSTEM, { project, identityId: seeded.identityId, role: 'member' });
  });
});

t.test('a write in an imported folder or to a referenced secret changes the tag', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startTestService(t, env);
  const seeded = await seedHomelab(A.services);
  const token = await login(A.url, seeded);
  const project = { id: seeded.projectId };
  await A.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'app' });
  await A.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'shared' });
  await A.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/shared', key: 'SHARED_KEY', value: 'shared-1' });
  await A.services.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'DEV_KEY', value: 'dev-1' });
  await A.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'REFERS', value: 'x-${dev.DEV_KEY}' });
  await A.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/app', import: { environment: 'prod', path: '/shared' } });
  const url = (svc: TestService, extra = '') =>
    `${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=%2Fapp&expandSecretReferences=true&include_imports=true${extra}`;

  const first = await read(url(A), token);
  t.equal(first.status, 200);
  t.match(first.text, 'x-dev-1', 'the reference is expanded');
  t.match(first.text, 'shared-1', 'the import is there');
  t.equal((await read(url(B), token, first.etag!)).status, 304);

  await A.services.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/shared', key: 'SHARED_KEY', value: 'shared-2' });
  const afterImport = await read(url(B), token, first.etag!);
  t.equal(afterImport.status, 200, 'a write in the imported folder: the answer');
  t.match(afterImport.text, 'shared-2');
  t.not(afterImport.etag, first.etag);
  t.equal((await read(url(A), token, afterImport.etag!)).status, 304);

  await A.services.secrets.update(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'DEV_KEY', value: 'dev-2' });
  const afterRef = await read(url(A), token, afterImport.etag!);
  t.equal(afterRef.status, 200, 'a write to the referenced secret (another environment): the answer');
  t.match(afterRef.text, 'x-dev-2');
  t.not(afterRef.etag, afterImport.etag);

  await A.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/app', import: { environment: 'dev', path: '/' } });
  const afterNewImport = await read(url(B), token, afterRef.etag!);
  t.equal(afterNewImport.status, 200, 'a new import: the answer');
  t.not(afterNewImport.etag, afterRef.etag);
});

t.test('v4: imports and expansion by default, both spellings of includeImports, and a trailing slash', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const token = await login(svc.url, seeded);
  const project = { id: seeded.projectId };
  await svc.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'shared' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/shared', key: 'SHARED_KEY', value: 'shared-1' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'REFERS', value: 'x-${GATEWAY_TOKEN}' });
  await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'prod', path: '/shared' } });
  const v4 = async (extra: string) => {
    const r = await read(`${svc.url}/api/v4/secrets?projectId=${seeded.projectId}&environment=prod&secretPath=%2F${extra}`, token);
    return { ...r, body: r.status === 200 ? JSON.parse(r.text) : JSON.parse(r.text || '{}') };
  };
  const plain = await v4('');
  t.equal(plain.status, 200);
  t.equal(plain.body.imports.length, 1, 'no flag: imports (the operator v1beta1 sends none)');
  t.equal(plain.body.secrets.find((s: { secretKey: string }) => s.secretKey === 'REFERS').secretValue, `x-${INVENTORY.GATEWAY_TOKEN}`, 'no flag: references expanded');
  t.equal((await v4('&includeImports=true')).body.imports.length, 1, 'the CLI spelling');
  t.equal((await v4('&includeImports=false')).body.imports.length, 0, 'false is honoured');
  t.equal((await v4('&include_imports=false')).body.imports.length, 0, 'snake case too');
  const raw = await v4('&expandSecretReferences=false');
  t.equal(raw.body.secrets.find((s: { secretKey: string }) => s.secretKey === 'REFERS').secretValue, 'x-${GATEWAY_TOKEN}', 'expansion off when asked');
  const disagree = await v4('&includeImports=true&include_imports=false');
  t.equal(disagree.status, 422, 'the two spellings disagreeing: refused');

  const v3 = await read(`${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F`, token);
  t.same(JSON.parse(v3.text).imports, [], 'v3 keeps its defaults: no imports unless asked');
  const v3camel = await read(`${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F&includeImports=true`, token);
  t.equal(JSON.parse(v3camel.text).imports.length, 1, 'v3 honours includeImports (the Java SDK sends it), never ignores it');

  // infisical proxy logs in at …/login/ (Infisical/cli packages/proxy).
  const res = await fetch(`${svc.url}/api/v1/auth/universal-auth/login/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: seeded.clientId, clientSecret: seeded.clientSecret }),
  });
  t.equal(res.status, 200, 'a login at the path with a trailing slash');
  const slashed = await read(`${svc.url}/api/v4/secrets/?projectId=${seeded.projectId}&environment=prod`, token);
  t.equal(slashed.status, 200, 'a list at the path with a trailing slash');
});

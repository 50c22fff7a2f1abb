// The External Secrets Operator's whole sync, over real HTTP, against real PostgreSQL
// + Redis and against the embedded default: login, list, single reads, revoke.
import t, { type Test } from 'tap';
import { BACKENDS, INVENTORY, seedHomelab, startTestService, testEnv } from '../helpers/service.js';
import { ESO_LIST_QUERY, JSON_TYPE, request } from '../helpers/http.js';
import { SYSTEM } from '../../server/domain/access.js';
import { softhsmAvailable, softToken } from '../helpers/softhsm.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertSecretShape(t: Test, s: Record<string, unknown>) {
  t.same(
    Object.keys(s).sort(),
    [
      '_id', 'createdAt', 'environment', 'id', 'secretComment', 'secretKey', 'secretMetadata', 'secretPath',
      'secretValue', 'secretValueHidden', 'skipMultilineEncoding', 'tags', 'type', 'updatedAt', 'version', 'workspace',
    ],
    'exactly the contract fields',
  );
  t.type(s.id, 'string');
  t.equal(s._id, s.id);
  t.type(s.workspace, 'string');
  t.type(s.environment, 'string');
  t.ok(Number.isInteger(s.version), 'version is an integer');
  t.equal(s.type, 'shared');
  t.type(s.secretKey, 'string');
  t.type(s.secretValue, 'string');
  t.type(s.secretComment, 'string');
  t.type(s.secretPath, 'string');
  t.type(s.secretValueHidden, 'boolean');
  t.type(s.skipMultilineEncoding, 'boolean');
  t.ok(Array.isArray(s.tags) && Array.isArray(s.secretMetadata), 'tags and secretMetadata are arrays');
  t.match(s.createdAt, ISO);
  t.match(s.updatedAt, ISO);
}

// The same sequence with the root key in a PKCS#11 token (SoftHSM2), on both backends.
const providers: Array<'local' | 'pkcs11'> = softhsmAvailable() ? ['local', 'pkcs11'] : ['local'];

for (const backend of BACKENDS) for (const provider of providers) {
  t.test(`ESO sync sequence (${backend}${provider === 'pkcs11' ? ', KEY_PROVIDER=pkcs11 on SoftHSM2' : ''})`, async (t) => {
    const extra = provider === 'pkcs11' ? { ...softToken(t).env, ENCRYPTION_KEY: '' } : {};
    const svc = await startTestService(t, await testEnv(t, backend, extra));
    t.equal(svc.services.crypto.rootKeyProvider, provider);
    const seeded = await seedHomelab(svc.services);
    await svc.services.folders.create(SYSTEM, { project: { slug: 'homelab' }, environment: 'prod', name: 'my-app' });
    await svc.services.secrets.create(SYSTEM, {
      project: { slug: 'homelab' }, environment: 'prod', secretPath: '/my-app', key: 'DB_USER', value: 'app',
    });
    await svc.services.secrets.create(SYSTEM, {
      project: { slug: 'homelab' }, environment: 'prod', secretPath: '/my-app', key: 'DB_URL',
      value: 'postgres://${DB_USER}:${prod.IDP_POSTGRES_PASSWORD}@db/app', comment: 'built from references',
    });
    await svc.services.secrets.create(SYSTEM, {
      project: { slug: 'homelab' }, environment: 'prod', secretPath: '/my-app', key: 'FROM_ROOT',
      value: '${prod.IDP_POSTGRES_PASSWORD}',
    });

    // 1. login
    const login = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
      method: 'POST',
      json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret, organizationSlug: 'ignored' },
    });
    t.equal(login.status, 200);
    t.equal(login.contentType, JSON_TYPE);
    t.type(login.body.accessToken, 'string');
    t.match(login.body.accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');
    t.equal(login.body.expiresIn, 2592000);
    t.equal(login.body.accessTokenMaxTTL, 2592000);
    t.equal(login.body.tokenType, 'Bearer');
    const token = login.body.accessToken as string;

    // 2. list, with ESO's exact query
    const list = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
    t.equal(list.status, 200);
    t.equal(list.contentType, JSON_TYPE);
    t.same(list.body.imports, []);
    t.equal(list.body.secrets.length, 14, 'the 14 inventory secrets');
    const byKey = Object.fromEntries(list.body.secrets.map((s: any) => [s.secretKey, s]));
    t.same(Object.fromEntries(Object.entries(byKey).map(([k, s]: [string, any]) => [k, s.secretValue])), INVENTORY);
    for (const s of list.body.secrets) {
      assertSecretShape(t, s);
      t.equal(s.workspace, seeded.projectId);
      t.equal(s.environment, 'prod');
      t.equal(s.secretPath, '/');
      t.equal(s.secretValueHidden, false);
    }

    // 2b. single read of a nested key, as ESO sends `/my-app/DB_URL`
    const single = await request(
      `${svc.url}/api/v3/secrets/raw/DB_URL?environment=prod&expandSecretReferences=true&include_imports=false&secretPath=%2Fmy-app&type=shared&workspaceId=&workspaceSlug=homelab`,
      { token },
    );
    t.equal(single.status, 200);
    t.equal(single.contentType, JSON_TYPE);
    assertSecretShape(t, single.body.secret);
    t.equal(single.body.secret.secretValue, `postgres://app:${INVENTORY.IDP_POSTGRES_PASSWORD}@db/app`, 'reference expanded');
    t.equal(single.body.secret.secretComment, 'built from references');
    t.equal(single.body.secret.secretPath, '/my-app');

    const unexpanded = await request(
      `${svc.url}/api/v3/secrets/raw/DB_URL?environment=prod&expandSecretReferences=false&secretPath=%2Fmy-app%2F&workspaceSlug=homelab`,
      { token },
    );
    t.equal(unexpanded.body.secret.secretValue, 'postgres://${DB_USER}:${prod.IDP_POSTGRES_PASSWORD}@db/app', 'left as written when not asked');

    const crossFolder = await request(
      `${svc.url}/api/v3/secrets/raw/FROM_ROOT?environment=prod&expandSecretReferences=true&secretPath=/my-app&workspaceSlug=homelab`,
      { token },
    );
    t.equal(crossFolder.body.secret.secretValue, INVENTORY.IDP_POSTGRES_PASSWORD, '${env.KEY} resolves to the root folder');

    // recursive list carries each secret's own path
    const rec = await request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&recursive=true&expandSecretReferences=true`, { token });
    t.equal(rec.status, 200);
    t.equal(rec.body.secrets.length, 17);
    const nested = rec.body.secrets.find((s: any) => s.secretKey === 'DB_URL');
    t.equal(nested.secretPath, '/my-app');
    t.equal(nested.secretValue, `postgres://app:${INVENTORY.IDP_POSTGRES_PASSWORD}@db/app`);

    // hidden values are never decrypted into the response
    const hidden = await request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&viewSecretValue=false`, { token });
    t.ok(hidden.body.secrets.every((s: any) => s.secretValue === '<hidden-by-infisical>' && s.secretValueHidden === true));

    // by workspaceId, and the project lookup the SDK does first
    const byId = await request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceId=${seeded.projectId}`, { token });
    t.equal(byId.body.secrets.length, 14);
    const project = await request(`${svc.url}/api/v1/projects/slug/homelab`, { token });
    t.equal(project.status, 200);
    t.equal(project.body.id, seeded.projectId);
    t.equal(project.body.slug, 'homelab');
    t.same(project.body.environments.map((e: any) => e.slug), ['dev', 'staging', 'prod']);

    // a GET with a JSON body `{}` (older ESO) is tolerated
    const withBody = await fetch(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, {
      method: 'GET', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'accept-encoding': 'gzip' },
    });
    t.equal(withBody.status, 200);

    // renew keeps the token working
    const renew = await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: token } });
    t.equal(renew.status, 200);
    t.type(renew.body.accessToken, 'string');
    t.ok(Number.isInteger(renew.body.expiresIn));

    // 3. revoke: refused from then on, the renewed token too (same token id)
    const revoke = await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } });
    t.equal(revoke.status, 200);
    t.same(revoke.body, { message: 'Successfully revoked access token' });
    for (const tk of [token, renew.body.accessToken]) {
      const after = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: tk });
      t.equal(after.status, 401, 'revoked token refused');
      t.equal(after.body.error, 'TokenError');
    }

    // form-urlencoded login, as some clients send it, with an empty Authorization header
    const form = await fetch(`${svc.url}/api/v1/auth/universal-auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: '' },
      body: new URLSearchParams({ clientId: ` ${seeded.clientId} `, clientSecret: seeded.clientSecret }).toString(),
    });
    t.equal(form.status, 200);
    t.equal(form.headers.get('content-type'), JSON_TYPE);
  });
}

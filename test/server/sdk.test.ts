// Infisical's official Node SDK (@infisical/sdk 5.x) as the client, unchanged, against the
// running service on both backends: every method it has for universal auth, secrets,
// folders and environments. Results are asserted, not just the absence of an error.
import { InfisicalSDK } from '@infisical/sdk';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { request } from '../helpers/http.js';
import { startIssuer } from '../helpers/issuer.js';
import { BACKENDS, INVENTORY, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`the official SDK drives auth, secrets, folders and environments (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const seeded = await seedHomelab(svc.services, { role: 'admin' });
    const at = { projectId: seeded.projectId, environment: 'prod' };

    const client = new InfisicalSDK({ siteUrl: svc.url });
    await client.auth().universalAuth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret });
    const first = client.auth().getAccessToken();
    t.type(first, 'string', 'universalAuth.login sets an access token');

    await t.test('universalAuth.renew', async (t) => {
      await client.auth().universalAuth.renew();
      const renewed = client.auth().getAccessToken();
      const tokenId = (jwt: string | null) => JSON.parse(Buffer.from(jwt!.split('.')[1]!, 'base64url').toString('utf8')).jti as string;
      t.equal(tokenId(renewed), tokenId(first), 'the same access token, renewed (re-signed when a second has passed)');
      const listed = await client.secrets().listSecrets({ ...at, secretPath: '/' });
      t.equal(listed.secrets.length, Object.keys(INVENTORY).length, 'the renewed token reads');
    });

    // SDK 5.0.2 has no jwtAuth login (its auth() offers universalAuth, awsIamAuth and
    // accessToken): the login goes over HTTP, and the SDK is handed the access token.
    await t.test('a JWT Auth access token drives the SDK: accessToken(), listSecrets, renew', async (t) => {
      const issuer = await startIssuer(t);
      await svc.services.jwtAuth.attach(SYSTEM, 'jwt-auth', seeded.identityId, {
        configurationType: 'static',
        publicKeys: [issuer.keys[0]!.spki],
        boundIssuer: issuer.url,
        boundSubject: 'system:serviceaccount:external-secrets:external-secrets',
      });
      const login = await request(`${svc.url}/api/v1/auth/jwt-auth/login`, { method: 'POST', json: { identityId: seeded.identityId, jwt: await issuer.sign() } });
      t.equal(login.status, 200, JSON.stringify(login.body));
      const viaJwt = new InfisicalSDK({ siteUrl: svc.url }).auth().accessToken(login.body.accessToken);
      const listed = await viaJwt.secrets().listSecrets({ ...at, secretPath: '/' });
      t.same(Object.fromEntries(listed.secrets.map((s) => [s.secretKey, s.secretValue])), INVENTORY, 'listSecrets with the JWT Auth token');
      const renewed = await viaJwt.auth().universalAuth.renew();
      t.type(renewed.auth().getAccessToken(), 'string', 'renewed through the SDK (the renew route serves every method)');
      t.equal((await renewed.secrets().getSecret({ ...at, secretPath: '/', secretName: 'ROUTER_API_KEY' })).secretValue, INVENTORY.ROUTER_API_KEY);
      await svc.services.jwtAuth.revoke(SYSTEM, 'jwt-auth', seeded.identityId);
      await t.rejects(renewed.secrets().listSecrets({ ...at, secretPath: '/' }), { message: /\[StatusCode=401\]/ }, 'dead once JWT Auth is removed');
    });

    await t.test('secrets: list, get, create, update, delete', async (t) => {
      const listed = await client.secrets().listSecrets({ ...at, secretPath: '/' });
      t.same(
        Object.fromEntries(listed.secrets.map((s) => [s.secretKey, s.secretValue])),
        INVENTORY,
        'listSecrets answers the 14 inventory secrets with their values',
      );
      t.same(listed.imports ?? [], [], 'no imports');

      const one = await client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'ROUTER_API_KEY' });
      t.equal(one.secretValue, INVENTORY.ROUTER_API_KEY, 'getSecret');
      t.equal(one.secretKey, 'ROUTER_API_KEY');

      const created = await client.secrets().createSecret('SDK_MADE', { ...at, secretPath: '/', secretValue: 'v1', secretComment: 'from the SDK' });
      t.equal(created.secret.secretKey, 'SDK_MADE', 'createSecret');
      t.equal((await client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'SDK_MADE' })).secretValue, 'v1', 'read back');

      const updated = await client.secrets().updateSecret('SDK_MADE', { ...at, secretPath: '/', secretValue: 'v2', newSecretName: 'SDK_RENAMED' });
      t.equal(updated.secret.secretKey, 'SDK_RENAMED', 'updateSecret renames');
      const reread = await client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'SDK_RENAMED' });
      t.equal(reread.secretValue, 'v2', 'updateSecret changed the value');
      t.equal(reread.version, 2, 'a second version');

      const deleted = await client.secrets().deleteSecret('SDK_RENAMED', { ...at, secretPath: '/' });
      t.equal(deleted.secret.secretKey, 'SDK_RENAMED', 'deleteSecret');
      await t.rejects(client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'SDK_RENAMED' }), { message: /\[StatusCode=404\]/ }, 'gone');

      const withImports = await client.secrets().listSecretsWithImports({ ...at, secretPath: '/' });
      t.equal(withImports.length, Object.keys(INVENTORY).length, 'listSecretsWithImports');
    });

    await t.test('listSecretsWithImports with real imports', async (t) => {
      const project = { id: seeded.projectId };
      await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'FROM_STAGING', value: 'imported' });
      await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'ROUTER_API_KEY', value: 'shadowed' });
      await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/' } });
      const merged = await client.secrets().listSecretsWithImports({ ...at, secretPath: '/' });
      const values = Object.fromEntries(merged.map((s) => [s.secretKey, s.secretValue]));
      t.same(values, { ...INVENTORY, FROM_STAGING: 'imported' }, 'the imported secret joins; the folder\'s own ROUTER_API_KEY wins');
      const listed = await client.secrets().listSecrets({ ...at, secretPath: '/', includeImports: true });
      t.same(listed.imports?.map((i) => [i.environment, i.secretPath, i.secrets.map((s) => s.secretKey)]), [['staging', '/', ['FROM_STAGING', 'ROUTER_API_KEY']]], 'listSecrets includeImports: the import itself');
      const one = await client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'FROM_STAGING', includeImports: true });
      t.equal(one.secretValue, 'imported', 'getSecret includeImports: found through the import');
      t.equal(one.environment, 'staging', 'where it lives');
      await t.rejects(client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'FROM_STAGING' }), { message: /\[StatusCode=404\]/ }, 'not without includeImports');
    });

    await t.test('folders: create, listFolders', async (t) => {
      const apps = await client.folders().create({ ...at, name: 'apps', path: '/' });
      t.equal(apps.name, 'apps', 'folders().create');
      t.type(apps.id, 'string');
      const media = await client.folders().create({ ...at, name: 'media', path: '/apps' });
      t.equal(media.parentId, apps.id, 'nested under /apps');

      const top = await client.folders().listFolders({ ...at, path: '/' });
      t.same(top.map((f) => f.name), ['apps'], 'listFolders: the direct sub-folders');
      const all = await client.folders().listFolders({ ...at, path: '/', recursive: true });
      t.same(all.map((f) => (f as unknown as { path: string }).path), ['/apps', '/apps/media'], 'listFolders recursive: every folder below');

      await client.secrets().createSecret('IN_MEDIA', { ...at, secretPath: '/apps/media', secretValue: 'deep' });
      const deep = await client.secrets().listSecrets({ ...at, secretPath: '/apps/media' });
      t.same(deep.secrets.map((s) => [s.secretKey, s.secretValue]), [['IN_MEDIA', 'deep']], 'a secret in the new folder');
    });

    await t.test('environments: create', async (t) => {
      const qa = await client.environments().create({ projectId: seeded.projectId, name: 'QA', slug: 'qa' });
      t.equal(qa.slug, 'qa', 'environments().create');
      t.equal(qa.name, 'QA');
      await client.secrets().createSecret('QA_ONLY', { projectId: seeded.projectId, environment: 'qa', secretPath: '/', secretValue: 'q' });
      const listed = await client.secrets().listSecrets({ projectId: seeded.projectId, environment: 'qa', secretPath: '/' });
      t.same(listed.secrets.map((s) => s.secretKey), ['QA_ONLY'], 'the new environment holds its own secrets');
      await t.rejects(
        client.environments().create({ projectId: seeded.projectId, name: 'QA again', slug: 'qa' }),
        { message: /\[StatusCode=400\]/ },
        'a taken slug is refused',
      );
    });
  });
}

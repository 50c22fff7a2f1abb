// Infisical's Node SDK 5.0.2 (@infisical/sdk, node_modules/@infisical/sdk/lib/esm/index.mjs),
// unchanged, for the methods and options sdk.test.ts does not drive: every option of
// listSecrets/getSecret/createSecret/updateSecret/deleteSecret, projects(), the AWS IAM
// login, and the dynamic-secret and KMS clients. Dynamic secrets, KMS and AWS IAM Auth are
// not implemented by this service: the tests pin that the SDK gets a clear 404 naming the
// route (never a 200 with nothing done). One backend is enough here: sdk.test.ts runs the
// shared paths on both.
import { InfisicalSDK } from '@infisical/sdk';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { signupAdmin } from '../helpers/admin.js';
import { INVENTORY, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

t.test('SDK 5.0.2: every method and option against the running service', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const at = { projectId: seeded.projectId, environment: 'prod' };
  const project = { id: seeded.projectId };
  const client = await new InfisicalSDK({ siteUrl: svc.url }).auth().universalAuth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret });

  await svc.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'app' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_USER', value: 'app' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_URL', value: 'pg://${DB_USER}@db' });

  await t.test('listSecrets: expandSecretReferences, recursive, viewSecretValue, tagSlugs, attachToProcessEnv', async (t) => {
    const expanded = await client.secrets().listSecrets({ ...at, secretPath: '/app' });
    t.equal(expanded.secrets.find((s) => s.secretKey === 'DB_URL')?.secretValue, 'pg://app@db', 'expandSecretReferences defaults to true (the SDK sends "true")');
    const raw = await client.secrets().listSecrets({ ...at, secretPath: '/app', expandSecretReferences: false });
    t.equal(raw.secrets.find((s) => s.secretKey === 'DB_URL')?.secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences: false leaves the reference');

    const flat = await client.secrets().listSecrets({ ...at, secretPath: '/', recursive: false });
    t.equal(flat.secrets.length, Object.keys(INVENTORY).length, 'recursive: false is the folder itself');
    const deep = await client.secrets().listSecrets({ ...at, secretPath: '/', recursive: true });
    t.equal(deep.secrets.length, Object.keys(INVENTORY).length + 2, 'recursive: true adds /app');
    t.same(deep.secrets.filter((s) => s.secretPath === '/app').map((s) => s.secretKey).sort(), ['DB_URL', 'DB_USER'], 'each with its own secretPath');

    const hidden = await client.secrets().listSecrets({ ...at, secretPath: '/app', viewSecretValue: false });
    for (const s of hidden.secrets) {
      t.not(s.secretValue, 'app', `viewSecretValue: false withholds ${s.secretKey}`);
      t.equal((s as unknown as { secretValueHidden: boolean }).secretValueHidden, true, 'and says so');
    }

    const tag = await svc.services.tags.create(SYSTEM, { project, slug: 'db' });
    await client.secrets().updateSecret('DB_USER', { ...at, secretPath: '/app', tagIds: [tag.id] });
    const tagged = await client.secrets().listSecrets({ ...at, secretPath: '/app', tagSlugs: ['db'] });
    t.same(tagged.secrets.map((s) => s.secretKey), ['DB_USER'], 'tagSlugs filters on the tag');
    t.same((tagged.secrets[0]?.tags as unknown as Array<{ slug: string }>).map((x) => x.slug), ['db'], 'and the tag is in the answer');

    const before = process.env.DB_USER;
    t.teardown(() => {
      if (before === undefined) delete process.env.DB_USER;
      else process.env.DB_USER = before;
    });
    await client.secrets().listSecrets({ ...at, secretPath: '/app', attachToProcessEnv: true });
    t.equal(process.env.DB_USER, 'app', 'attachToProcessEnv sets process.env');
  });

  await t.test('getSecret: type, version, expandSecretReferences, viewSecretValue', async (t) => {
    await client.secrets().updateSecret('DB_USER', { ...at, secretPath: '/app', secretValue: 'app2' });
    const now = await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_USER', type: 'shared' as never });
    t.equal(now.secretValue, 'app2', 'type: shared');
    const v1 = await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_USER', version: 1 });
    t.equal(v1.secretValue, 'app', 'version: 1 reads the first version');
    t.equal(v1.version, 1);
    const raw = await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_URL', expandSecretReferences: false });
    t.equal(raw.secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences: false');
    const expanded = await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_URL' });
    t.equal(expanded.secretValue, 'pg://app2@db', 'expanded with the current value');
    const hidden = await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_USER', viewSecretValue: false });
    t.not(hidden.secretValue, 'app2', 'viewSecretValue: false withholds the value');
    await t.rejects(
      client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'DB_USER', type: 'personal' as never }),
      { message: /\[StatusCode=(404|422)\]/ },
      'type: personal (no personal overrides here) is refused, not answered with the shared value',
    );
  });

  await t.test('createSecret / updateSecret / deleteSecret with every option', async (t) => {
    const tag = await svc.services.tags.create(SYSTEM, { project, slug: 'made' });
    const created = await client.secrets().createSecret('FULL', {
      ...at,
      secretPath: '/app',
      secretValue: 'line1\nline2',
      secretComment: 'every option',
      skipMultilineEncoding: true,
      tagIds: [tag.id],
      type: 'shared' as never,
    });
    t.equal(created.secret.secretKey, 'FULL');
    t.equal(created.secret.secretComment, 'every option', 'secretComment');
    t.equal(created.secret.skipMultilineEncoding, true, 'skipMultilineEncoding');
    t.same((created.secret.tags as unknown as Array<{ slug: string }>).map((x) => x.slug), ['made'], 'tagIds');
    t.equal((await client.secrets().getSecret({ ...at, secretPath: '/app', secretName: 'FULL' })).secretValue, 'line1\nline2');

    const updated = await client.secrets().updateSecret('FULL', {
      ...at,
      secretPath: '/app',
      secretValue: 'v2',
      secretComment: 'changed',
      skipMultilineEncoding: false,
      tagIds: [],
      type: 'shared' as never,
    });
    t.equal(updated.secret.secretComment, 'changed');
    t.equal(updated.secret.skipMultilineEncoding, false);
    t.same(updated.secret.tags, [], 'tagIds: [] removes the tags');

    const deleted = await client.secrets().deleteSecret('FULL', { ...at, secretPath: '/app', type: 'shared' as never });
    t.equal(deleted.secret.secretKey, 'FULL', 'deleteSecret with type: shared');
  });

  await t.test('secret reminders: the SDK sends them only when set', async (t) => {
    // SDK fields secretReminderNote/secretReminderRepeatDays ask for reminders, which this
    // service does not have: a set reminder is a 422 naming the field, never ignored.
    await t.rejects(
      client.secrets().createSecret('REMIND', { ...at, secretPath: '/', secretValue: 'x', secretReminderNote: 'rotate me', secretReminderRepeatDays: 30 }),
      { message: /\[StatusCode=422\].*secretReminder/ },
      'a reminder is refused, naming the field',
    );
    await t.rejects(client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'REMIND' }), { message: /\[StatusCode=404\]/ }, 'nothing half-written');
  });

  await t.test('updateSecret metadata: refused by name, nothing changed', async (t) => {
    await t.rejects(
      client.secrets().updateSecret('ROUTER_API_KEY', { ...at, secretPath: '/', secretValue: 'x', metadata: { owner: 'me' } } as never),
      { message: /\[StatusCode=422\].*metadata/ },
      'metadata is a 422 naming it',
    );
    t.equal((await client.secrets().getSecret({ ...at, secretPath: '/', secretName: 'ROUTER_API_KEY' })).secretValue, INVENTORY.ROUTER_API_KEY, 'value unchanged');
  });

  await t.test('projects().create (POST /api/v2/workspace)', async (t) => {
    // Projects belong to people here: the machine identity's call is the existing 403, the
    // superadmin's token (auth().accessToken) creates.
    await t.rejects(client.projects().create({ projectName: 'From SDK', slug: 'from-sdk', type: 'secret-manager' } as never), { message: /\[StatusCode=403\]/ }, 'a machine identity: 403');
    const admin = await signupAdmin(svc.url);
    const person = new InfisicalSDK({ siteUrl: svc.url }).auth().accessToken(admin.token);
    const made = await person.projects().create({ projectName: 'From SDK', slug: 'from-sdk', type: 'secret-manager' } as never);
    t.equal(made.slug, 'from-sdk');
    t.type(made.id, 'string');
    t.equal((await svc.services.projects.get(SYSTEM, { slug: 'from-sdk' })).id, made.id, 'stored');
  });

  await t.test('projects().inviteMembers', async (t) => {
    await t.rejects(client.projects().inviteMembers({ projectId: seeded.projectId } as never), { message: /Either usernames or emails/ }, 'the SDK itself refuses an empty invite');
  });
  await t.test('projects().inviteMembers by email (POST /api/v2/workspace/:id/memberships)', async (t) => {
    const alice = await svc.services.users.createUser(SYSTEM, { email: 'alice@example.test', password: 'correct horse battery staple', firstName: 'Alice' });
    const m = await client.projects().inviteMembers({ projectId: seeded.projectId, emails: ['alice@example.test'], roleSlugs: ['viewer'] } as never);
    t.equal(m.length, 1);
    t.match(m[0], { userId: alice.id, projectId: seeded.projectId, role: 'viewer' }, 'memberships[0]');
    await t.rejects(
      client.projects().inviteMembers({ projectId: seeded.projectId, emails: ['carol@example.test'] } as never),
      { message: /\[StatusCode=404\].*carol@example\.test/ },
      'an address nobody has here: 404 naming it',
    );
  });

  await t.test('AWS IAM Auth: not implemented, a clear 404 naming the route', async (t) => {
    const saved = { ...process.env };
    t.teardown(() => {
      for (const k of ['AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'INFISICAL_MACHINE_IDENTITY_ID']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    });
    Object.assign(process.env, { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'not-a-real-key' });
    await t.rejects(
      new InfisicalSDK({ siteUrl: svc.url }).auth().awsIamAuth.login({ identityId: seeded.identityId }),
      { message: /\[StatusCode=404\].*POST:\/api\/v1\/auth\/aws-auth\/login/ },
      'awsIamAuth.login: 404 Route POST:/api/v1/auth/aws-auth/login not found',
    );
  });

  await t.test('dynamicSecrets(): not implemented, a clear 404 for each method', async (t) => {
    const ds = client.dynamicSecrets();
    const base = { projectSlug: 'homelab', environmentSlug: 'prod', path: '/' };
    await t.rejects(ds.create({ ...base, name: 'pg', provider: { type: 'sql-database', inputs: {} }, defaultTTL: '1h' } as never), { message: /\[StatusCode=404\].*\/api\/v1\/dynamic-secrets/ }, 'create');
    await t.rejects(ds.delete('pg', base as never), { message: /\[StatusCode=404\].*\/api\/v1\/dynamic-secrets\/pg/ }, 'delete');
    await t.rejects(ds.leases.create({ ...base, dynamicSecretName: 'pg' } as never), { message: /\[StatusCode=404\].*\/api\/v1\/dynamic-secrets\/leases/ }, 'leases.create');
    await t.rejects(ds.leases.renew('lease-1', base as never), { message: /\[StatusCode=404\].*leases\/lease-1\/renew/ }, 'leases.renew');
    await t.rejects(ds.leases.delete('lease-1', base as never), { message: /\[StatusCode=404\].*leases\/lease-1/ }, 'leases.delete');
  });

  await t.test('kms(): not implemented, a clear 404 for each method', async (t) => {
    const kms = client.kms();
    const k = { keyId: 'k1', projectId: seeded.projectId };
    const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['keys().create', () => kms.keys().create({ projectId: seeded.projectId, name: 'k', encryptionAlgorithm: 'aes-256-gcm', keyUsage: 'encrypt-decrypt' } as never), /POST:\/api\/v1\/kms\/keys/],
      ['keys().delete', () => kms.keys().delete(k as never), /DELETE:\/api\/v1\/kms\/keys\/k1/],
      ['keys().getByName', () => kms.keys().getByName({ projectId: seeded.projectId, name: 'k' }), /GET:\/api\/v1\/kms\/keys\/key-name\/k/],
      ['encryption().encrypt', () => kms.encryption().encrypt({ keyId: 'k1', plaintext: 'aGk=' }), /encrypt/],
      ['encryption().decrypt', () => kms.encryption().decrypt({ keyId: 'k1', ciphertext: 'x' }), /decrypt/],
      ['signing().sign', () => kms.signing().sign({ keyId: 'k1', data: 'aGk=', signingAlgorithm: 'RSASSA_PSS_SHA_256' } as never), /sign/],
      ['signing().verify', () => kms.signing().verify({ keyId: 'k1', data: 'aGk=', signature: 'x', signingAlgorithm: 'RSASSA_PSS_SHA_256' } as never), /verify/],
      ['signing().listSigningAlgorithms', () => kms.signing().listSigningAlgorithms({ keyId: 'k1' }), /signing-algorithms/],
      ['signing().getPublicKey', () => kms.signing().getPublicKey({ keyId: 'k1' }), /public-key/],
    ];
    for (const [name, call, route] of cases) {
      const err = await call().then(() => null, (e: Error) => e);
      t.ok(err, `${name} fails`);
      t.match(err?.message, /\[StatusCode=404\]/, `${name}: 404`);
      t.match(err?.message, route, `${name}: names the route`);
    }
  });
});

// The compatibility policy (README "Compatibility policy"; issue 29 point 1), enforced:
// every field listed there as accepted-but-asks-for-nothing is sent to its route and
// succeeds; every field listed as refused is sent and answers 422 naming it. The bodies
// are the clients' own (CLI: Infisical/cli packages/api/model.go, cmd/secrets.go;
// Terraform: terraform-provider-infisical internal/client/model.go; Python SDK:
// infisical_sdk/resources). Also: the CLI's default `type: "personal"` on a delete
// answers as Infisical answers a missing personal override.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { request } from '../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { superadmin } from '../admin/helpers.js';

type Method = 'POST' | 'PATCH' | 'DELETE';
interface Row {
  /** The field(s), as the README's table names them. */
  field: string;
  method: Method;
  path: (n: string) => string;
  body: (n: string) => Record<string, unknown>;
  /** Creates what the call acts on (named `n`). */
  before?: (n: string) => Promise<void>;
  /** The caller, when not the seeded machine identity (projects and identities are people's). */
  as?: () => string;
}

t.test('compatibility policy', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const token = await login(svc.url, seeded);
  const admin = await superadmin(svc);
  const P = seeded.projectId;
  const call = (method: 'GET' | Method, path: string, json?: unknown, as = token) => request(`${svc.url}${path}`, { method, token: as, json });
  const scope = { workspaceId: P, environment: 'prod', secretPath: '/' };
  const secret = async (n: string) => {
    const r = await call('POST', `/api/v3/secrets/raw/${n}`, { ...scope, secretValue: 'v' });
    if (r.status !== 200) throw new Error(`setup ${n}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  const folder = async (n: string) => {
    const r = await call('POST', '/api/v1/folders', { name: n, workspaceId: P, environment: 'prod', path: '/' });
    if (r.status !== 200) throw new Error(`setup folder ${n}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  const identity = async () => (await svc.services.identities.create({ kind: 'system' }, { name: `m-${Math.random().toString(36).slice(2)}` })).id;
  let memberId = '';
  const asAdmin = () => admin.token;
  const orgId = async () => (await svc.services.identities.get(SYSTEM, seeded.identityId)).orgId;
  const v2Project = (n: string) => ({ projectName: n, slug: n.toLowerCase().replaceAll('_', '-'), organizationSlug: 'whatever-org', shouldCreateDefaultEnvs: true, hasDeleteProtection: false });
  let org = '';
  const tfIdentity = (n: string) => ({ name: n, hasDeleteProtection: false, organizationId: org, role: 'no-access' });
  const someone = async (n: string) => void (await svc.services.users.createUser(SYSTEM, { email: `${n.toLowerCase()}@example.test`, password: 'correct horse battery staple', firstName: 'Pat' }));
  const terraformCreate = (n: string) => ({ ...scope, type: 'shared', secretKey: n, secretValue: 'v', secretComment: '', secretReminderNote: '', secretReminderRepeatDays: 0, tagIds: null });
  const terraformUpdate = (n: string) => ({ ...scope, type: 'shared', secretName: n, secretReminderNote: '', secretReminderRepeatDays: 0, secretValue: 'w', tagIds: null });

  const accepted: Row[] = [
    { field: 'secretKey equal to the path\'s name; secretReminderNote ""; secretReminderRepeatDays 0; tagIds null; type "shared" (create)', method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: terraformCreate },
    { field: 'secretReminderNote null; secretReminderRepeatDays null; secretReminderRecipients []; secretMetadata [] / null', method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: () => ({ ...scope, secretValue: 'v', secretReminderNote: null, secretReminderRepeatDays: null, secretReminderRecipients: [], secretMetadata: null }) },
    { field: 'secretName equal to the path\'s name; empty reminder fields; tagIds null (update)', method: 'PATCH', path: (n) => `/api/v3/secrets/raw/${n}`, body: terraformUpdate, before: secret },
    { field: 'secretName equal to the path\'s name; type "shared" (delete)', method: 'DELETE', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...scope, type: 'shared', secretName: n }), before: secret },
    { field: 'tag projectId equal to the path\'s; name "" (the slug names it)', method: 'POST', path: () => `/api/v1/workspace/${P}/tags`, body: (n) => ({ name: '', slug: n.toLowerCase(), color: '', projectId: P }) },
    { field: 'folder description "" / null', method: 'POST', path: () => '/api/v1/folders', body: (n) => ({ name: n, workspaceId: P, environment: 'prod', path: '/', description: '' }) },
    { field: 'folderName equal to the path\'s; directory; forceDelete', method: 'DELETE', path: (n) => `/api/v1/folders/${n}`, body: (n) => ({ folderName: n, workspaceId: P, environment: 'prod', directory: '/', forceDelete: true }), before: folder },
    { field: 'organizationSlug on a login', method: 'POST', path: () => '/api/v1/auth/universal-auth/login', body: () => ({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, organizationSlug: 'anything' }) },
    {
      field: 'a permanent role with isTemporary false, temporaryMode "", temporaryRange "", temporaryAccessStartTime Go\'s zero time; projectId / identityId equal to the path\'s',
      method: 'POST',
      path: () => `/api/v2/workspace/${P}/identity-memberships/${memberId}`,
      body: () => ({ projectId: P, identityId: memberId, roles: [{ role: 'viewer', isTemporary: false, temporaryMode: '', temporaryRange: '', temporaryAccessStartTime: '0001-01-01T00:00:00Z' }] }),
      before: async () => void (memberId = await identity()),
    },
    {
      field: 'project create (POST /api/v2/workspace): projectDescription "", kmsKeyId "", any organizationSlug, hasDeleteProtection false, template "default", type "secret-manager"',
      method: 'POST',
      path: () => '/api/v2/workspace',
      body: (n) => ({ ...v2Project(n), projectDescription: '', kmsKeyId: '', template: 'default', type: 'secret-manager' }),
      as: asAdmin,
    },
    {
      field: 'identity create (Terraform): role "no-access", hasDeleteProtection false, metadata []',
      method: 'POST',
      path: () => '/api/v1/identities',
      body: (n) => ({ ...tfIdentity(n), metadata: [] }),
      before: async () => void (org = await orgId()),
      as: asAdmin,
    },
    {
      field: 'invite members: projectId equal to the path\'s; one roleSlug; usernames as e-mail addresses',
      method: 'POST',
      path: () => `/api/v2/workspace/${P}/memberships`,
      body: (n) => ({ projectId: P, usernames: [`${n.toLowerCase()}@example.test`], roleSlugs: ['viewer'] }),
      before: someone,
    },
  ];
  const refused: Array<Row & { names: RegExp }> = [
    { field: 'secretKey other than the path\'s name', names: /secretKey/, method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformCreate(n), secretKey: 'OTHER' }) },
    { field: 'secretName other than the path\'s name', names: /secretName/, method: 'PATCH', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformUpdate(n), secretName: 'OTHER' }), before: secret },
    { field: 'secretReminderNote non-empty', names: /secretReminderNote/, method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformCreate(n), secretReminderNote: 'rotate it' }) },
    { field: 'secretReminderRepeatDays non-zero', names: /secretReminderRepeatDays/, method: 'PATCH', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformUpdate(n), secretReminderRepeatDays: 30 }), before: secret },
    { field: 'secretReminderRecipients non-empty', names: /secretReminderRecipients/, method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformCreate(n), secretReminderRecipients: ['someone'] }) },
    { field: 'secretMetadata non-empty', names: /secretMetadata/, method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformCreate(n), secretMetadata: [{ key: 'a', value: 'b' }] }) },
    { field: 'type "personal" on a create or change', names: /type/, method: 'POST', path: (n) => `/api/v3/secrets/raw/${n}`, body: (n) => ({ ...terraformCreate(n), type: 'personal' }) },
    { field: 'tag projectId other than the path\'s', names: /projectId/, method: 'POST', path: () => `/api/v1/workspace/${P}/tags`, body: (n) => ({ name: 'Pretty Name', slug: n.toLowerCase(), color: '', projectId: '00000000-0000-4000-8000-000000000000' }) },
    { field: 'folder description non-empty', names: /description/, method: 'POST', path: () => '/api/v1/folders', body: (n) => ({ name: n, workspaceId: P, environment: 'prod', path: '/', description: 'words' }) },
    {
      field: 'temporary fields on a permanent role',
      names: /temporaryRange/,
      method: 'POST',
      path: () => `/api/v2/workspace/${P}/identity-memberships/${memberId}`,
      body: () => ({ roles: [{ role: 'viewer', temporaryRange: '1h' }] }),
      before: async () => void (memberId = await identity()),
    },
    {
      field: 'temporaryMode other than "relative"',
      names: /temporaryMode/,
      method: 'POST',
      path: () => `/api/v2/workspace/${P}/identity-memberships/${memberId}`,
      body: () => ({ roles: [{ role: 'viewer', isTemporary: true, temporaryMode: 'absolute', temporaryRange: '1h', temporaryAccessStartTime: new Date().toISOString() }] }),
      before: async () => void (memberId = await identity()),
    },
    { field: 'projectDescription non-empty', names: /projectDescription/, method: 'POST', path: () => '/api/v2/workspace', body: (n) => ({ ...v2Project(n), projectDescription: 'words' }), as: asAdmin },
    { field: 'kmsKeyId non-empty', names: /kmsKeyId/, method: 'POST', path: () => '/api/v2/workspace', body: (n) => ({ ...v2Project(n), kmsKeyId: 'a-key' }), as: asAdmin },
    { field: 'project hasDeleteProtection true', names: /hasDeleteProtection/, method: 'POST', path: () => '/api/v2/workspace', body: (n) => ({ ...v2Project(n), hasDeleteProtection: true }), as: asAdmin },
    { field: 'project type other than "secret-manager"', names: /type/, method: 'POST', path: () => '/api/v2/workspace', body: (n) => ({ ...v2Project(n), type: 'kms' }), as: asAdmin },
    { field: 'identity role other than "no-access"', names: /role/, method: 'POST', path: () => '/api/v1/identities', body: (n) => ({ ...tfIdentity(n), role: 'member' }), before: async () => void (org = await orgId()), as: asAdmin },
    { field: 'identity hasDeleteProtection true', names: /hasDeleteProtection/, method: 'POST', path: () => '/api/v1/identities', body: (n) => ({ ...tfIdentity(n), hasDeleteProtection: true }), as: asAdmin },
    { field: 'identity metadata non-empty', names: /metadata/, method: 'POST', path: () => '/api/v1/identities', body: (n) => ({ ...tfIdentity(n), metadata: [{ key: 'k', value: 'v' }] }), as: asAdmin },
    { field: 'invite members: more than one roleSlug', names: /roleSlugs/, method: 'POST', path: () => `/api/v2/workspace/${P}/memberships`, body: (n) => ({ usernames: [`${n.toLowerCase()}@example.test`], roleSlugs: ['viewer', 'member'] }), before: someone },
  ];

  let i = 0;
  for (const row of accepted) {
    const n = `COMPAT_OK_${++i}`;
    await row.before?.(n);
    const r = await call(row.method, row.path(n), row.body(n), row.as?.());
    t.equal(r.status, 200, `accepted: ${row.field}: ${JSON.stringify(r.body)}`);
  }
  for (const row of refused) {
    const n = `COMPAT_NO_${++i}`;
    await row.before?.(n);
    const r = await call(row.method, row.path(n), row.body(n), row.as?.());
    t.equal(r.status, 422, `refused: ${row.field}: ${JSON.stringify(r.body)}`);
    t.match(r.body?.message, row.names, `the 422 names it: ${row.field}`);
  }

  await t.test('the CLI\'s `secrets delete` (type "personal" by default): Infisical\'s answer for a missing override', async (t) => {
    await secret('PERSONAL_DEL');
    const cli = { secretName: 'PERSONAL_DEL', workspaceId: P, environment: 'prod', type: 'personal', secretPath: '/' };
    const asMachine = await call('DELETE', '/api/v3/secrets/raw/PERSONAL_DEL', cli);
    t.equal(asMachine.status, 400, JSON.stringify(asMachine.body));
    t.match(asMachine.body.message, /Must be user to delete personal secret/);
    const asPerson = await call('DELETE', '/api/v3/secrets/raw/PERSONAL_DEL', cli, admin.token);
    t.equal(asPerson.status, 404, JSON.stringify(asPerson.body));
    t.match(asPerson.body.message, /Secret not found/);
    t.equal((await call('GET', `/api/v3/secrets/raw/PERSONAL_DEL?workspaceId=${P}&environment=prod`)).status, 200, 'the shared secret is untouched');
    const shared = await call('DELETE', '/api/v3/secrets/raw/PERSONAL_DEL', { ...cli, type: 'shared' });
    t.equal(shared.status, 200, '`--type shared` deletes it');
    const other = await call('DELETE', '/api/v3/secrets/raw/PERSONAL_DEL', { ...cli, secretName: 'ELSE', type: 'shared' });
    t.equal(other.status, 422);
  });

  await t.test('Terraform reads: workspaceTag(s), and the identity wrapped as an organization membership', async (t) => {
    const created = await call('POST', `/api/v1/workspace/${P}/tags`, { name: 'tf', slug: 'tf', color: '#000', projectId: P });
    t.equal(created.body.workspaceTag.slug, 'tf');
    t.equal(created.body.tag.slug, 'tf', 'tag, as before');
    const id = created.body.workspaceTag.id;
    t.equal((await call('GET', `/api/v1/workspace/${P}/tags/${id}`)).body.workspaceTag.id, id);
    t.ok((await call('GET', `/api/v1/workspace/${P}/tags`)).body.workspaceTags.some((x: { id: string }) => x.id === id));
    const patched = await call('PATCH', `/api/v1/workspace/${P}/tags/${id}`, { name: 'tf2', slug: 'tf2', projectId: P, tagId: id });
    t.equal(patched.body.workspaceTag.slug, 'tf2');
    t.equal((await call('DELETE', `/api/v1/workspace/${P}/tags/${id}`)).body.workspaceTag.id, id);
    t.notOk('workspaceTag' in (await call('GET', `/api/v1/projects/${P}/tags`)).body, 'the /projects paths keep their keys');
  });
});

// Replay of the Infisical Terraform provider (Infisical/terraform-provider-infisical,
// internal/client/*.go and internal/client/model.go): provider login, and the calls of the
// infisical_project, infisical_project_user, infisical_secret, infisical_secret_folder,
// infisical_project_tag, infisical_identity and infisical_project_identity resources. Go's encoding/json writes a
// field without omitempty even when unset: `tagIds: null`, `secretReminderNote: ""`,
// `secretReminderRepeatDays: 0`.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { signupAdmin } from '../helpers/admin.js';
import { replay } from './helpers.js';

t.test('provider login and infisical_project read (GET /api/v1/workspace/:id → {workspace})', async (t) => {
  const r = await replay(t);
  const login = await r.send('POST', '/api/v1/auth/universal-auth/login', { token: null, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret } });
  t.equal(login.status, 200);
  const read = await r.send('GET', `/api/v1/workspace/${r.seeded.projectId}`);
  t.equal(read.status, 200);
  t.equal(read.body.workspace.id, r.seeded.projectId, 'workspace.id');
  t.equal(read.body.workspace.slug, 'homelab', 'workspace.slug');
  t.ok(Array.isArray(read.body.workspace.environments), 'workspace.environments[]');
});

t.test('infisical_secret: read with viewSecretValue', async (t) => {
  const r = await replay(t);
  const read = await r.send('GET', '/api/v3/secrets/raw/ROUTER_API_KEY', { query: `workspaceId=${r.seeded.projectId}&environment=prod&type=shared&secretPath=%2F&viewSecretValue=true` });
  t.equal(read.status, 200);
  t.equal(read.body.secret.secretKey, 'ROUTER_API_KEY');
  t.type(read.body.secret.secretValue, 'string');
});

// The infisical_secret resource's import by id (its call as /work/shared/CLIENTS.md lists it
// from internal/client: `GET /api/v3/secrets/raw/id/:id`, no query; the provider version
// stored here predates it, so the parsed fields are asserted as the by-name read's). Infisical
// answers {secret} (Infisical/infisical backend/src/server/routes/v3/secret-router.ts, /raw/id/:secretId).
t.test('infisical_secret import: GET /api/v3/secrets/raw/id/:id', async (t) => {
  const r = await replay(t);
  const read = await r.send('GET', '/api/v3/secrets/raw/ROUTER_API_KEY', { query: `workspaceId=${r.seeded.projectId}&environment=prod&type=shared&secretPath=%2F` });
  const byId = await r.send('GET', `/api/v3/secrets/raw/id/${read.body.secret.id}`);
  t.equal(byId.status, 200, 'GET /api/v3/secrets/raw/id/:id (terraform import)');
  t.equal(byId.body.secret.secretKey, 'ROUTER_API_KEY');
  t.equal(byId.body.secret.secretValue, read.body.secret.secretValue, 'secretValue');
  t.equal(byId.body.secret.secretPath, '/', 'secretPath');
  t.equal(byId.body.secret.environment, 'prod', 'environment');
  t.equal(byId.body.secret.workspace, r.seeded.projectId, 'workspace');
  t.type(byId.body.secret.secretComment, 'string', 'secretComment');
  t.ok(Array.isArray(byId.body.secret.tags), 'tags[]');
  const unknown = await r.send('GET', '/api/v3/secrets/raw/id/00000000-0000-4000-8000-000000000000');
  t.equal(unknown.status, 404, 'an unknown id: 404 (the provider reports it)');
});

t.test('infisical_secret create/update/delete bodies with secretKey, empty reminders, tagIds: null', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', '/api/v3/secrets/raw/TF_SECRET', {
    json: { workspaceId: pid, type: 'shared', environment: 'prod', secretKey: 'TF_SECRET', secretValue: 'v', secretComment: '', secretPath: '/', secretReminderNote: '', secretReminderRepeatDays: 0, tagIds: null },
  });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const updated = await r.send('PATCH', '/api/v3/secrets/raw/TF_SECRET', {
    json: { secretName: 'TF_SECRET', workspaceId: pid, environment: 'prod', type: 'shared', secretPath: '/', secretReminderNote: '', secretReminderRepeatDays: 0, secretValue: 'v2', tagIds: null },
  });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  const deleted = await r.send('DELETE', '/api/v3/secrets/raw/TF_SECRET', { json: { secretName: 'TF_SECRET', workspaceId: pid, environment: 'prod', type: 'shared', secretPath: '/' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
});

t.test('infisical_secret_folder: create {…, description}, get/patch by id on v1, delete on v2', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  // Older provider versions send no description (model.go CreateSecretFolderRequest {name,
  // environment, workspaceId, path}); newer ones add description. It asks for something this
  // service does not store: set, a 422 naming it; empty, accepted.
  const plain = await r.send('POST', '/api/v1/folders', { json: { name: 'tf-old', environment: 'prod', workspaceId: pid, path: '/' } });
  t.equal(plain.status, 200, 'the older body');
  const described = await r.send('POST', '/api/v1/folders', { json: { name: 'tf', environment: 'prod', workspaceId: pid, path: '/', description: 'from terraform' } });
  t.equal(described.status, 422, 'a description is refused');
  t.match(described.body.message, /description/, 'naming the field');
  const created = await r.send('POST', '/api/v1/folders', { json: { name: 'tf', environment: 'prod', workspaceId: pid, path: '/', description: '' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const id = created.body.folder.id as string;
  const got = await r.send('GET', `/api/v1/folders/${id}`);
  t.equal(got.status, 200);
  t.equal(got.body.folder.name, 'tf', 'folder.name');
  const patched = await r.send('PATCH', `/api/v1/folders/${id}`, { json: { name: 'tf2', environment: 'prod', workspaceId: pid, path: '/' } });
  t.equal(patched.status, 200, JSON.stringify(patched.body));
  t.equal(patched.body.folder.name, 'tf2');
  const deleted = await r.send('DELETE', `/api/v2/folders/${id}`, { json: { environment: 'prod', workspaceId: pid, path: '/' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
});

// internal/client/model.go CreateProjectTagRequest {name, color, slug, projectId},
// UpdateProjectTagRequest {name, color, slug (omitempty), projectId, tagId}; every answer is
// parsed as {workspaceTag: {id, slug, name, color}} (ProjectTag).
t.test('infisical_project_tag: body {name, color, slug, projectId}, answer {workspaceTag}', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', `/api/v1/workspace/${pid}/tags`, { json: { name: 'Team A', color: '#ff0000', slug: 'team-a', projectId: pid } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.workspaceTag?.slug, 'team-a', 'workspaceTag.slug');
  t.equal(created.body.workspaceTag?.name, 'Team A', 'workspaceTag.name on create');
  const id = created.body.workspaceTag?.id as string;
  const got = await r.send('GET', `/api/v1/workspace/${pid}/tags/${id}`);
  t.equal(got.body.workspaceTag?.name, 'Team A', 'workspaceTag.name');
  t.equal(got.body.workspaceTag?.color, '#ff0000', 'workspaceTag.color');
  const updated = await r.send('PATCH', `/api/v1/workspace/${pid}/tags/${id}`, { json: { name: 'Team Alpha', color: '#00ff00', slug: 'team-a', projectId: pid, tagId: id } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.equal(updated.body.workspaceTag?.name, 'Team Alpha', 'renamed');
  const listed = await r.send('GET', `/api/v1/workspace/${pid}/tags`);
  t.same(listed.body.workspaceTags?.map((x: { slug: string; name: string }) => [x.slug, x.name]), [['team-a', 'Team Alpha']], 'workspaceTags[]');
  const deleted = await r.send('DELETE', `/api/v1/workspace/${pid}/tags/${id}`, { json: { projectId: pid, tagId: id } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  t.equal(deleted.body.workspaceTag?.id, id, 'workspaceTag.id on delete');
});

// internal/client/project.go CreateProject and model.go CreateProjectRequest {projectName,
// projectDescription (omitempty), slug, organizationSlug, template (omitempty), kmsKeyId
// (omitempty), shouldCreateDefaultEnvs, hasDeleteProtection}; an empty slug sends only
// {projectName, organizationSlug}. Parsed: {project: {id, name, slug, orgId, createdAt,
// updatedAt, version}} (CreateProjectResponse). Infisical: backend/src/server/routes/v2/
// deprecated-project-router.ts (POST /). Projects belong to people here: the provider is
// configured with a person's token (a machine identity's create is a 403, below).
t.test('infisical_project create: POST /api/v2/workspace → {project}', async (t) => {
  const r = await replay(t);
  const admin = await signupAdmin(r.svc.url);
  const created = await r.send('POST', '/api/v2/workspace', {
    token: admin.token,
    json: { projectName: 'Terraformed', slug: 'terraformed', organizationSlug: 'my-org', shouldCreateDefaultEnvs: true, hasDeleteProtection: false },
  });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.match(created.body.project, { name: 'Terraformed', slug: 'terraformed', version: 3 }, 'project.{name, slug, version}');
  t.type(created.body.project.id, 'string', 'project.id');
  t.type(created.body.project.orgId, 'string', 'project.orgId');
  t.ok(!Number.isNaN(Date.parse(created.body.project.createdAt)), 'project.createdAt');
  const read = await r.send('GET', `/api/v1/workspace/${created.body.project.id}`, { token: admin.token });
  t.same(read.body.workspace.environments.map((e: { slug: string }) => e.slug), ['dev', 'staging', 'prod'], 'shouldCreateDefaultEnvs: the default environments');

  const bare = await r.send('POST', '/api/v2/workspace', { token: admin.token, json: { projectName: 'No Envs', slug: 'no-envs', organizationSlug: 'my-org', shouldCreateDefaultEnvs: false, hasDeleteProtection: false } });
  t.equal(bare.status, 200, JSON.stringify(bare.body));
  t.same(bare.body.project.environments, [], 'shouldCreateDefaultEnvs false: none');
  const noSlug = await r.send('POST', '/api/v2/workspace', { token: admin.token, json: { projectName: 'Slug From Name', organizationSlug: 'my-org' } });
  t.equal(noSlug.status, 200, JSON.stringify(noSlug.body));
  t.equal(noSlug.body.project.slug, 'slug-from-name', 'no slug: derived from the name');

  const protectedOne = await r.send('POST', '/api/v2/workspace', { token: admin.token, json: { projectName: 'P', slug: 'protected', organizationSlug: 'my-org', shouldCreateDefaultEnvs: true, hasDeleteProtection: true } });
  t.equal(protectedOne.status, 422, 'hasDeleteProtection true asks for what is not here');
  t.match(protectedOne.body.message, /hasDeleteProtection/, 'named');
  const byMachine = await r.send('POST', '/api/v2/workspace', { json: { projectName: 'M', slug: 'by-machine', organizationSlug: 'my-org', shouldCreateDefaultEnvs: true, hasDeleteProtection: false } });
  t.equal(byMachine.status, 403, 'a machine identity may not create projects');
});

// internal/client/model.go CreateProjectUserRequest {projectId, usernames} → {memberships:
// [{id, userId}]} (infisical_project_user). Infisical: backend/src/server/routes/v2/
// deprecated-project-membership-router.ts (POST /:projectId/memberships).
t.test('infisical_project_user: POST /api/v2/workspace/:projectId/memberships {projectId, usernames}', async (t) => {
  const r = await replay(t);
  const pat = await r.svc.services.users.createUser(SYSTEM, { email: 'pat@example.test', password: 'correct horse battery staple', firstName: 'Pat' });
  const added = await r.send('POST', `/api/v2/workspace/${r.seeded.projectId}/memberships`, { json: { projectId: r.seeded.projectId, usernames: ['pat@example.test'] } });
  t.equal(added.status, 200, JSON.stringify(added.body));
  t.same(added.body.memberships.map((m: { userId: string }) => m.userId), [pat.id], 'memberships[].userId');
  t.type(added.body.memberships[0].id, 'string', 'memberships[].id');
  t.equal(added.body.memberships[0].role, 'member', 'no roleSlugs: member, as Infisical');
});

// internal/provider/resource/identity.go Create/Update/Delete and model.go CreateIdentityRequest
// {name, hasDeleteProtection, organizationId, role, metadata (omitempty)}, UpdateIdentityRequest
// {identityId, name, hasDeleteProtection, role, metadata}; create and update parse
// {identity: {id, name, hasDeleteProtection, authMethods, metadata}} (CreateUpdateIdentity).
t.test('infisical_identity create, update, delete with the provider\'s bodies', async (t) => {
  const r = await replay(t);
  const admin = await signupAdmin(r.svc.url);
  const orgId = (await r.svc.services.identities.get(SYSTEM, r.seeded.identityId)).orgId;
  const created = await r.send('POST', '/api/v1/identities', { token: admin.token, json: { name: 'tf-machine', hasDeleteProtection: false, organizationId: orgId, role: 'no-access' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const id = created.body.identity.id as string;
  t.match(created.body.identity, { name: 'tf-machine', hasDeleteProtection: false, authMethods: [], metadata: [] }, 'identity.{name, hasDeleteProtection, authMethods, metadata}');
  const withMeta = await r.send('POST', '/api/v1/identities', { token: admin.token, json: { name: 'tf-2', hasDeleteProtection: false, organizationId: orgId, role: 'no-access', metadata: [] } });
  t.equal(withMeta.status, 200, 'metadata [] asks for nothing');

  const read = await r.send('GET', `/api/v1/identities/${id}`, { token: admin.token });
  t.equal(read.body.identity.identity.name, 'tf-machine', 'read: identity.identity.name');
  t.equal(read.body.identity.role, 'no-access', 'read: identity.role, as created (no drift)');

  const updated = await r.send('PATCH', `/api/v1/identities/${id}`, { token: admin.token, json: { identityId: id, name: 'tf-renamed', hasDeleteProtection: false, role: 'no-access', metadata: [] } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.equal(updated.body.identity.name, 'tf-renamed', 'renamed');
  t.equal((await r.send('GET', `/api/v1/identities/${id}`, { token: admin.token })).body.identity.identity.name, 'tf-renamed', 'read after update');

  for (const [body, field] of [
    [{ name: 'x', hasDeleteProtection: false, organizationId: orgId, role: 'member' }, 'role'],
    [{ name: 'x', hasDeleteProtection: true, organizationId: orgId, role: 'no-access' }, 'hasDeleteProtection'],
    [{ name: 'x', hasDeleteProtection: false, organizationId: orgId, role: 'no-access', metadata: [{ key: 'team', value: 'ops' }] }, 'metadata'],
  ] as const) {
    const refused = await r.send('POST', '/api/v1/identities', { token: admin.token, json: body });
    t.equal(refused.status, 422, `${field} asking for something: 422`);
    t.match(refused.body.message, new RegExp(field), `naming ${field}`);
  }
  const memberRole = await r.send('PATCH', `/api/v1/identities/${id}`, { token: admin.token, json: { identityId: id, name: 'tf-renamed', hasDeleteProtection: false, role: 'admin', metadata: [] } });
  t.equal(memberRole.status, 422, 'an organization role on update: 422');

  const deleted = await r.send('DELETE', `/api/v1/identities/${id}`, { token: admin.token, json: { identityId: id } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  t.equal((await r.send('GET', `/api/v1/identities/${id}`, { token: admin.token })).status, 404, 'gone: the provider drops it from state on 404');
});

t.test('infisical_identity read: {identity:{identity, role, orgId}}', async (t) => {
  const r = await replay(t);
  // Identities are administered by the superadmin here (no organization roles for
  // identities): the provider is configured with the superadmin's token.
  const admin = await signupAdmin(r.svc.url);
  const got = await r.send('GET', `/api/v1/identities/${r.seeded.identityId}`, { token: admin.token });
  t.equal(got.status, 200);
  t.equal(got.body.identity?.identity?.id, r.seeded.identityId, 'identity.identity.id');
  t.type(got.body.identity?.role, 'string', 'identity.role');
});

t.test('infisical_project_identity: /api/v2/workspace/:projectId/identity-memberships/:identityId with temporary access', async (t) => {
  const r = await replay(t);
  const path = `/api/v2/workspace/${r.seeded.projectId}/identity-memberships/${r.seeded.identityId}`;
  const got = await r.send('GET', path);
  t.equal(got.status, 200, JSON.stringify(got.body));
  const patched = await r.send('PATCH', path, {
    json: { projectId: r.seeded.projectId, identityId: r.seeded.identityId, roles: [{ role: 'admin', isTemporary: true, temporaryMode: 'relative', temporaryRange: '1h', temporaryAccessStartTime: new Date().toISOString() }] },
  });
  t.equal(patched.status, 200, JSON.stringify(patched.body));
});

// Machine identities with Terraform's infisical_identity bodies (terraform-provider-infisical
// internal/client/model.go CreateIdentityRequest / UpdateIdentityRequest): PATCH renames;
// role "no-access", hasDeleteProtection false and empty metadata ask for nothing; anything
// else is a 422 naming the field, nothing written. The superadmin's, as every identity route.
import t from 'tap';
import { startTestService, testEnv } from '../../../helpers/service.js';
import { api, isError, plainUser, snapshot, superadmin } from '../../admin/helpers.js';

t.test('identity rename and Terraform\'s fields', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const made = await api(svc, 'POST', '/api/v1/identities', admin.token, { name: 'before', hasDeleteProtection: false, role: 'no-access' });
  t.equal(made.status, 200, JSON.stringify(made.body));
  const id = made.body.identity.id as string;
  const patch = (body: unknown, token = admin.token, which = id) => api(svc, 'PATCH', `/api/v1/identities/${which}`, token, body);

  const renamed = await patch({ identityId: id, name: '  after  ', hasDeleteProtection: false, role: 'no-access', metadata: [] });
  t.equal(renamed.status, 200, JSON.stringify(renamed.body));
  t.match(renamed.body.identity, { id, name: 'after', hasDeleteProtection: false, metadata: [] });
  const audit = await svc.services.store.sql<{ metadata: Record<string, string> }[]>`select metadata from audit_log where event_type = 'update-identity'`;
  t.same(audit.map((a) => a.metadata), [{ identityId: id, name: 'after', oldName: 'before' }], 'audited');
  const same = await patch({ name: 'after' });
  t.equal(same.status, 200, 'the same name: 200');
  t.equal((await svc.services.store.sql`select 1 from audit_log where event_type = 'update-identity'`).length, 1, 'and nothing written');
  t.equal((await patch({ hasDeleteProtection: false, metadata: null })).status, 200, 'nothing to change: 200');
  t.equal((await patch({ name: '' })).body.identity?.name, 'after', 'an empty name asks for nothing (Terraform leaves it out: omitempty)');

  const before = await snapshot(svc);
  for (const [body, names] of [
    [{ name: '   ' }, /name/],
    [{ name: 'a\u0007b' }, /name/],
    [{ role: 'member' }, /role/],
    [{ hasDeleteProtection: true }, /hasDeleteProtection/],
    [{ metadata: [{ key: 'k', value: 'v' }] }, /metadata/],
    [{ identityId: '00000000-0000-4000-8000-000000000000', name: 'x' }, /identityId/],
    [{ name: 'x', authMethod: 'universal-auth' }, /authMethod/],
  ] as const) {
    isError(t, await patch(body), 422, 'ValidationFailure', names);
  }
  t.same(await snapshot(svc), before, 'nothing written');
  isError(t, await patch({ name: 'x' }, admin.token, '00000000-0000-4000-8000-000000000000'), 404, 'NotFound');
  const pat = await plainUser(svc, 'pat@example.test');
  isError(t, await patch({ name: 'x' }, pat.token), 403);
  t.equal((await api(svc, 'GET', `/api/v1/identities/${id}`, admin.token)).body.identity.identity.name, 'after', 'unchanged by the refusals');
});

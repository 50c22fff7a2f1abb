// POST /api/v2/workspace: Infisical's project create (Infisical's backend/src/server/routes/v2/
// deprecated-project-router.ts), on the same domain rule as POST /api/v1/projects: people
// create projects (and become their admins), machine identities may not; the slug is derived
// from the name when absent or empty; shouldCreateDefaultEnvs false makes none. Bad input is
// a 422 with nothing written; a taken slug a 400.
import t from 'tap';
import { SYSTEM } from '../../../../server/domain/access.js';
import { seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';
import { api, isError, machine, superadmin } from '../../admin/helpers.js';

t.test('POST /api/v2/workspace', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const create = (body: unknown, token = admin.token) => api(svc, 'POST', '/api/v2/workspace', token, body);
  const projects = async () => (await svc.services.projects.list(SYSTEM)).map((p) => p.slug).sort();

  await t.test('the SDK\'s and Terraform\'s bodies', async (t) => {
    const sdk = await create({ projectName: 'Sdk Made', slug: 'sdk-made', type: 'secret-manager' });
    t.equal(sdk.status, 200, JSON.stringify(sdk.body));
    t.match(sdk.body.project, { name: 'Sdk Made', slug: 'sdk-made', _id: sdk.body.project.id, version: 3 });
    t.same(sdk.body.project.environments.map((e: { slug: string }) => e.slug), ['dev', 'staging', 'prod']);
    const tf = await create({ projectName: 'TF', slug: 'tf-made', organizationSlug: 'acme', template: 'default', shouldCreateDefaultEnvs: false, hasDeleteProtection: false, projectDescription: '', kmsKeyId: '' });
    t.equal(tf.status, 200, JSON.stringify(tf.body));
    t.same(tf.body.project.environments, [], 'shouldCreateDefaultEnvs false: no environments');
    const stored = await svc.services.projects.get(SYSTEM, { slug: 'tf-made' });
    t.same(stored.environments, [], 'stored without environments');
    const audit = await svc.services.store.sql<{ metadata: Record<string, unknown> }[]>`select metadata from audit_log where event_type = 'create-project' and project_id = ${stored.id}`;
    t.same(audit.map((a) => a.metadata), [{ slug: 'tf-made', defaultEnvironments: false }], 'audited, saying so');
    const derived = await create({ projectName: 'Derived Slug!', slug: '' });
    t.equal(derived.body.project.slug, 'derived-slug', 'an empty slug: derived from the name');
    const m = await svc.services.memberships.get(SYSTEM, { project: { id: derived.body.project.id }, member: { kind: 'user', id: admin.userId } });
    t.equal(m.role, 'admin', 'the creator is its admin');
  });

  await t.test('refusals: 422 naming the field, 400 for a taken slug, 403 for a machine identity; nothing written', async (t) => {
    const created = async () => (await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from audit_log where event_type = 'create-project'`)[0]!.n;
    const before = { projects: await projects(), created: await created() };
    const cases: Array<[unknown, number, RegExp]> = [
      [{ projectName: 'x', slug: 'sdk-made' }, 400, /already exists/],
      [{}, 422, /projectName/],
      [{ projectName: '' }, 422, /projectName/],
      [{ projectName: 'a\u0000b' }, 422, /projectName/],
      [{ projectName: 'x', slug: 'Not A Slug' }, 422, /slug/],
      [{ projectName: 'x', type: 'kms' }, 422, /type/],
      [{ projectName: 'x', template: 'mine' }, 422, /template/],
      [{ projectName: 'x', projectDescription: 'words' }, 422, /projectDescription/],
      [{ projectName: 'x', kmsKeyId: 'k1' }, 422, /kmsKeyId/],
      [{ projectName: 'x', hasDeleteProtection: true }, 422, /hasDeleteProtection/],
      [{ projectName: 'x', shouldCreateDefaultEnvs: 'maybe' }, 422, /shouldCreateDefaultEnvs/],
      [{ projectName: 'x', autoCapitalization: true }, 422, /autoCapitalization/],
    ];
    for (const [body, status, names] of cases) isError(t, await create(body), status, undefined, names);
    const id = await machine(svc, 'maker', [[seeded.projectId, 'admin']]);
    isError(t, await create({ projectName: 'By Machine', slug: 'by-machine' }, id.token), 403, 'PermissionDenied', /Machine identities may not create projects/);
    t.same({ projects: await projects(), created: await created() }, before, 'no project made, nothing audited as made');
  });
});

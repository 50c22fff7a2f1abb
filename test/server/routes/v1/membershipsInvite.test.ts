// Infisical's "invite members" (POST /api/v2/workspace/:projectId/memberships; Infisical's
// backend/src/server/routes/v2/deprecated-project-membership-router.ts): people named by
// e-mail address (emails or usernames) join the project with one role, all or none. No
// invitations exist here: an address that is no person is a 404 and nobody is added. Only
// project admins; bad input a 4xx with nothing written.
import t from 'tap';
import { SYSTEM } from '../../../../server/domain/access.js';
import { seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';
import { api, isError, machine, snapshot, superadmin } from '../../admin/helpers.js';

t.test('invite members by e-mail', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const P = seeded.projectId;
  const s = svc.services;
  const person = async (email: string) => s.users.createUser(SYSTEM, { email, password: 'correct horse battery staple', firstName: 'P' });
  const ann = await person('ann@example.test');
  const ben = await person('ben@example.test');
  const cat = await person('cat@example.test');
  const editor = await s.roles.create(SYSTEM, { id: P }, { slug: 'editor', name: 'Editor', permissions: [{ subject: 'secrets', action: ['read', 'edit'] }] });
  const invite = (body: unknown, token = admin.token) => api(svc, 'POST', `/api/v2/workspace/${P}/memberships`, token, body);
  const roleOf = async (userId: string) => {
    const m = await s.memberships.list(SYSTEM, { project: { id: P }, kind: 'user' });
    return m.find((x) => x.userId === userId);
  };

  await t.test('several at once, by emails and usernames, any case, duplicates once', async (t) => {
    const r = await invite({ emails: ['Ann@Example.test', 'ann@example.test'], usernames: ['  ben@example.test '], roleSlugs: ['viewer'] });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.same(r.body.memberships.map((m: { userId: string; role: string }) => [m.userId, m.role]).sort(), [[ann.id, 'viewer'], [ben.id, 'viewer']].sort(), 'Ann and Ben, viewers, once each');
    const events = await s.store.sql<{ metadata: { userId: string; role: string } }[]>`select metadata from audit_log where event_type = 'add-workspace-member' and project_id = ${P}`;
    t.same(events.map((e) => e.metadata.userId).sort(), [ann.id, ben.id].sort(), 'one audit entry per person added');
  });

  await t.test('a custom role by its slug; no roleSlugs: member', async (t) => {
    const r = await invite({ usernames: ['cat@example.test'], roleSlugs: ['editor'] });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.equal(r.body.memberships[0].role, 'editor');
    t.equal((await roleOf(cat.id))?.customRoleId, editor.id);
    const dan = await person('dan@example.test');
    const d = await invite({ emails: ['dan@example.test'] });
    t.equal(d.body.memberships[0].role, 'member', 'member by default, as Infisical');
    t.equal((await roleOf(dan.id))?.role, 'member');
  });

  await t.test('already a member: left as they are; another role asked for: 400, nobody added', async (t) => {
    const again = await invite({ emails: ['ann@example.test'] });
    t.equal(again.status, 200);
    t.same(again.body.memberships, [], 'no role asked: nothing to do, nothing in the answer');
    const same = await invite({ emails: ['ann@example.test'], roleSlugs: ['viewer'] });
    t.same(same.body.memberships, [], 'the role they hold: nothing to do');
    const eve = await person('eve@example.test');
    const before = await snapshot(svc);
    const other = await invite({ emails: ['eve@example.test', 'ann@example.test'], roleSlugs: ['admin'] });
    isError(t, other, 400, 'BadRequest', /ann@example\.test.*already a member.*'viewer'.*PATCH/);
    t.same(await snapshot(svc), before, 'nobody added (Eve neither)');
    t.equal(await roleOf(eve.id), undefined);
    t.equal((await roleOf(ann.id))?.role, 'viewer', 'Ann keeps her role');
  });

  await t.test('an address nobody has: 404 naming it, nobody added', async (t) => {
    const fay = await person('fay@example.test');
    const before = await snapshot(svc);
    const r = await invite({ emails: ['fay@example.test', 'ghost@example.test'] });
    isError(t, r, 404, 'NotFound', /ghost@example\.test.*no invitations/);
    t.same(await snapshot(svc), before, 'nothing written');
    t.equal(await roleOf(fay.id), undefined, 'Fay was not added either');
  });

  await t.test('bad input: 422 naming it, nothing written', async (t) => {
    const before = await snapshot(svc);
    const cases: Array<[unknown, RegExp]> = [
      [{}, /emails or usernames/],
      [{ emails: [] }, /emails or usernames/],
      [{ emails: ['   '] }, /./],
      [{ emails: ['a@example.test'], roleSlugs: ['viewer', 'member'] }, /roleSlugs/],
      [{ emails: ['a@example.test'], roleSlugs: [] }, /roleSlugs/],
      [{ emails: ['a@example.test'], roleSlugs: ['no-such-role'] }, /role/],
      [{ emails: 'a@example.test' }, /emails/],
      [{ emails: [7] }, /emails/],
      [{ emails: ['x'.repeat(321)] }, /320/],
      [{ emails: Array.from({ length: 101 }, (_, i) => `p${i}@example.test`) }, /emails/],
      [{ emails: ['a@example.test'], projectId: '00000000-0000-4000-8000-000000000000' }, /projectId/],
      [{ emails: ['a@example.test'], sendEmail: true }, /sendEmail/],
    ];
    for (const [body, names] of cases) {
      const r = await invite(body);
      if (JSON.stringify(body) === '{"emails":["   "]}') {
        // A blank address is no person: the 404, naming nothing else.
        isError(t, r, 404, 'NotFound');
        continue;
      }
      isError(t, r, 422, 'ValidationFailure', names);
    }
    t.same(await snapshot(svc), before, 'nothing written');
  });

  await t.test('only project admins; a project the caller is not in is a missing one', async (t) => {
    const viewer = await machine(svc, 'viewer', [[P, 'viewer']]);
    isError(t, await invite({ emails: ['fay@example.test'] }, viewer.token), 403, 'PermissionDenied');
    const other = (await s.projects.create(SYSTEM, { name: 'other' })).id;
    const outsider = await machine(svc, 'outsider', [[P, 'admin']]);
    const r = await api(svc, 'POST', `/api/v2/workspace/${other}/memberships`, outsider.token, { emails: ['fay@example.test'] });
    isError(t, r, 404, 'NotFound', `Project with ID '${other}' not found`);
  });
});

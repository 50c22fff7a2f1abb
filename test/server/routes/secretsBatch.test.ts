// Infisical's batch change and delete (PATCH / DELETE /api/v3/secrets/batch/raw and
// /api/v4/secrets/batch; Infisical backend/src/server/routes/v3/secret-router.ts): all or
// none, mode failOnNotFound (default) or upsert, an item's own secretPath, the caller's
// rights checked per folder and for every upserted create; bad input a 4xx with nothing
// written.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { startTestService, testEnv } from '../../helpers/service.js';
import { machine, superadmin } from '../admin/helpers.js';

t.test('batch change and delete', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  await superadmin(svc);
  const s = svc.services;
  const P = (await s.projects.create(SYSTEM, { name: 'batches' })).id;
  const where = { project: { id: P }, environment: 'prod', secretPath: '/' };
  await s.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', parentPath: '/', name: 'app' });
  for (const [k, v] of [['A', 'a1'], ['B', 'b1'], ['LOCKED', 'l1']]) await s.secrets.create(SYSTEM, { ...where, key: k!, value: v!, immutable: k === 'LOCKED' });
  await s.secrets.create(SYSTEM, { ...where, secretPath: '/app', key: 'IN_APP', value: 'x1' });
  const admin = (await machine(svc, 'admin', [[P, 'admin']])).token;
  await s.roles.create(SYSTEM, { id: P }, { slug: 'editor', name: 'editor', permissions: [{ subject: 'secrets', action: ['describeSecret', 'readValue', 'edit'] }] });
  const editorM = await machine(svc, 'editor');
  await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: editorM.identityId }, role: 'editor' });

  const call = async (method: string, path: string, token: string, body: unknown) => {
    const res = await fetch(`${svc.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const state = async (path = '/') =>
    Object.fromEntries((await s.secrets.list(SYSTEM as never, { ...where, secretPath: path })).map((x) => [x.key, `${x.value}@${x.version}`]));
  const V3 = '/api/v3/secrets/batch/raw';
  const V4 = '/api/v4/secrets/batch';
  const at = { workspaceId: P, environment: 'prod', secretPath: '/' };

  await t.test('failOnNotFound (the default): one missing key refuses the whole batch', async (t) => {
    const before = await state();
    const r = await call('PATCH', V3, admin, { ...at, secrets: [{ secretKey: 'A', secretValue: 'a2' }, { secretKey: 'NOPE', secretValue: 'n' }] });
    t.equal(r.status, 404, JSON.stringify(r.body));
    t.match(r.body.message, /NOPE/);
    t.same(await state(), before, 'nothing changed');
  });

  await t.test('a change of several, a rename and an item in another folder, in one transaction', async (t) => {
    const r = await call('PATCH', V4, admin, {
      projectId: P,
      environment: 'prod',
      secretPath: '/',
      secrets: [
        { secretKey: 'A', secretValue: 'a2', secretComment: '' },
        { secretKey: 'B', newSecretName: 'B2', secretReminderNote: null },
        { secretKey: 'IN_APP', secretValue: 'x2', secretPath: '/app/' },
      ],
    });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.same(r.body.secrets.map((x: any) => [x.secretKey, x.secretValue, x.secretPath]), [['A', 'a2', '/'], ['B2', 'b1', '/'], ['IN_APP', 'x2', '/app']]);
    t.same(await state(), { A: 'a2@2', B2: 'b1@2', LOCKED: 'l1@1' });
    t.same(await state('/app'), { IN_APP: 'x2@2' });
  });

  await t.test('upsert creates what is missing; without create rights there, nothing is written', async (t) => {
    const before = await state();
    const denied = await call('PATCH', V3, editorM.token, { ...at, mode: 'upsert', secrets: [{ secretKey: 'A', secretValue: 'a3' }, { secretKey: 'NEW', secretValue: 'n1' }] });
    t.equal(denied.status, 403, JSON.stringify(denied.body));
    t.same(await state(), before, 'not even A changed');
    const noValue = await call('PATCH', V3, admin, { ...at, mode: 'upsert', secrets: [{ secretKey: 'NEW', secretComment: 'c' }] });
    t.equal(noValue.status, 422);
    t.match(noValue.body.message, /secretValue is required/);
    const ok = await call('PATCH', V3, admin, { ...at, mode: 'upsert', secrets: [{ secretKey: 'A', secretValue: 'a3' }, { secretKey: 'NEW', secretValue: 'n1' }] });
    t.equal(ok.status, 200, JSON.stringify(ok.body));
    t.same(await state(), { ...before, A: 'a3@3', NEW: 'n1@1' });
    const editorOk = await call('PATCH', V3, editorM.token, { ...at, secrets: [{ secretKey: 'NEW', secretValue: 'n2' }] });
    t.equal(editorOk.status, 200, 'an editor changes what exists');
  });

  await t.test('a protected key needs the override; bad input is a 4xx with nothing written', async (t) => {
    const before = await state();
    const locked = await call('PATCH', V3, admin, { ...at, secrets: [{ secretKey: 'A', secretValue: 'a4' }, { secretKey: 'LOCKED', secretValue: 'l2' }] });
    t.equal(locked.status, 409);
    t.same(await state(), before);
    for (const body of [
      { ...at, mode: 'bogus', secrets: [{ secretKey: 'A', secretValue: 'x' }] },
      { ...at, secrets: [] },
      { ...at, secrets: [{ secretKey: 'A', secretValue: 'x', extra: 1 }] },
      { ...at, secrets: [{ secretKey: 'A', secretReminderNote: 'remind me' }] },
    ]) {
      const r = await call('PATCH', V3, admin, body);
      t.equal(r.status, 422, JSON.stringify(body));
    }
    const dup = await call('PATCH', V3, admin, { ...at, secrets: [{ secretKey: 'A', secretValue: 'x' }, { secretKey: 'A', secretValue: 'y' }] });
    t.equal(dup.status, 400);
    t.same(await state(), before);
  });

  await t.test('delete many: all or none', async (t) => {
    const before = await state();
    const missing = await call('DELETE', V3, admin, { ...at, secrets: [{ secretKey: 'A' }, { secretKey: 'NOPE' }] });
    t.equal(missing.status, 404);
    const locked = await call('DELETE', V3, admin, { ...at, secrets: [{ secretKey: 'A' }, { secretKey: 'LOCKED' }] });
    t.equal(locked.status, 409);
    t.same(await state(), before, 'nothing deleted');
    const personal = await call('DELETE', V3, admin, { ...at, secrets: [{ secretKey: 'A', type: 'personal' }] });
    t.equal(personal.status, 422);
    const ok = await call('DELETE', V4, admin, { projectId: P, environment: 'prod', secrets: [{ secretKey: 'A', type: 'shared' }, { secretKey: 'NEW' }] });
    t.equal(ok.status, 200, JSON.stringify(ok.body));
    t.same(ok.body.secrets.map((x: any) => x.secretKey), ['A', 'NEW']);
    t.same(Object.keys(await state()).sort(), ['B2', 'LOCKED']);
  });
});

// Existence oracles: what a caller may not see answers exactly as what does not exist.
// Each case sends the SAME request twice: once while the thing exists (outside what the
// caller may see), once after it was deleted; the two answers must be equal byte for byte
// apart from the request id.
//   - a project the caller is not a member of, and a missing one (by slug and by id, on
//     reads, writes, the project routes, folders and a secret's history);
//   - a folder outside the caller's scope renamed or deleted (by name and by id), and a
//     missing one;
//   - a secret created again by a role that may create but not see names there (no
//     "Secret already exists"); one that may see the path still gets the 400.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { machine, superadmin } from './helpers.js';

interface Raw {
  status: number;
  text: string;
}

async function raw(svc: TestService, method: string, path: string, token: string, json?: unknown): Promise<Raw> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
  return { status: res.status, text: await res.text() };
}

/** The answer without its request id (the only part allowed to differ). */
const withoutReqId = (r: Raw) => `${r.status} ${r.text.replace(/"reqId":"req-[^"]*"/, '"reqId":"-"')}`;

type Call = [what: string, method: string, path: string, body?: unknown];

t.test('what a caller may not see answers as what does not exist', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  await superadmin(svc);
  const s = svc.services;

  /** Drives `calls`, runs `remove`, drives them again: each pair must be equal apart from reqId. */
  const alike = async (t: Tap, token: string, calls: Call[], remove: () => Promise<unknown>, expectStatus: number) => {
    const before = [];
    for (const [, method, path, body] of calls) before.push(await raw(svc, method, path, token, body));
    await remove();
    for (const [i, [what, method, path, body]] of calls.entries()) {
      const after = await raw(svc, method, path, token, body);
      t.equal(before[i]!.status, expectStatus, `${what}: ${expectStatus} (${before[i]!.text})`);
      t.equal(withoutReqId(before[i]!), withoutReqId(after), `${what}: existing and missing answer alike`);
    }
  };
  type Tap = typeof t;

  await t.test('a project of which the caller is not a member is a missing project', async (t) => {
    // The caller is a member of its own project (a valid token), not of "ghost".
    const own = (await s.projects.create(SYSTEM, { name: 'own' })).id;
    const caller = await machine(svc, 'stranger', [[own, 'admin']]);
    const ghost = await s.projects.create(SYSTEM, { name: 'ghost' });
    const G = ghost.id;
    const secret = await s.secrets.create(SYSTEM, { project: { id: G }, environment: 'prod', key: 'K', value: 'v' });
    const calls: Call[] = [
      ['list by slug', 'GET', '/api/v3/secrets/raw?workspaceSlug=ghost&environment=prod'],
      ['list by id', 'GET', `/api/v3/secrets/raw?workspaceId=${G}&environment=prod`],
      ['v4 list', 'GET', `/api/v4/secrets?projectId=${G}&environment=prod`],
      ['single read', 'GET', `/api/v3/secrets/raw/K?workspaceSlug=ghost&environment=prod`],
      ['project by slug', 'GET', '/api/v1/projects/slug/ghost'],
      ['project by id', 'GET', `/api/v1/projects/${G}`],
      ['create a secret', 'POST', '/api/v3/secrets/raw/NEW', { workspaceId: G, environment: 'prod', secretValue: 'v' }],
      ['change a secret', 'PATCH', '/api/v3/secrets/raw/K', { projectSlug: 'ghost', environment: 'prod', secretValue: 'w' }],
      ['folders', 'GET', `/api/v2/folders?projectId=${G}&environment=prod`],
      ['create a folder', 'POST', '/api/v2/folders', { projectId: G, environment: 'prod', path: '/', name: 'f' }],
      ['tags', 'GET', `/api/v1/projects/${G}/tags`],
      ["a secret's history", 'GET', `/api/v1/secret/${secret.id}/secret-versions`],
      ['restore a version', 'POST', `/api/v1/secret/${secret.id}/secret-versions/1/restore`, {}],
    ];
    await alike(t, caller.token, calls, () => s.projects.remove(SYSTEM, { id: G }, { force: true }), 404);
  });

  await t.test('a folder outside the scope, renamed or deleted, is a missing folder', async (t) => {
    const P = (await s.projects.create(SYSTEM, { name: 'folders' })).id;
    // The caller edits and deletes in / and in /renamed; /hidden is outside its scope.
    const rule = (glob: string) => ({ subject: 'secrets', action: ['describeSecret', 'edit', 'delete', 'create'], conditions: { environment: 'prod', secretPath: { $glob: glob } } });
    await s.roles.create(SYSTEM, { id: P }, { slug: 'root-only', name: 'Root only', permissions: [rule('/'), rule('/renamed')] });
    const caller = await machine(svc, 'root-editor');
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: caller.identityId }, role: 'root-only' });
    const hidden = await s.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', parentPath: '/', name: 'hidden' });
    await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/hidden', key: 'IN', value: 'v' });
    const at = { projectId: P, environment: 'prod', path: '/' };
    const calls: Call[] = [];
    for (const base of ['/api/v1/folders', '/api/v2/folders']) {
      calls.push(
        [`${base} rename by name`, 'PATCH', `${base}/hidden`, { ...at, name: 'renamed' }],
        [`${base} rename by id`, 'PATCH', `${base}/${hidden.id}`, { ...at, name: 'renamed' }],
        [`${base} delete by name`, 'DELETE', `${base}/hidden`, { ...at, force: true }],
        [`${base} delete by id`, 'DELETE', `${base}/${hidden.id}`, { ...at, force: true }],
      );
    }
    await alike(t, caller.token, calls, () => s.folders.remove(SYSTEM, { project: { id: P }, environment: 'prod', path: '/', folder: 'hidden', force: true }), 404);
    // A folder in its scope still goes.
    await s.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', parentPath: '/', name: 'renamed' });
    t.equal((await raw(svc, 'DELETE', '/api/v2/folders/renamed', caller.token, at)).status, 200, 'a folder in scope: deleted');
  });

  await t.test('a role that may create but not see names learns no name from a create', async (t) => {
    const P = (await s.projects.create(SYSTEM, { name: 'dropbox' })).id;
    await s.roles.create(SYSTEM, { id: P }, { slug: 'create-only', name: 'Create only', permissions: [{ subject: 'secrets', action: ['create'] }] });
    await s.roles.create(SYSTEM, { id: P }, { slug: 'describe-create', name: 'Describe and create', permissions: [{ subject: 'secrets', action: ['describeSecret', 'create'] }] });
    const blind = await machine(svc, 'create-only');
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: blind.identityId }, role: 'create-only' });
    const seeing = await machine(svc, 'describe-create');
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: seeing.identityId }, role: 'describe-create' });
    const where = { workspaceId: P, environment: 'prod', secretPath: '/' };
    await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'TAKEN', value: 'v' });
    await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'TAKEN_B', value: 'v' });
    const calls: Call[] = [
      ['create', 'POST', '/api/v3/secrets/raw/TAKEN', { ...where, secretValue: 'mine' }],
      ['v4 create', 'POST', '/api/v4/secrets/TAKEN', { projectId: P, environment: 'prod', secretPath: '/', secretValue: 'mine' }],
      ['batch create', 'POST', '/api/v3/secrets/batch/raw', { ...where, secrets: [{ secretKey: 'TAKEN_B', secretValue: 'mine' }] }],
    ];
    const remove = async () => {
      for (const key of ['TAKEN', 'TAKEN_B']) await s.secrets.remove(SYSTEM, { project: { id: P }, environment: 'prod', key });
    };
    await alike(t, blind.token, calls, remove, 403);
    // A caller who may see the names there is told the name is taken.
    await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'TAKEN', value: 'v' });
    const taken = await raw(svc, 'POST', '/api/v3/secrets/raw/TAKEN', seeing.token, { ...where, secretValue: 'mine' });
    t.equal(taken.status, 400, 'describe + create: a taken name is a 400');
    t.match(taken.text, /Secret already exists/);
  });
});

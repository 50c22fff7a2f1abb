// Infisical's MCP server, @infisical/mcp 0.0.24 (Infisical/infisical-mcp-server, npm dist/index.js),
// unchanged, spawned as a child process and spoken to over stdio with MCP JSON-RPC
// (newline-delimited): initialize, tools/list, tools/call for each of its tools, against the
// running service behind a recording forwarder. It authenticates with Universal Auth
// (INFISICAL_UNIVERSAL_AUTH_CLIENT_ID/SECRET) or a static token (INFISICAL_AUTH_METHOD=
// access-token, INFISICAL_TOKEN), reads INFISICAL_HOST_URL, and drives @infisical/sdk 4.0.1
// for everything but list-projects, which is its own axios GET /api/v1/workspace[?type=].
// 0.0.24's tools: create/delete/update/list/get-secret, create-project, create-environment,
// create-folder, invite-members-to-project, list-projects (it has no list-folders tool).
// create-project and invite-members go through the SDK 4.0.1's projects().create /
// inviteMembers (node_modules/@infisical/mcp/node_modules/@infisical/sdk/lib/index.js:
// POST /api/v2/workspace → res.project; POST /api/v2/workspace/:projectId/memberships with
// {projectId, emails?, usernames?, roleSlugs?} → res.memberships).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { signupAdmin } from '../helpers/admin.js';
import { startRecordingProxy } from '../helpers/recordingProxy.js';
import { INVENTORY, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

const require = createRequire(import.meta.url);
const MCP_BIN = join(dirname(require.resolve('@infisical/mcp/package.json')), 'dist/index.js');

interface RpcAnswer { id: number; result?: any; error?: { code: number; message: string } }

function startMcp(t: Test, env: Record<string, string>) {
  const child: ChildProcessWithoutNullStreams = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, MCP_BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const pending = new Map<number, (a: RpcAnswer) => void>();
  let buffer = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  child.stdout.on('data', (c: Buffer) => {
    buffer += c.toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (!line) continue;
      const msg = JSON.parse(line) as RpcAnswer;
      if (typeof msg.id === 'number') pending.get(msg.id)?.(msg);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(async () => {
    child.stdin.end();
    child.kill('SIGTERM');
    await exited;
  });
  let nextId = 1;
  const rpc = (method: string, params: unknown): Promise<RpcAnswer> => {
    const id = nextId++;
    const answer = new Promise<RpcAnswer>((resolve, reject) => {
      pending.set(id, resolve);
      void exited.then((code) => reject(new Error(`MCP server exited (${code}): ${stderr}`)));
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answer;
  };
  const notify = (method: string) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`);
  /** tools/call; the tool's text, or the error's message (a thrown tool error is a JSON-RPC error or isError content). */
  const call = async (name: string, args: Record<string, unknown>): Promise<{ ok: boolean; text: string }> => {
    const a = await rpc('tools/call', { name, arguments: args });
    if (a.error) return { ok: false, text: a.error.message };
    const text = (a.result.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');
    return { ok: !a.result.isError, text };
  };
  return { rpc, notify, call, stderr: () => stderr };
}

/** The JSON after "…successfully: " in a tool's text. */
const payload = (text: string) => JSON.parse(text.slice(text.indexOf(': ') + 2));

t.test('@infisical/mcp 0.0.24 over stdio, Universal Auth', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const proxy = await startRecordingProxy(t, svc.url);
  const mcp = startMcp(t, {
    INFISICAL_UNIVERSAL_AUTH_CLIENT_ID: seeded.clientId,
    INFISICAL_UNIVERSAL_AUTH_CLIENT_SECRET: seeded.clientSecret,
    INFISICAL_HOST_URL: proxy.url,
  });
  const at = { projectId: seeded.projectId, environmentSlug: 'prod' };

  const init = await mcp.rpc('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'vault-standalone-test', version: '0' } });
  t.equal(init.result?.serverInfo?.name, 'Infisical', 'initialize: the Infisical MCP server');
  mcp.notify('notifications/initialized');

  const tools = await mcp.rpc('tools/list', {});
  t.same(
    (tools.result.tools as Array<{ name: string }>).map((x) => x.name).sort(),
    ['create-environment', 'create-folder', 'create-project', 'create-secret', 'delete-secret', 'get-secret', 'invite-members-to-project', 'list-projects', 'list-secrets', 'update-secret'],
    'tools/list: its ten tools',
  );

  await t.test('list-secrets and get-secret', async (t) => {
    const listed = await mcp.call('list-secrets', at);
    t.ok(listed.ok, listed.text);
    const body = JSON.parse(listed.text) as { secrets: Array<{ secretKey: string; secretValue: string }>; imports?: unknown[] };
    t.same(Object.fromEntries(body.secrets.map((s) => [s.secretKey, s.secretValue])), INVENTORY, 'the 14 inventory secrets with values');
    t.same(body.imports, [], 'includeImports defaults to true: an empty imports list');
    const got = await mcp.call('get-secret', { ...at, secretName: 'ROUTER_API_KEY' });
    t.ok(got.ok, got.text);
    t.equal(payload(got.text).secretValue, INVENTORY.ROUTER_API_KEY, 'get-secret');
    const missing = await mcp.call('get-secret', { ...at, secretName: 'NOPE' });
    t.notOk(missing.ok, 'a missing secret is a tool error');
    t.match(missing.text, /404/, 'naming the 404');
    const login = proxy.seen.filter((r) => r.path === '/api/v1/auth/universal-auth/login');
    t.equal(login.length, 1, 'it logged in once, with Universal Auth');
  });

  await t.test('create-secret, update-secret, delete-secret', async (t) => {
    const created = await mcp.call('create-secret', { ...at, secretName: 'MCP_MADE', secretValue: 'one' });
    t.ok(created.ok, created.text);
    t.equal(payload(created.text).secretKey, 'MCP_MADE', 'create-secret');
    // 0.0.24's update-secret takes newSecretName in its schema but does not pass it to the
    // SDK (dist/index.js: updateSecret(secretName, {environment, projectId, secretPath,
    // secretValue})): the value changes, the name stays.
    const updated = await mcp.call('update-secret', { ...at, secretName: 'MCP_MADE', secretValue: 'two', newSecretName: 'MCP_RENAMED' });
    t.ok(updated.ok, updated.text);
    t.equal(payload(updated.text).secretKey, 'MCP_MADE', 'update-secret (the client sends no rename)');
    const patch = proxy.seen.filter((r) => r.method === 'PATCH' && r.path === '/api/v3/secrets/raw/MCP_MADE');
    t.equal(patch.length, 1, 'PATCH /api/v3/secrets/raw/:name');
    t.notOk('newSecretName' in JSON.parse(patch[0]?.body ?? '{}'), 'without newSecretName');
    const read = await mcp.call('get-secret', { ...at, secretName: 'MCP_MADE' });
    t.equal(payload(read.text).secretValue, 'two', 'the value changed');
    const deleted = await mcp.call('delete-secret', { ...at, secretName: 'MCP_MADE' });
    t.ok(deleted.ok, deleted.text);
    t.match(deleted.text, /Secret deleted successfully: MCP_MADE/, 'delete-secret');
    t.notOk((await mcp.call('get-secret', { ...at, secretName: 'MCP_MADE' })).ok, 'gone');
  });

  await t.test('create-environment, create-folder, then secrets there', async (t) => {
    const env = await mcp.call('create-environment', { projectId: seeded.projectId, name: 'QA', slug: 'qa' });
    t.ok(env.ok, env.text);
    t.equal(payload(env.text).slug, 'qa', 'create-environment');
    const folder = await mcp.call('create-folder', { projectId: seeded.projectId, environment: 'qa', name: 'apps', path: '/' });
    t.ok(folder.ok, folder.text);
    t.equal(payload(folder.text).name, 'apps', 'create-folder');
    const made = await mcp.call('create-secret', { projectId: seeded.projectId, environmentSlug: 'qa', secretPath: '/apps', secretName: 'IN_QA', secretValue: 'q' });
    t.ok(made.ok, made.text);
    const listed = JSON.parse((await mcp.call('list-secrets', { projectId: seeded.projectId, environmentSlug: 'qa', secretPath: '/apps' })).text);
    t.same(listed.secrets, [{ secretKey: 'IN_QA', secretValue: 'q' }], 'list-secrets in the new folder');
    t.same(
      (await svc.services.folders.list(SYSTEM, { project: { id: seeded.projectId }, environment: 'qa', path: '/' })).map((f) => f.name),
      ['apps'],
      'the folder exists server-side',
    );
  });

  await t.test('list-secrets with imports and references', async (t) => {
    const project = { id: seeded.projectId };
    await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'FROM_STAGING', value: 'imported' });
    await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/' } });
    await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'REF', value: '${ROUTER_API_KEY}' });
    const listed = JSON.parse((await mcp.call('list-secrets', at)).text);
    t.same(listed.imports.map((i: any) => i.secrets.map((s: any) => s.secretKey)), [['FROM_STAGING']], 'the import');
    t.equal(listed.secrets.find((s: any) => s.secretKey === 'REF').secretValue, INVENTORY.ROUTER_API_KEY, 'expanded by default');
    const raw = JSON.parse((await mcp.call('list-secrets', { ...at, expandSecretReferences: false, includeImports: false })).text);
    t.equal(raw.secrets.find((s: any) => s.secretKey === 'REF').secretValue, '${ROUTER_API_KEY}', 'expandSecretReferences: false');
    t.same(raw.imports ?? [], [], 'includeImports: false: no imports');
    const viaImport = await mcp.call('get-secret', { ...at, secretName: 'FROM_STAGING' });
    t.equal(payload(viaImport.text).secretValue, 'imported', 'get-secret finds it through the import (includeImports defaults to true)');
  });

  await t.test('list-projects: GET /api/v1/workspace → {workspaces}', async (t) => {
    const all = await mcp.call('list-projects', {});
    t.match(all.text, /^Projects retrieved successfully/, all.text);
    const projects = payload(all.text) as Array<{ id: string; slug: string; name: string; environments: Array<{ slug: string }> }>;
    t.same(projects.map((p) => [p.id, p.slug, p.name]), [[seeded.projectId, 'homelab', 'homelab']], 'the project it can reach');
    t.ok(projects[0]?.environments.some((e) => e.slug === 'qa'), 'with its environments');
    const typed = await mcp.call('list-projects', { type: 'secret-manager' });
    t.equal(payload(typed.text).length, 1, 'type=secret-manager');
    const paths = proxy.seen.filter((r) => r.path === '/api/v1/workspace').map((r) => r.url);
    t.same(paths, ['/api/v1/workspace', '/api/v1/workspace?type=secret-manager'], 'type "all" sends no query; others send ?type=');
  });

  await t.test('create-project (POST /api/v2/workspace) as a machine identity: refused, nothing made', async (t) => {
    // Projects belong to people here (server/domain/projects.ts): a machine identity works
    // only inside projects it was given. The person's own token creates (next test).
    const made = await mcp.call('create-project', { projectName: 'From MCP', type: 'secret-manager', slug: 'from-mcp' });
    t.notOk(made.ok, 'a tool error');
    t.match(made.text, /403/, 'the 403');
    const sent = proxy.seen.filter((r) => r.method === 'POST' && r.path === '/api/v2/workspace');
    t.equal(sent.length, 1, 'POST /api/v2/workspace');
    t.same(JSON.parse(sent[0]?.body ?? '{}'), { projectName: 'From MCP', slug: 'from-mcp', type: 'secret-manager' }, 'the SDK 4.0.1 body (undefined fields left out)');
    t.same((await svc.services.projects.list(SYSTEM)).map((p) => p.slug), ['homelab'], 'no project made');
  });

  await t.test('invite-members-to-project (POST /api/v2/workspace/:id/memberships)', async (t) => {
    const bob = await svc.services.users.createUser(SYSTEM, { email: 'bob@example.test', password: 'correct horse battery staple', firstName: 'Bob' });
    const invited = await mcp.call('invite-members-to-project', { projectId: seeded.projectId, emails: ['bob@example.test'], roleSlugs: ['viewer'] });
    t.ok(invited.ok, invited.text);
    const memberships = payload(invited.text) as Array<{ id: string; userId: string; projectId: string; role: string }>;
    t.same(memberships.map((m) => [m.userId, m.projectId, m.role]), [[bob.id, seeded.projectId, 'viewer']], 'the SDK returns memberships[]: Bob, a viewer');
    const sent = proxy.seen.filter((r) => r.method === 'POST' && r.path === `/api/v2/workspace/${seeded.projectId}/memberships`);
    t.same(JSON.parse(sent[0]?.body ?? '{}'), { projectId: seeded.projectId, emails: ['bob@example.test'], roleSlugs: ['viewer'] }, 'the body it sent');
    const m = await svc.services.memberships.get(SYSTEM, { project: { id: seeded.projectId }, member: { kind: 'user', id: bob.id } });
    t.equal(m.role, 'viewer', 'Bob is a viewer of homelab');
    const again = await mcp.call('invite-members-to-project', { projectId: seeded.projectId, usernames: ['bob@example.test'] });
    t.ok(again.ok, again.text);
    t.same(payload(again.text), [], 'inviting a member again adds nobody (as Infisical)');
    const nobody = await mcp.call('invite-members-to-project', { projectId: seeded.projectId, emails: ['nobody@example.test'] });
    t.notOk(nobody.ok, 'an address nobody has here is a tool error (no invitations are sent)');
    t.match(nobody.text, /404/, 'the 404');
  });

  t.notMatch(mcp.stderr(), new RegExp(seeded.clientSecret), 'the client secret never shows in its output');
});

t.test('@infisical/mcp 0.0.24 over stdio, a person\'s token: create-project', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const admin = await signupAdmin(svc.url);
  const proxy = await startRecordingProxy(t, svc.url);
  const mcp = startMcp(t, { INFISICAL_AUTH_METHOD: 'access-token', INFISICAL_TOKEN: admin.token, INFISICAL_HOST_URL: proxy.url });
  await mcp.rpc('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'vault-standalone-test', version: '0' } });
  mcp.notify('notifications/initialized');
  const made = await mcp.call('create-project', { projectName: 'From MCP', type: 'secret-manager', slug: 'from-mcp' });
  t.ok(made.ok, made.text);
  const project = payload(made.text) as { id: string; slug: string; name: string; environments: Array<{ slug: string }> };
  t.match(project, { slug: 'from-mcp', name: 'From MCP' }, 'the SDK returns {project}.project');
  t.same(project.environments.map((e) => e.slug), ['dev', 'staging', 'prod'], 'with the default environments');
  const stored = await svc.services.projects.get(SYSTEM, { slug: 'from-mcp' });
  t.equal(stored.id, project.id, 'the project exists server-side');
  const m = await svc.services.memberships.get(SYSTEM, { project: { id: project.id }, member: { kind: 'user', id: admin.userId } });
  t.equal(m.role, 'admin', 'its creator is its admin');
  const typed = await mcp.call('create-project', { projectName: 'Certs', type: 'cert-manager' });
  t.notOk(typed.ok, 'another project type is refused');
  t.match(typed.text, /422/, 'a 422');
  t.equal((await svc.services.projects.list(SYSTEM)).length, 1, 'nothing more made');
});

t.test('@infisical/mcp 0.0.24 over stdio, access token (Token Auth)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services, { role: 'viewer' });
  await svc.services.tokenAuth.attach(SYSTEM, seeded.identityId, {});
  const { accessToken } = await svc.services.tokenAuth.createToken(SYSTEM, seeded.identityId, { name: 'mcp' });
  const mcp = startMcp(t, { INFISICAL_AUTH_METHOD: 'access-token', INFISICAL_TOKEN: accessToken, INFISICAL_HOST_URL: `${svc.url}/` });
  await mcp.rpc('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'vault-standalone-test', version: '0' } });
  mcp.notify('notifications/initialized');
  const listed = await mcp.call('list-secrets', { projectId: seeded.projectId, environmentSlug: 'prod' });
  t.ok(listed.ok, listed.text);
  t.equal(JSON.parse(listed.text).secrets.length, Object.keys(INVENTORY).length, 'a Token Auth token lists');
  const projects = await mcp.call('list-projects', { type: 'all' });
  t.equal(payload(projects.text)[0]?.slug, 'homelab', 'list-projects with a trailing slash on INFISICAL_HOST_URL');
  const refused = await mcp.call('create-secret', { projectId: seeded.projectId, environmentSlug: 'prod', secretName: 'NO', secretValue: 'x' });
  t.notOk(refused.ok, 'a viewer cannot create');
  t.match(refused.text, /403/, 'a 403');
});

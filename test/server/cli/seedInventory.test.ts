// seed-inventory against real PostgreSQL and the embedded default: the shipped homelab
// inventory creates all 14 keys by their rules, a second run changes nothing,
// IDP_SECRET_KEY is immutable (also when it existed before the seed), and the project
// must exist.
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { isStrongPassword } from '../../../server/cli/rules.js';
import { signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { startTestService } from '../../helpers/service.js';
import { cliEnv, openServices, readAll, REPO, runCli, tempDir, type Backend } from './helpers.js';

const INVENTORY = join(REPO, 'docs/homelab-inventory.json');
const HEX64 = ['IDP_SECRET_KEY', 'IDP_BOOTSTRAP_TOKEN', 'GATEWAY_TOKEN'];
const HEX24 = ['IDP_POSTGRES_PASSWORD', 'DASHBOARD_ADMIN_PASSWORD'];
const EXTERNAL = [
  'DASHBOARD_OAUTH_CLIENT_SECRET', 'ROUTER_API_KEY', 'LLM_API_KEY', 'GIT_HOST_TOKEN',
  'CHAT_BOT_TOKEN', 'CHAT_WEBHOOK_DEUTSCH', 'CHAT_WEBHOOK_ENGLISH', 'CHAT_WEBHOOK_ALERTS',
];
const ALL = [...HEX64, ...HEX24, 'IDP_BOOTSTRAP_PASSWORD', ...EXTERNAL];

async function createHomelab(t: Parameters<typeof openServices>[0], env: Record<string, string>) {
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();
}

const seed = (env: Record<string, string>, ...extra: string[]) =>
  runCli(['seed-inventory', '--file', INVENTORY, ...extra], env);

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`the homelab inventory: created by rule, kept on a second run (${backend})`, async (t) => {
    const env = await cliEnv(t, backend);
    await createHomelab(t, env);

    const first = await seed(env);
    t.equal(first.code, 0, 'exit 0', { stderr: first.stderr });
    t.match(first.stdout, /14 keys in homelab\/prod\/: 6 created, 0 kept, 8 placeholders/);
    for (const k of [...HEX64, ...HEX24, 'IDP_BOOTSTRAP_PASSWORD']) t.match(first.stdout, new RegExp(`^created +${k} `, 'm'));
    for (const k of EXTERNAL) t.match(first.stdout, new RegExp(`^placeholder +${k} `, 'm'));
    t.match(first.stdout, /^created +IDP_SECRET_KEY +hex64, immutable$/m);

    let services = await openServices(t, env);
    const stored = await readAll(services);
    await services.close();
    t.equal(stored.size, 14, 'all 14 keys exist');
    const at = (k: string) => stored.get(`homelab/prod/${k}`)!;
    for (const k of HEX64) t.match(at(k).value, /^[0-9a-f]{64}$/, `${k}: 64 hex`);
    for (const k of HEX24) t.match(at(k).value, /^[0-9a-f]{24}$/, `${k}: 24 hex`);
    t.ok(isStrongPassword(at('IDP_BOOTSTRAP_PASSWORD').value), 'IDP_BOOTSTRAP_PASSWORD: strong password');
    t.equal(at('DASHBOARD_OAUTH_CLIENT_SECRET').value, 'CHANGE_ME_issued_by_the_identity_provider', 'declared placeholder');
    for (const k of EXTERNAL.slice(1)) t.equal(at(k).value, 'CHANGE_ME_issued_elsewhere', `${k}: default placeholder`);
    t.equal(new Set(ALL.map((k) => at(k).value)).size, 14 - EXTERNAL.length + 2, 'generated values all differ');
    for (const k of ALL) t.equal(at(k).immutable, k === 'IDP_SECRET_KEY', `${k}: immutable only for IDP_SECRET_KEY`);
    t.match(at('IDP_SECRET_KEY').comment, /Never change after first install/, 'the note is the comment');
    for (const k of ALL) {
      if (!at(k).value.startsWith('CHANGE_ME')) t.notOk((first.stdout + first.stderr).includes(at(k).value), `${k}: value not printed`);
    }

    const second = await seed(env);
    t.equal(second.code, 0);
    t.match(second.stdout, /14 keys in homelab\/prod\/: 0 created, 6 kept, 8 placeholders/);
    t.match(second.stdout, /^placeholder +CHAT_BOT_TOKEN +exists, still the placeholder/m);
    services = await openServices(t, env);
    t.same(await readAll(services), stored, 'every value, comment and version unchanged');
    await services.close();
  });
}

t.test('IDP_SECRET_KEY is immutable; a real external value is kept; flags override the file', async (t) => {
  const env = await cliEnv(t, 'postgres');
  await createHomelab(t, env);
  t.equal((await seed(env)).code, 0);

  let services = await openServices(t, env);
  const ref = { project: { slug: 'homelab' }, environment: 'prod', secretPath: '/' };
  await t.rejects(services.secrets.update(SYSTEM, { ...ref, key: 'IDP_SECRET_KEY', value: 'f'.repeat(64) }), { code: 'CONFLICT' });
  const changed = await services.secrets.update(SYSTEM, { ...ref, key: 'IDP_SECRET_KEY', value: 'f'.repeat(64), allowImmutableChange: true });
  t.equal(changed.version, 2, 'changed with the explicit override');
  await services.secrets.update(SYSTEM, { ...ref, key: 'CHAT_BOT_TOKEN', value: '123456:real-token' });
  const before = await readAll(services);
  await services.close();

  const again = await seed(env);
  t.equal(again.code, 0);
  t.match(again.stdout, /^kept +CHAT_BOT_TOKEN +exists, left untouched$/m, 'a real value is reported as kept');
  t.match(again.stdout, /0 created, 7 kept, 7 placeholders/);
  services = await openServices(t, env);
  t.same(await readAll(services), before, 'nothing overwritten');
  await services.close();

  // Flags override the file: a different inventory naming another project and path.
  const dir = tempDir(t);
  const custom = join(dir, 'inv.json');
  writeFileSync(custom, JSON.stringify({ project: 'elsewhere', environment: 'prod', path: '/nope', secrets: [{ key: 'EXTRA_TOKEN', rule: 'hex24' }] }));
  const overridden = await runCli(['seed-inventory', '--file', custom, '--project', 'homelab', '--environment', 'dev', '--path', '/'], env);
  t.equal(overridden.code, 0, overridden.stderr);
  t.match(overridden.stdout, /1 keys in homelab\/dev\/: 1 created/);
  services = await openServices(t, env);
  t.match((await readAll(services)).get('homelab/dev/EXTRA_TOKEN')?.value, /^[0-9a-f]{24}$/);
  await services.close();
});

t.test('a key marked immutable that already exists is marked so, value kept; changes then need the override', async (t) => {
  const env = await cliEnv(t, 'postgres');
  let services = await openServices(t, env);
  const project = await services.projects.create(SYSTEM, { name: 'homelab' });
  const ref = { project: { slug: 'homelab' }, environment: 'prod', secretPath: '/' };
  // Created in the UI before the first seed: not marked.
  await services.secrets.create(SYSTEM, { ...ref, key: 'IDP_SECRET_KEY', value: 'typed in the UI' });
  await services.secrets.create(SYSTEM, { ...ref, key: 'GATEWAY_TOKEN', value: 'also typed in the UI' });
  await services.close();

  const first = await seed(env);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /^kept +IDP_SECRET_KEY +exists, value kept, marked immutable$/m);
  t.match(first.stdout, /^kept +GATEWAY_TOKEN +exists, left untouched$/m, 'a key the file does not mark stays unmarked');
  t.match(first.stdout, /14 keys in homelab\/prod\/: 4 created, 2 kept, 8 placeholders, 1 marked immutable$/m);
  t.notOk(first.stdout.includes('typed in the UI'), 'no value printed');

  services = await openServices(t, env);
  const stored = await readAll(services);
  t.same(stored.get('homelab/prod/IDP_SECRET_KEY'), { value: 'typed in the UI', comment: '', version: 1, immutable: true }, 'value, comment and version kept');
  t.equal(stored.get('homelab/prod/GATEWAY_TOKEN')?.immutable, false);
  const events = await services.store.sql`select actor_type, environment, secret_path, secret_key, secret_version, metadata from audit_log
    where project_id = ${project.id} and event_type = 'protect-secret'`;
  t.same(events, [{ actorType: 'system', environment: 'prod', secretPath: '/', secretKey: 'IDP_SECRET_KEY', secretVersion: 1, metadata: {} }], 'the marking is audited');

  await services.close();

  // Over HTTP, as the UI would try it: 409 without the override, recorded with it.
  const svc = await startTestService(t, { ...env, PORT: '0', HOST: '127.0.0.1' });
  const admin = await signupAdmin(svc.url);
  const patch = (body: Record<string, unknown>) =>
    request(`${svc.url}/api/v3/secrets/raw/IDP_SECRET_KEY`, { method: 'PATCH', token: admin.token, json: { workspaceSlug: 'homelab', environment: 'prod', secretPath: '/', ...body } });
  const refused = await patch({ secretValue: 'changed' });
  t.equal(refused.status, 409, JSON.stringify(refused.body));
  t.match(refused.body, { error: 'Conflict', message: /must never change/ });
  const changed = await patch({ secretValue: 'changed', overrideImmutable: true });
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const [override] = await svc.services.store.sql`select metadata from audit_log where secret_key = 'IDP_SECRET_KEY' and event_type = 'update-secret'`;
  t.same(override?.metadata, { immutableOverride: true });

  const again = await seed(env);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^kept +IDP_SECRET_KEY +exists, left untouched$/m, 'already marked: nothing to do');
  t.notMatch(again.stdout, /marked immutable/);
});

t.test('refusals: unknown project, environment, folder; bad inventory; wrong key; usage', async (t) => {
  const env = await cliEnv(t, 'postgres');
  await createHomelab(t, env);

  const unknown = await seed(env, '--project', 'nope');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /Project with slug 'nope' not found: create it first/);

  const noEnv = await seed(env, '--environment', 'qa');
  t.equal(noEnv.code, 1);
  t.match(noEnv.stderr, /Environment with slug 'qa' in project 'homelab' not found \(it has: dev, staging, prod\)/);

  const noFolder = await seed(env, '--path', '/missing');
  t.equal(noFolder.code, 1);
  t.match(noFolder.stderr, /Folder with path '\/missing' in environment 'prod' not found/);

  const dir = tempDir(t);
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ project: 'homelab', environment: 'prod', secrets: [{ key: 'A', rule: 'hex99' }, { key: 'B', rule: 'hex24', placeholder: 'x' }] }));
  const invalid = await runCli(['seed-inventory', '--file', bad], env);
  t.equal(invalid.code, 1);
  t.match(invalid.stderr, /secrets\.0\.rule/);
  t.match(invalid.stderr, /placeholder is only for rule "external"/);

  const wrongKey = await seed({ ...env, ENCRYPTION_KEY: '0'.repeat(32) });
  t.equal(wrongKey.code, 1);
  t.match(wrongKey.stderr, /ENCRYPTION_KEY does not match the key this database was encrypted with/);

  const badKey = await seed({ ...env, ENCRYPTION_KEY: 'abc' });
  t.equal(badKey.code, 1);
  t.match(badKey.stderr, /ENCRYPTION_KEY must be 32 hex characters/);

  t.equal((await runCli(['seed-inventory'], env)).code, 2, 'no --file: usage');

  const services = await openServices(t, env);
  t.equal((await readAll(services)).size, 0, 'no refused run wrote anything');
  await services.close();
});

t.test('embedded database in use by a running service: refused', async (t) => {
  const env = await cliEnv(t, 'embedded');
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  const r = await seed(env);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`is in use by process ${process.pid}: it admits one process at a time`));
  t.equal((await readAll(services)).size, 0);
  await services.close();

  const missing = await runCli(['audit-verify'], { DATA_DIR: join(tempDir(t), 'nothing-here') });
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no database found/);
});

t.test('a relative --file is read from the caller\'s directory (INIT_CWD under npm run cli), not the package root', async (t) => {
  const env = await cliEnv(t, 'postgres');
  await createHomelab(t, env);
  const caller = tempDir(t, 'vault-cli-caller-');
  copyFileSync(INVENTORY, join(caller, 'my-inventory.json'));
  const fromNpm = { ...env, INIT_CWD: caller };

  // A path that exists only relative to the package root is not found.
  const rootRelative = await runCli(['seed-inventory', '--file', 'docs/homelab-inventory.json'], fromNpm, REPO);
  t.equal(rootRelative.code, 1);
  t.match(rootRelative.stderr, `cannot read the inventory ${join(caller, 'docs/homelab-inventory.json')}: ENOENT`);

  const r = await runCli(['seed-inventory', '--file', 'my-inventory.json'], fromNpm, REPO);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /14 keys in homelab\/prod\/: 6 created, 0 kept, 8 placeholders/);
});

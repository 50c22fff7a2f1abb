// Custom roles in a real browser: an admin creates a role scoped to prod / on the Roles
// tab (rules editor), edits it, gives it to the ESO identity on the Members tab, and the
// identity's next read is scoped; deleting the role while held is refused on screen.
import t from 'tap';
import { request } from '../helpers/http.js';
import { login } from '../helpers/service.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot } from './helpers.js';

browserTest(t, 'Roles: create a scoped role, edit it, assign it, refuse deleting it while held', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const P = seeded.projectId;
  await svc.services.folders.create({ kind: 'system' }, { project: { id: P }, environment: 'prod', parentPath: '/', name: 'other' });
  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${P}/roles`);
  await page.getByRole('heading', { name: 'Custom roles' }).waitFor();
  await page.getByText('No custom role yet').waitFor();

  await page.getByRole('button', { name: 'New role' }).click();
  const form = page.getByRole('form', { name: 'New role' });
  await form.getByLabel('Name', { exact: true }).fill('Prod root reader');
  await form.getByLabel('Slug', { exact: true }).fill('prod-root-reader');
  const rule = form.getByRole('group', { name: 'Rule 1' });
  await rule.getByLabel('Environment', { exact: true }).selectOption('prod');
  await rule.getByLabel('Secret path (glob)', { exact: true }).fill('/');
  t.ok(await rule.getByLabel('read values', { exact: true }).isChecked(), 'a new rule reads by default');
  await rule.getByLabel('create', { exact: true }).check();
  await shot(page, '60-roles-new');
  await form.getByRole('button', { name: 'Create role' }).click();
  await page.getByRole('cell', { name: 'prod-root-reader' }).waitFor();
  t.pass('the role is listed');

  const adminToken = (await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: 'admin@example.test', password: 'a long admin password 42' } })).body.token;
  const stored = async () => (await request(`${svc.url}/api/v1/projects/${P}/roles/slug/prod-root-reader`, { token: adminToken })).body.role;
  t.same((await stored()).permissions, [
    { subject: 'secrets', action: ['describeSecret', 'readValue', 'create'], conditions: { environment: 'prod', secretPath: { $glob: '/' } }, inverted: false },
  ]);

  // Edit: the rules load, create is taken back and a deny is added.
  await page.getByRole('button', { name: 'Edit Prod root reader' }).click();
  const edit = page.getByRole('form', { name: 'Edit role' });
  const first = edit.getByRole('group', { name: 'Rule 1' });
  await first.getByLabel('create', { exact: true }).waitFor();
  t.equal(await first.getByLabel('Environment', { exact: true }).inputValue(), 'prod', 'the stored rule is loaded');
  await first.getByLabel('create', { exact: true }).uncheck();
  await edit.getByRole('button', { name: 'Add rule' }).click();
  const second = edit.getByRole('group', { name: 'Rule 2' });
  await second.getByLabel('Effect', { exact: true }).selectOption('deny');
  await second.getByLabel('Secret path (glob)', { exact: true }).fill('/other/**');
  await second.getByText('deny wins').waitFor();
  await shot(page, '61-roles-edit');
  await edit.getByRole('button', { name: 'Save role' }).click();
  await edit.waitFor({ state: 'detached' });
  const saved = await stored();
  t.equal(saved.version, 2);
  t.same(saved.permissions.map((p: any) => [p.action, p.inverted]), [[['describeSecret', 'readValue'], false], [['describeSecret', 'readValue'], true]]);

  // Assign it to the ESO identity on the Members tab.
  const token = await login(svc.url, seeded);
  const list = (env: string) => request(`${svc.url}/api/v3/secrets/raw?workspaceId=${P}&environment=${env}&secretPath=%2F`, { token });
  t.equal((await list('dev')).status, 200, 'as member, dev is readable');
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Members' }).click();
  const select = page.getByLabel('Role of homelab-eso', { exact: true });
  await select.waitFor();
  await select.selectOption('prod-root-reader');
  await page.getByRole('button', { name: 'Save role of homelab-eso' }).click();
  await page.getByRole('dialog', { name: 'Change role' }).getByRole('button', { name: 'Change to prod-root-reader' }).click();
  await page.waitForFunction(
    async (url) => ((await (await fetch(url, { credentials: 'include' })).json()) as any).identityMemberships?.[0]?.role === 'prod-root-reader',
    `${svc.url}/api/v1/projects/${P}/memberships/identities`,
  );
  t.equal((await list('dev')).status, 403, 'the identity is scoped from its next request');
  t.equal((await list('prod')).status, 200);
  await shot(page, '62-roles-assigned');

  // Deleting a held role is refused, and says why.
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Roles' }).click();
  await page.getByRole('button', { name: 'Delete Prod root reader' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete role' }).click();
  await page.getByRole('alert').filter({ hasText: 'assigned to 1' }).waitFor();
  t.pass('a held role is not deleted');
});

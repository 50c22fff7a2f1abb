// Management flows in a real browser, against one service and one browser for the file:
// People (create a person, add them to homelab, change their role, remove them), folders
// with breadcrumbs, deleting a secret after confirmation, new credentials for a machine
// identity and revoking the old client secret (checked over the HTTP API), and the audit
// trail's filters and paging.
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { SYSTEM } from '../../server/domain/access.js';
import { request } from '../helpers/http.js';
import { login, type Seeded, type TestService } from '../helpers/service.js';
import { browser, browserTest, homelabService, loginThroughUi, newPage, shot, shownCredentials } from './helpers.js';

interface Shared {
  svc: TestService;
  seeded: Seeded;
  browser: Browser;
}

// One service and one browser for every test here, started by the first test that runs
// (and closed when the file ends); each test gets its own context, so its own session.
let shared: Promise<Shared> | undefined;
function ready(): Promise<Shared> {
  shared ??= (async () => {
    const { svc, seeded } = await homelabService(t);
    return { svc, seeded, browser: await browser(t) };
  })();
  return shared;
}

async function loggedIn(tt: Parameters<typeof newPage>[0], s: Shared): Promise<Page> {
  const { page } = await newPage(tt, {}, s.browser);
  await loginThroughUi(page, s.svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  return page;
}

/** A JSON API call with the page's own session (cookie and CSRF header as the UI sends them). */
async function pageApi<T = any>(page: Page, path: string): Promise<{ status: number; body: T }> {
  return page.evaluate(async (p) => {
    const r = await fetch(p, { headers: { accept: 'application/json' } });
    return { status: r.status, body: await r.json() };
  }, path) as Promise<{ status: number; body: T }>;
}

browserTest(t, 'People: create a person, add them to homelab as viewer, make them member, remove them', async (t) => {
  const s = await ready();
  const page = await loggedIn(t, s);
  const person = { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.test' };

  // -- the People screen -----------------------------------------------------------------
  const mainNav = page.getByRole('navigation', { name: 'Main' });
  await mainNav.getByRole('link', { name: 'People' }).click();
  await page.getByRole('heading', { name: 'People', level: 1 }).waitFor();
  t.equal(new URL(page.url()).pathname, '/people');
  t.equal(await mainNav.getByRole('link', { name: 'People' }).getAttribute('aria-current'), 'page', 'People is the current section');
  const people = page.getByRole('table', { name: 'People' });
  await people.waitFor();
  t.equal(await people.locator('tbody tr').count(), 1, 'only the administrator at first');
  t.match(await people.locator('tbody tr').first().textContent(), /admin@example\.test.*administrator/, 'the administrator is marked as such');

  // -- create: a validation error from the API, then a generated password ------------------
  await page.getByRole('button', { name: 'New person' }).click();
  const dialog = page.getByRole('dialog', { name: 'New person' });
  await dialog.getByLabel('First name').fill(person.firstName);
  await dialog.getByLabel('Last name (optional)').fill(person.lastName);
  await dialog.getByLabel('Email').fill(person.email);
  const pw = dialog.getByLabel('Initial password');
  await pw.fill('too short');
  t.equal(await pw.getAttribute('type'), 'password', 'the password is masked while typed');
  await dialog.getByRole('button', { name: 'Add person' }).click();
  await dialog.getByRole('alert').filter({ hasText: 'password must be 12 to 256 characters' }).waitFor();
  t.equal(await pw.getAttribute('aria-invalid'), 'true', 'the password field is marked invalid');
  t.match(await pw.getAttribute('aria-describedby'), /\S+ \S+/, 'the field is described by the hand-over note and the error');
  t.match(await dialog.getByText(/Hand it over securely/).textContent(), /password manager/, 'the note says how to hand the password over');
  await shot(page, '20-person-create-error');

  await dialog.getByRole('button', { name: 'Generate' }).click();
  const generated = await pw.inputValue();
  t.match(generated, /^[A-Za-z2-9]{20}$/, 'a 20-character password is generated');
  t.equal(await pw.getAttribute('type'), 'text', 'a generated password is shown so it can be handed over');
  await dialog.getByRole('button', { name: 'Add person' }).click();
  const added = page.getByRole('dialog', { name: 'Person added' });
  await added.waitFor();
  t.equal((await added.getByTestId('person-email').textContent())?.trim(), person.email);
  t.equal((await added.getByTestId('person-password').textContent())?.trim(), generated, 'the initial password is shown once');
  t.match(await added.getByRole('alert').textContent(), /Hand the initial password to Grace Hopper securely/);
  await shot(page, '21-person-added');
  await added.getByRole('button', { name: 'Done' }).click();
  await added.waitFor({ state: 'hidden' });
  t.equal(await page.getByText(generated).count(), 0, 'the password is gone from the page');
  const row = people.locator(`tr[data-email="${person.email}"]`);
  await row.waitFor();
  t.match(await row.textContent(), /Grace Hopper.*grace@example\.test.*project roles/, 'listed with name, email and access');
  await shot(page, '22-people');

  // the person logs in with that password (over the API)
  const graceLogin = await request(`${s.svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: person.email, password: generated } });
  t.equal(graceLogin.status, 200, 'the new person logs in with the initial password');

  // the same email again: the API's message in the dialog
  await page.getByRole('button', { name: 'New person' }).click();
  await dialog.getByLabel('First name').fill('Other');
  await dialog.getByLabel('Email').fill(person.email.toUpperCase());
  await dialog.getByLabel('Initial password').fill('another long password 1');
  await dialog.getByRole('button', { name: 'Add person' }).click();
  await dialog.getByRole('alert').filter({ hasText: 'A user with this email already exists' }).waitFor();
  t.equal(await dialog.getByLabel('Email').getAttribute('aria-invalid'), 'true', 'the email field is marked invalid');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  t.equal(await people.locator('tbody tr').count(), 2, 'no second person');

  // -- add to homelab as viewer ------------------------------------------------------------
  await page.goto(`${s.svc.url}/projects/${s.seeded.projectId}/members`);
  const addForm = page.getByRole('form', { name: 'Add a member' });
  await addForm.waitFor();
  await addForm.getByLabel('Kind').selectOption('user');
  const pick = addForm.getByLabel('Person');
  await pick.locator('option', { hasText: 'Grace Hopper (grace@example.test)' }).waitFor({ state: 'attached' });
  t.same(await pick.locator('option').allTextContents(), ['Grace Hopper (grace@example.test)'], 'the administrator is not offered (needs no membership)');
  await pick.selectOption({ label: 'Grace Hopper (grace@example.test)' });
  await addForm.getByLabel('Role').selectOption('viewer');
  await addForm.getByRole('button', { name: 'Add member' }).click();
  const roleOf = page.getByLabel('Role of Grace Hopper');
  await roleOf.waitFor();
  t.equal(await roleOf.inputValue(), 'viewer', 'added as viewer');
  const membershipsPath = `/api/v1/projects/${s.seeded.projectId}/memberships/users`;
  const roles = async () => {
    const r = await pageApi<{ memberships: { user: { email: string }; role: string }[] }>(page, membershipsPath);
    return Object.fromEntries(r.body.memberships.map((m) => [m.user.email, m.role]));
  };
  t.same(await roles(), { [person.email]: 'viewer' }, 'the API has Grace as viewer');
  await pick.locator('option', { hasText: 'No person left to add' }).waitFor({ state: 'attached' });
  t.ok(await pick.isDisabled(), 'nobody left to add: the list is disabled');
  await page.getByText('Everyone already has a role here').waitFor();
  await shot(page, '23-members-person');

  // -- change the role to member -----------------------------------------------------------
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().includes(membershipsPath) && r.status() === 200),
    (async () => {
      await roleOf.selectOption('member');
      await page.getByRole('button', { name: 'Save role of Grace Hopper' }).click();
      const change = page.getByRole('dialog', { name: 'Change role' });
      t.match(await change.textContent(), /Grace Hopper goes from viewer to member in homelab/, 'the confirmation names who, from what, to what, where');
      await change.getByRole('button', { name: 'Change to member' }).click();
    })(),
  ]);
  t.same(await roles(), { [person.email]: 'member' }, 'the API has Grace as member');
  await page.reload();
  await roleOf.waitFor();
  t.equal(await roleOf.inputValue(), 'member', 'the new role after a reload');

  // -- remove -------------------------------------------------------------------------------
  await page.getByRole('button', { name: 'Remove Grace Hopper' }).click();
  const confirm = page.getByRole('dialog', { name: 'Remove member' });
  t.match(await confirm.textContent(), /Grace Hopper will lose access to homelab/);
  await confirm.getByRole('button', { name: 'Remove member' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await page.getByText('No user memberships').waitFor();
  t.same(await roles(), {}, 'the API has no user membership left');
  await addForm.getByLabel('Kind').selectOption('user');
  await addForm.getByLabel('Person').locator('option', { hasText: 'Grace Hopper' }).waitFor({ state: 'attached' });
  t.pass('Grace is offered again');

  // -- a person who is not the administrator sees no People screen ---------------------------
  const { page: gracePage } = await newPage(t, {}, s.browser);
  await gracePage.goto(s.svc.url);
  await gracePage.getByLabel('Email').fill(person.email);
  await gracePage.getByLabel('Password').fill(generated);
  await gracePage.getByRole('button', { name: 'Log in' }).click();
  await gracePage.getByRole('heading', { name: 'Projects' }).waitFor();
  t.equal(await gracePage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'People' }).count(), 0, 'no People link for a person');
  await gracePage.goto(`${s.svc.url}/people`);
  await gracePage.getByRole('heading', { name: 'Page not found' }).waitFor();
  t.pass('/people is not a page for a person');
});

browserTest(t, 'folders: create under prod /, move with breadcrumbs, add a secret there, back to the root', async (t) => {
  const s = await ready();
  const page = await loggedIn(t, s);
  const base = `${s.svc.url}/projects/${s.seeded.projectId}/secrets`;
  await page.goto(`${base}?env=prod`);
  const rootTable = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  await rootTable.waitFor();
  const crumbs = page.getByRole('navigation', { name: 'Folder path' });
  t.equal((await crumbs.locator('[aria-current="page"]').textContent())?.trim(), '/ (root)', 'at the root');

  // a new folder: the screen moves into it
  await page.getByRole('button', { name: 'New folder' }).click();
  const folderDialog = page.getByRole('dialog', { name: 'New folder' });
  await folderDialog.getByLabel('Folder name').fill('apps');
  await folderDialog.getByRole('button', { name: 'Create folder' }).click();
  await page.getByText('No secrets in prod /apps').waitFor();
  t.equal(new URL(page.url()).searchParams.get('path'), '/apps', 'the URL names the folder');
  t.equal((await crumbs.locator('[aria-current="page"]').textContent())?.trim(), 'apps', 'breadcrumb: / (root) / apps');

  // back to the root by the breadcrumb; the folder is listed there; into it by its link
  await crumbs.getByRole('link', { name: '/ (root)' }).click();
  await rootTable.waitFor();
  const folders = page.getByRole('list', { name: 'Folders' });
  await folders.getByRole('link', { name: 'apps' }).click();
  await page.getByText('No secrets in prod /apps').waitFor();

  // a sub-folder, then up one level with the breadcrumb
  await page.getByRole('button', { name: 'New folder' }).click();
  await folderDialog.getByLabel('Folder name').fill('media');
  await folderDialog.getByRole('button', { name: 'Create folder' }).click();
  await page.getByText('No secrets in prod /apps/media').waitFor();
  t.same(
    (await crumbs.locator('a, [aria-current="page"]').allTextContents()).map((x) => x.trim()),
    ['/ (root)', 'apps', 'media'],
    'breadcrumb: / (root) / apps / media',
  );
  await shot(page, '24-folder-nested');
  await crumbs.getByRole('link', { name: 'apps' }).click();
  await page.getByText('No secrets in prod /apps', { exact: true }).waitFor();
  t.equal(new URL(page.url()).searchParams.get('path'), '/apps', 'up one level');
  await folders.getByRole('link', { name: 'media' }).waitFor();

  // a secret in /apps
  await page.getByRole('button', { name: 'Add secret' }).click();
  const add = page.getByRole('dialog', { name: 'Add secret' });
  t.match(await add.textContent(), /In prod \/apps/, 'the dialog says where the secret goes');
  await add.getByLabel('Key').fill('APPS_TOKEN');
  await add.getByLabel('Value').fill('apps-token-value');
  await add.getByRole('button', { name: 'Add secret' }).click();
  await add.waitFor({ state: 'hidden' });
  const appsTable = page.getByRole('table', { name: 'Secrets in prod /apps' });
  await appsTable.locator('tr[data-key="APPS_TOKEN"]').waitFor();
  t.equal(await appsTable.locator('tbody tr').count(), 1, 'one secret in /apps');
  await shot(page, '25-folder-secret');

  // back to the root by the breadcrumb: the secret is not there
  await crumbs.getByRole('link', { name: '/ (root)' }).click();
  await rootTable.waitFor();
  t.equal(new URL(page.url()).searchParams.get('path'), null, 'at the root again');
  t.equal(await rootTable.locator('tr[data-key="APPS_TOKEN"]').count(), 0, 'APPS_TOKEN lives in /apps only');
  await folders.getByRole('link', { name: 'apps' }).waitFor();

  // and the machine API agrees
  const token = await login(s.svc.url, s.seeded);
  const read = await request(`${s.svc.url}/api/v3/secrets/raw?environment=prod&secretPath=%2Fapps&workspaceSlug=homelab`, { token });
  t.equal(read.status, 200);
  t.same(
    read.body.secrets.map((x: { secretKey: string; secretValue: string }) => [x.secretKey, x.secretValue]),
    [['APPS_TOKEN', 'apps-token-value']],
    'the operator reads APPS_TOKEN under prod /apps',
  );
});

browserTest(t, 'deleting a secret asks first; Cancel keeps it, confirming deletes it', async (t) => {
  const s = await ready();
  const page = await loggedIn(t, s);
  await page.goto(`${s.svc.url}/projects/${s.seeded.projectId}/secrets?env=prod`);
  const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  const row = table.locator('tr[data-key="CHAT_BOT_TOKEN"]');
  await row.waitFor();
  const before = await table.locator('tbody tr').count();

  await page.getByRole('button', { name: 'Delete CHAT_BOT_TOKEN' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete secret' });
  t.match(await confirm.textContent(), /Delete CHAT_BOT_TOKEN from prod \/\?/, 'the dialog names the secret and where it is');
  await shot(page, '26-delete-confirm');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await confirm.waitFor({ state: 'hidden' });
  t.equal(await row.count(), 1, 'Cancel keeps the secret');

  await page.getByRole('button', { name: 'Delete CHAT_BOT_TOKEN' }).click();
  await confirm.getByRole('button', { name: 'Delete secret' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await row.waitFor({ state: 'detached' });
  t.equal(await table.locator('tbody tr').count(), before - 1, 'one row fewer');

  const token = await login(s.svc.url, s.seeded);
  const read = await request(`${s.svc.url}/api/v3/secrets/raw/CHAT_BOT_TOKEN?environment=prod&secretPath=%2F&workspaceSlug=homelab`, { token });
  t.equal(read.status, 404, 'the machine API no longer has it');
});

browserTest(t, 'machine identity: new credentials shown once, the old client secret revoked', async (t) => {
  const s = await ready();
  // its own identity (the other tests keep homelab-eso's credentials), reader of homelab
  const ids = s.svc.services.identities;
  const identity = await ids.create(SYSTEM, { name: 'backup-job' });
  const ua = await ids.attachUniversalAuth(SYSTEM, identity.id);
  const { clientSecret: oldSecret } = await ids.createClientSecret(SYSTEM, identity.id);
  await s.svc.services.memberships.upsertIdentity(SYSTEM, { project: { id: s.seeded.projectId }, identityId: identity.id, role: 'viewer' });
  const readProd = (token: string) => request(`${s.svc.url}/api/v3/secrets/raw?environment=prod&secretPath=%2F&workspaceSlug=homelab`, { token });
  const oldToken = await login(s.svc.url, { clientId: ua.clientId, clientSecret: oldSecret });
  t.equal((await readProd(oldToken)).status, 200, 'a token from the old secret reads before the revocation');

  const page = await loggedIn(t, s);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Machine identities' }).click();
  await page.getByRole('link', { name: 'backup-job' }).click();
  const secrets = page.getByRole('table', { name: 'Client secrets' });
  await secrets.waitFor();
  t.equal(await secrets.locator('tbody tr').count(), 1, 'one client secret');

  // generate: the new secret is shown once
  const generateForm = page.getByRole('form', { name: 'Generate new credentials' });
  await generateForm.getByLabel('Description (optional)').fill('rotated by the test');
  await generateForm.getByRole('button', { name: 'Generate new credentials' }).click();
  const { dialog: creds, clientId, clientSecret: newSecret } = await shownCredentials(page, 'backup-job');
  t.match(newSecret, /^[0-9a-f]{64}$/, 'a new client secret is shown');
  t.not(newSecret, oldSecret, 'it is a new one');
  t.equal(clientId, ua.clientId, 'with the same client id');
  await shot(page, '27-new-credentials');
  await creds.getByRole('button', { name: 'I have stored the secret' }).click();
  await creds.waitFor({ state: 'hidden' });
  t.equal(await page.getByText(newSecret).count(), 0, 'the new secret is gone from the page');
  await secrets.getByText('rotated by the test').waitFor();
  t.equal(await secrets.locator('tbody tr').count(), 2, 'two client secrets listed');

  // revoke the old one
  const revokeOld = page.getByRole('button', { name: `Revoke client secret ${oldSecret.slice(0, 4)}` });
  await revokeOld.click();
  const confirm = page.getByRole('dialog', { name: 'Revoke client secret' });
  t.match(await confirm.textContent(), /stop working at once/, 'the dialog says what happens to issued tokens');
  await confirm.getByRole('button', { name: 'Revoke' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await revokeOld.waitFor({ state: 'detached' });
  t.equal(await secrets.locator('tbody tr').count(), 1, 'the old client secret is no longer listed');
  t.match(await secrets.locator('tbody tr').textContent(), /rotated by the test/, 'the new one stays');
  await shot(page, '28-after-revoke');

  // over the HTTP API: the old secret and its token are dead, the new secret works
  t.equal((await readProd(oldToken)).status, 401, 'a token issued with the old secret now gets 401');
  const oldLogin = await request(`${s.svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId: ua.clientId, clientSecret: oldSecret } });
  t.equal(oldLogin.status, 401, 'the old secret no longer logs in');
  const newToken = await login(s.svc.url, { clientId: ua.clientId, clientSecret: newSecret });
  t.equal((await readProd(newToken)).status, 200, 'the new secret logs in and reads');
});

browserTest(t, 'audit trail: filter by environment, path and actor; page through a long list', async (t) => {
  const s = await ready();
  // In dev: 27 + 3 secrets written by homelab-eso over the API (3 of them in /audit), the
  // folder /audit and one secret by the service itself: 32 entries, more than a page (25).
  const token = await login(s.svc.url, s.seeded);
  const project = { id: s.seeded.projectId };
  await s.svc.services.folders.create(SYSTEM, { project, environment: 'dev', parentPath: '/', name: 'audit' });
  for (let i = 1; i <= 30; i++) {
    const key = i <= 27 ? `DEV_KEY_${String(i).padStart(2, '0')}` : `AUDIT_KEY_${i - 27}`;
    const r = await request(`${s.svc.url}/api/v3/secrets/raw/${key}`, {
      method: 'POST',
      token,
      json: { workspaceSlug: 'homelab', environment: 'dev', secretPath: i <= 27 ? '/' : '/audit', secretValue: `v${i}`, type: 'shared' },
    });
    if (r.status !== 200) throw new Error(`create ${key}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  await s.svc.services.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'PLATFORM_KEY', value: 'x' });

  const page = await loggedIn(t, s);
  await page.goto(`${s.svc.url}/projects/${s.seeded.projectId}/audit`);
  const table = page.getByRole('table', { name: 'Audit entries, newest first' });
  await table.waitFor();
  const filters = page.getByRole('form', { name: 'Filter the audit trail' });
  const pager = page.getByRole('navigation', { name: 'Audit pages' });

  /** Does `act`, waits for the list request whose query has `expect`, then for `n` rows that all match `each`. */
  const rowsAfter = async (act: () => Promise<unknown>, expect: Record<string, string | null>, n: number, each: { where?: RegExp; actor?: RegExp }) => {
    await Promise.all([
      page.waitForResponse((r) => {
        if (!r.url().includes('/api/v1/organization/audit-logs?') || r.status() !== 200) return false;
        const q = new URL(r.url()).searchParams;
        return Object.entries(expect).every(([k, v]) => q.get(k) === v);
      }),
      act(),
    ]);
    await page.waitForFunction(
      ([n, where, actor]) => {
        // Runs in the page; the test project's lib has no DOM types.
        const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ children: ArrayLike<{ textContent: string | null }> }> } }).document;
        const rows = [...doc.querySelectorAll('table[aria-label="Audit entries, newest first"] tbody tr')];
        return (
          rows.length === n &&
          rows.every((r) => (!where || new RegExp(where).test(r.children[3]!.textContent!)) && (!actor || new RegExp(actor).test(r.children[2]!.textContent!)))
        );
      },
      [n, each.where?.source, each.actor?.source] as const,
    );
    return table.locator('tbody tr').count();
  };

  // environment: 32 entries, page 1 of them
  t.equal(await rowsAfter(() => filters.getByLabel('Environment').selectOption('dev'), { environment: 'dev', offset: '0' }, 25, { where: /^dev / }), 25, 'dev: a full first page');
  t.equal((await pager.getByText(/^Page \d/).textContent())?.trim(), 'Page 1');
  t.ok(await pager.getByRole('button', { name: 'Previous' }).isDisabled(), 'no previous page');
  await shot(page, '29-audit-dev-page-1');
  t.equal(await rowsAfter(() => pager.getByRole('button', { name: 'Next' }).click(), { environment: 'dev', offset: '25' }, 7, { where: /^dev / }), 7, 'dev: the 7 left on page 2');
  t.equal((await pager.getByText(/^Page \d/).textContent())?.trim(), 'Page 2');
  t.ok(await pager.getByRole('button', { name: 'Next' }).isDisabled(), 'no next page');
  t.match(await table.locator('tbody tr').last().textContent(), /create-folder.*the service.*dev \/audit/, 'the oldest dev entry (the folder) last');
  t.equal(await rowsAfter(() => pager.getByRole('button', { name: 'Previous' }).click(), { environment: 'dev', offset: '0' }, 25, { where: /^dev / }), 25, 'back to page 1');
  t.match(await table.locator('tbody tr').first().textContent(), /create-secret.*the service.*dev \/ PLATFORM_KEY v1/, 'newest first');

  // path: the folder and its three secrets, back on page 1 of a short list
  t.equal(
    await rowsAfter(() => filters.getByLabel('Path').fill('/audit').then(() => filters.getByLabel('Path').press('Enter')), { environment: 'dev', secretPath: '/audit', offset: '0' }, 4, { where: /^dev \/audit/ }),
    4,
    'dev /audit: 4 entries',
  );
  t.equal(await pager.count(), 0, 'no pager for one page');
  t.same(
    (await table.locator('tbody tr td:nth-child(4)').allTextContents()).map((x) => x.trim()),
    ['dev /audit AUDIT_KEY_3 v1', 'dev /audit AUDIT_KEY_2 v1', 'dev /audit AUDIT_KEY_1 v1', 'dev /audit'],
    'the three secrets and the folder, newest first',
  );
  await shot(page, '30-audit-path');

  // actor: the service (in dev /audit: the folder only), then homelab-eso over every path
  t.equal(await rowsAfter(() => filters.getByLabel('Actor').selectOption({ label: 'The service (set-up, CLI)' }), { actorType: 'platform', secretPath: '/audit' }, 1, { actor: /^the service$/ }), 1, 'the service in dev /audit: 1');
  t.equal(
    await rowsAfter(() => filters.getByLabel('Path').fill('').then(() => filters.getByLabel('Path').press('Enter')), { actorType: 'platform', environment: 'dev', secretPath: null }, 2, { actor: /^the service$/, where: /^dev / }),
    2,
    'the service in dev: the folder and PLATFORM_KEY',
  );
  t.equal(
    await rowsAfter(() => filters.getByLabel('Actor').selectOption({ label: 'homelab-eso (identity)' }), { actorType: 'identity', actor: s.seeded.identityId }, 25, { actor: /^homelab-eso \(identity\)$/ }),
    25,
    'homelab-eso in dev: a full page',
  );
  t.equal(await rowsAfter(() => pager.getByRole('button', { name: 'Next' }).click(), { actorType: 'identity', offset: '25' }, 5, { actor: /^homelab-eso \(identity\)$/ }), 5, 'homelab-eso in dev: 30 in all');
  await shot(page, '31-audit-actor');

  // a filter change starts again at page 1: all environments, homelab-eso only
  await rowsAfter(() => filters.getByLabel('Environment').selectOption(''), { environment: null, actorType: 'identity', offset: '0' }, 25, { actor: /^homelab-eso \(identity\)$/ });
  t.equal((await pager.getByText(/^Page \d/).textContent())?.trim(), 'Page 1', 'changing a filter returns to page 1');

  // the UI shows what the API answers for the same filters
  const api = await pageApi<{ auditLogs: { event: { type: string } }[] }>(page, `/api/v1/organization/audit-logs?projectId=${s.seeded.projectId}&environment=dev&limit=100`);
  t.equal(api.body.auditLogs.length, 32, 'the API has the same 32 dev entries');
});

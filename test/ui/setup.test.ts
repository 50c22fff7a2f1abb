// End to end in a real browser: first-time set-up, homelab with the inventory by bulk
// paste, homelab-eso with Universal Auth (credentials read from the page), membership,
// export as JSON and CSV, audit; then the machine API with the copied credentials.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { INVENTORY, login, startTestService, testEnv } from '../helpers/service.js';
import { ADMIN, browserTest, newPage, shot, shownCredentials, waitForCount } from './helpers.js';

browserTest(t, 'first-time set-up through the UI, then the machine API with the credentials shown once', async (t) => {
    const svc = await startTestService(t, await testEnv(t, 'embedded'));
    const { context, page } = await newPage(t);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });

    // -- registration ----------------------------------------------------------------------
    await page.goto(svc.url);
    await page.getByRole('heading', { name: 'Set up this instance' }).waitFor();
    t.equal(new URL(page.url()).pathname, '/setup');
    t.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), await page.getByLabel('First name').getAttribute('id'), 'set-up starts in its first field');
    await shot(page, '01-setup');
    await page.getByLabel('First name').fill(ADMIN.firstName);
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Confirm password').fill('short');
    await page.getByRole('button', { name: 'Create administrator account' }).click();
    await page.getByRole('alert').filter({ hasText: 'password must be 12 to 256 characters' }).waitFor();
    t.pass('an API validation error is shown next to the form');
    await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
    await page.getByLabel('Confirm password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Create administrator account' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    t.equal(new URL(page.url()).pathname, '/projects');
    await shot(page, '02-projects-empty');

    // -- project ---------------------------------------------------------------------------
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    await dialog.waitFor();
    t.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), await dialog.getByLabel('Project name').getAttribute('id'), 'the dialog starts in its first field');
    await dialog.getByLabel('Project name').fill('homelab');
    t.equal(await dialog.getByLabel('Slug').inputValue(), 'homelab', 'slug derived from the name before saving');
    await dialog.getByLabel('Project name').fill('Home Lab');
    t.equal(await dialog.getByLabel('Slug').inputValue(), 'home-lab', 'the slug follows the name');
    await dialog.getByLabel('Project name').fill('homelab');
    await shot(page, '03-project-create');
    await dialog.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'homelab', level: 1 }).waitFor();
    t.match(page.url(), /\/projects\/[0-9a-f-]{36}\/secrets$/);
    const projectPath = new URL(page.url()).pathname.replace(/\/secrets$/, '');

    // -- bulk paste under prod / -----------------------------------------------------------
    await page.getByRole('navigation', { name: 'Environments' }).getByRole('link', { name: 'prod' }).click();
    await page.waitForURL(/env=prod/);
    await page.getByRole('button', { name: 'Bulk paste' }).click();
    const bulk = page.getByRole('dialog', { name: 'Bulk paste' });
    const lines = Object.entries(INVENTORY).map(([k, v]) => `${k}=${v}`);
    await bulk.getByLabel('KEY=value lines').fill(['# homelab inventory', ...lines, ''].join('\n'));
    await bulk.getByText('14 secrets', { exact: true }).waitFor();
    await shot(page, '04-bulk-paste');
    await bulk.getByRole('button', { name: 'Add 14 secrets' }).click();
    await bulk.waitFor({ state: 'hidden' });
    const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
    await table.waitFor();
    t.equal(await table.locator('tbody tr').count(), 14, '14 rows');
    t.equal(await table.getByTestId('secret-value').count(), 0, 'values hidden by default');

    // reveal, search, then navigation hides the value again
    await page.getByRole('button', { name: 'Reveal value of CHAT_WEBHOOK_ALERTS' }).click();
    await table.getByText(INVENTORY.CHAT_WEBHOOK_ALERTS!).waitFor();
    await page.getByRole('button', { name: 'Copy value of ROUTER_API_KEY' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied to clipboard' }).first().waitFor();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), INVENTORY.ROUTER_API_KEY, 'copy puts the value on the clipboard');
    await page.getByLabel('Search secrets by key').fill('webhook');
    t.equal(await table.locator('tbody tr').count(), 3, 'search by key');
    await shot(page, '05-secrets');
    await page.getByLabel('Search secrets by key').fill('');
    await page.getByRole('navigation', { name: 'Environments' }).getByRole('link', { name: 'dev' }).click();
    await page.getByText('No secrets in dev /').waitFor();
    await page.goBack();
    await table.waitFor();
    t.equal(await table.getByTestId('secret-value').count(), 0, 'revealed value hidden again after navigation');

    // -- machine identity --------------------------------------------------------------------
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Machine identities' }).click();
    await page.getByRole('heading', { name: 'Machine identities' }).waitFor();
    await page.getByRole('button', { name: 'New identity' }).click();
    const idDialog = page.getByRole('dialog', { name: 'New machine identity' });
    await idDialog.getByLabel('Name').fill('homelab-eso');
    await idDialog.getByRole('button', { name: 'Create with Universal Auth' }).click();
    const { dialog: creds, clientId, clientSecret } = await shownCredentials(page, 'homelab-eso');
    t.match(clientId, /^[0-9a-f-]{36}$/, 'client id shown');
    t.match(clientSecret, /^[0-9a-f]{64}$/, 'client secret shown');
    await creds.getByRole('button', { name: 'Copy client secret' }).click();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), clientSecret, 'copy button copies the secret');
    await creds.getByRole('button', { name: 'Copy client ID' }).click();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), clientId, 'copy button copies the client id');
    await shot(page, '06-credentials');
    await creds.getByRole('button', { name: 'I have stored the secret' }).click();
    await creds.waitFor({ state: 'hidden' });
    t.equal(await page.getByText(clientSecret).count(), 0, 'the secret is gone from the page');
    await page.getByRole('link', { name: 'homelab-eso' }).click();
    await page.getByRole('table', { name: 'Client secrets' }).waitFor();
    t.equal(await page.getByRole('table', { name: 'Client secrets' }).locator('tbody tr').count(), 1, 'client secret listed');
    t.equal(await page.getByText(clientSecret).count(), 0, 'listed without its value');
    await shot(page, '07-identity');

    // -- member ----------------------------------------------------------------------------
    await page.goto(`${svc.url}${projectPath}/members`);
    await page.getByRole('heading', { name: 'Add a member' }).waitFor();
    const addForm = page.getByRole('form', { name: 'Add a member' });
    await addForm.getByLabel('Identity').selectOption({ label: 'homelab-eso' });
    await addForm.getByLabel('Role').selectOption('member');
    await addForm.getByRole('button', { name: 'Add member' }).click();
    await page.getByLabel('Role of homelab-eso').waitFor();
    t.equal(await page.getByLabel('Role of homelab-eso').inputValue(), 'member');
    await shot(page, '08-members');

    // -- export ----------------------------------------------------------------------------
    await page.goto(`${svc.url}${projectPath}/secrets?env=prod`);
    await page.getByRole('table', { name: 'Secrets in prod /', exact: true }).waitFor();
    const [jsonDl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export JSON' }).click()]);
    t.equal(jsonDl.suggestedFilename(), 'homelab-prod-root.json');
    const exported = JSON.parse(readFileSync((await jsonDl.path())!, 'utf8')) as { secrets: { key: string; value: string }[]; environment: string; secretPath: string };
    t.same(Object.fromEntries(exported.secrets.map((s) => [s.key, s.value])), INVENTORY, 'JSON export holds the inventory');
    t.equal(exported.secretPath, '/');
    const [csvDl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    t.equal(csvDl.suggestedFilename(), 'homelab-prod-root.csv');
    const csv = readFileSync((await csvDl.path())!, 'utf8').trimEnd().split('\r\n');
    t.equal(csv[0], 'key,value,comment');
    t.same(csv.slice(1).sort(), Object.entries(INVENTORY).map(([k, v]) => `${k},${v},`).sort(), 'CSV export holds the inventory');

    // -- audit -----------------------------------------------------------------------------
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByText(/Chain verified/).waitFor();
    const audit = page.getByRole('table', { name: 'Audit entries, newest first' });
    await audit.waitFor();
    t.match(await audit.locator('tbody tr').first().textContent(), /export-secrets/, 'newest first');
    await page.getByLabel('Event').selectOption('create-secret');
    await waitForCount(page, 'table tbody tr', 14);
    t.pass('filter by event');
    await page.getByLabel('Event').selectOption('');
    await shot(page, '09-audit');
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'General' }).waitFor();
    await shot(page, '10-settings');

    // -- the machine API with the copied credentials ----------------------------------------
    const token = await login(svc.url, { clientId, clientSecret });
    const res = await fetch(`${svc.url}/api/v3/secrets/raw?environment=prod&secretPath=%2F&workspaceSlug=homelab`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(res.status, 200);
    const body = (await res.json()) as { secrets: { secretKey: string; secretValue: string }[] };
    t.same(Object.fromEntries(body.secrets.map((s) => [s.secretKey, s.secretValue])), INVENTORY, 'the operator reads the 14 secrets');
});

// Login and session behaviour in a real browser: the second visit shows the login (not
// the registration), a wrong password says "Invalid login", a reload keeps the session,
// a revealed value is hidden again after navigation; dark-mode screenshots.
import t from 'tap';
import { INVENTORY } from '../helpers/service.js';
import { ADMIN, browserTest, homelabService, loginThroughUi, newPage, shot, waitForValue } from './helpers.js';

browserTest(t, 'login, wrong password, reload, reveal then navigate', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { projectId } = seeded;
  const { page } = await newPage(t);

  // second visit: login, not registration (also for a deep link)
  await page.goto(`${svc.url}/setup`);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/login', 'the set-up screen is not offered once set up');
  t.equal(await page.getByRole('heading', { name: 'Set up this instance' }).count(), 0);

  await loginThroughUi(page, svc.url, 'not the right password');
  const alert = page.getByRole('alert').filter({ hasText: 'Invalid login' });
  await alert.waitFor();
  t.pass('wrong password shows "Invalid login"');
  t.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true', 'the field is marked invalid');
  await shot(page, '11-login-error');

  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.getByRole('link', { name: 'homelab' }).waitFor();

  // reload: the cookie session and a fresh CSRF token come back from /users/me
  await page.goto(`${svc.url}/projects/${projectId}/secrets?env=prod`);
  const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  await table.waitFor();
  t.equal(await table.locator('tbody tr').count(), Object.keys(INVENTORY).length);

  // a write after the reload works (CSRF header from /users/me)
  await page.getByRole('button', { name: 'Edit ROUTER_API_KEY' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit ROUTER_API_KEY' });
  await edit.getByLabel('Value').waitFor();
  await waitForValue(page, 'dialog[open] textarea', 'router-key-1234');
  await edit.getByLabel('Value').fill('router-key-9999');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await edit.waitFor({ state: 'hidden' });
  await table.locator('tr[data-key="ROUTER_API_KEY"]').getByText('v2').waitFor();
  t.pass('edit after reload saved version 2');

  // history and restore
  await page.getByRole('button', { name: 'History of ROUTER_API_KEY' }).click();
  const history = page.getByRole('dialog', { name: 'History of ROUTER_API_KEY' });
  await history.getByRole('button', { name: 'Restore version 1' }).click();
  await history.waitFor({ state: 'hidden' });
  await table.locator('tr[data-key="ROUTER_API_KEY"]').getByText('v3').waitFor();

  // reveal, then navigate away and back: hidden again
  await page.getByRole('button', { name: 'Reveal value of ROUTER_API_KEY' }).click();
  await table.getByText('router-key-1234').waitFor();
  t.pass('restored value revealed');
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByRole('heading', { name: 'Add a member' }).waitFor();
  await page.getByRole('link', { name: 'Secrets' }).click();
  await table.waitFor();
  t.equal(await table.getByTestId('secret-value').count(), 0, 'hidden after navigating away and back');
  t.equal(await page.getByText('router-key-1234').count(), 0);

  // the same after a browser back/forward
  await page.getByRole('button', { name: 'Reveal value of GATEWAY_TOKEN' }).click();
  await table.getByTestId('secret-value').waitFor();
  await page.getByRole('navigation', { name: 'Environments' }).getByRole('link', { name: 'staging' }).click();
  await page.getByText('No secrets in staging /').waitFor();
  await page.goBack();
  await table.waitFor();
  t.equal(await table.getByTestId('secret-value').count(), 0, 'hidden after switching environment and back');

  // an API error next to what caused it: adding a key that exists
  await page.getByRole('button', { name: 'Add secret' }).click();
  const add = page.getByRole('dialog', { name: 'Add secret' });
  await add.getByLabel('Key').fill('GATEWAY_TOKEN');
  await add.getByLabel('Value').fill('x');
  await add.getByRole('button', { name: 'Add secret' }).click();
  await add.getByRole('alert').waitFor();
  t.match(await add.getByRole('alert').textContent(), /already exists/i, 'duplicate key error shown in the dialog');
  await page.keyboard.press('Escape');
  await add.waitFor({ state: 'hidden' });

  // keyboard: Tab from the page start reaches the skip link first
  await page.reload();
  await table.waitFor();
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate('document.activeElement?.textContent?.trim()'), 'Skip to content');

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  const me = await page.evaluate("fetch('/api/v1/users/me').then(r => r.status)");
  t.equal(me, 401, 'logged out');
});

browserTest(t, 'dark mode (prefers-color-scheme) screenshots', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { projectId } = seeded;
  const { page } = await newPage(t, { colorScheme: 'dark' });
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  const bg = await page.evaluate('getComputedStyle(document.body).backgroundColor');
  t.equal(bg, 'rgb(14, 17, 24)', 'dark background');
  await shot(page, '12-dark-projects');
  await page.goto(`${svc.url}/projects/${projectId}/secrets?env=prod`);
  await page.getByRole('table', { name: 'Secrets in prod /', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Reveal value of LLM_API_KEY' }).click();
  await page.getByTestId('secret-value').waitFor();
  await shot(page, '13-dark-secrets');
});

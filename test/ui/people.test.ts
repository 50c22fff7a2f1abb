// Issue 12, points 5 and 6 in a real browser: the registration screen asks for the setup
// code in production mode (and only then); the superadmin resets a password, disables,
// enables and deletes a person on the People page, each ending that person's sessions;
// a person changes their own password on My account.
import t from 'tap';
import { startService } from '../../server/app.js';
import { setupCodeFrom } from '../../server/auth/tokens.js';
import { parseConfig } from '../../server/config.js';
import { textLogger, type Logger } from '../../server/log.js';
import { request } from '../helpers/http.js';
import { startTestService, testEnv } from '../helpers/service.js';
import { ADMIN, browserTest, homelabService, loginThroughUi, newPage, shot } from './helpers.js';

browserTest(t, 'registration asks for the setup code in production mode only', async (t) => {
  const lines: string[] = [];
  const log: Logger = textLogger({ info: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m) => void lines.push(m) });
  const env = await testEnv(t, 'embedded', { NODE_ENV: 'production' });
  const prod = await startService(parseConfig(env), log);
  t.teardown(() => prod.close());
  const url = `http://127.0.0.1:${prod.port}`;
  // What `vault-standalone setup-code` prints (test/server/cli/operator.test.ts); the log only names that command.
  const code = setupCodeFrom(Buffer.from(env.AUTH_SECRET!, 'base64'));
  t.match(lines.join('\n'), /vault-standalone setup-code/);

  const { page } = await newPage(t);
  await page.goto(url);
  await page.getByRole('heading', { name: 'Set up this instance' }).waitFor();
  const field = page.getByLabel('Setup code');
  await field.waitFor();
  t.pass('the setup code field is shown');
  await page.getByLabel('First name').fill(ADMIN.firstName);
  await page.getByLabel('Email').fill(ADMIN.email);
  await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
  await page.getByLabel('Confirm password').fill(ADMIN.password);
  await field.fill('0000-0000-0000-0000-0000-0000-0000-0000');
  await page.getByRole('button', { name: 'Create administrator account' }).click();
  await page.getByRole('alert').filter({ hasText: 'Invalid setup code' }).waitFor();
  t.pass('a wrong code is refused on the form');
  await shot(page, '40-setup-code');
  await field.fill(code);
  await page.getByRole('button', { name: 'Create administrator account' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  t.pass('the derived code registers the administrator');

  const dev = await startTestService(t, await testEnv(t, 'embedded'));
  const { page: devPage } = await newPage(t);
  await devPage.goto(dev.url);
  await devPage.getByRole('heading', { name: 'Set up this instance' }).waitFor();
  t.equal(await devPage.getByLabel('Setup code').count(), 0, 'development: no setup code asked');
});

browserTest(t, 'People: reset a password, disable, enable, delete; My account: change my password', async (t) => {
  const { svc } = await homelabService(t);
  const api = (method: string, path: string, token?: string, json?: unknown) => request(`${svc.url}${path}`, { method, token, json });
  const grace = { email: 'grace@example.test', password: 'grace initial passphrase', firstName: 'Grace', lastName: 'Hopper' };
  const adminToken = (await api('POST', '/api/v3/auth/login', undefined, { email: ADMIN.email, password: ADMIN.password })).body.token;
  t.equal((await api('POST', '/api/v1/users', adminToken, grace)).status, 200);
  const graceLogin = async (password: string) => api('POST', '/api/v3/auth/login', undefined, { email: grace.email, password });
  const me = async (token: string) => (await api('GET', '/api/v1/users/me', token)).status;

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'People' }).click();
  const people = page.getByRole('table', { name: 'People' });
  const row = people.locator(`tr[data-email="${grace.email}"]`);
  await row.waitFor();
  t.equal(await people.locator(`tr[data-email="${ADMIN.email}"]`).getByRole('button').count(), 0, 'no actions on my own row');

  // -- reset password ----------------------------------------------------------------------
  let token = (await graceLogin(grace.password)).body.token;
  await row.getByRole('button', { name: `Reset password of ${grace.email}` }).click();
  const reset = page.getByRole('dialog', { name: 'Reset password' });
  await reset.getByRole('button', { name: 'Generate' }).click();
  await reset.getByRole('button', { name: 'Reset password' }).click();
  const shown = page.getByRole('dialog', { name: 'Password reset' });
  await shown.waitFor();
  const newPassword = (await shown.getByTestId('reset-password').textContent())!.trim();
  t.match(newPassword, /^[A-Za-z0-9]{20}$/, 'the new password is shown once');
  await shot(page, '41-password-reset');
  await shown.getByRole('button', { name: 'Done' }).click();
  t.equal(await me(token), 401, "the reset ended Grace's session");
  t.equal((await graceLogin(grace.password)).status, 401, 'the old password is refused');
  token = (await graceLogin(newPassword)).body.token;
  t.equal(await me(token), 200, 'the new password logs in');

  // -- disable, enable ------------------------------------------------------------------
  await row.getByRole('button', { name: `Disable ${grace.email}` }).click();
  const disable = page.getByRole('dialog', { name: 'Disable person' });
  await disable.getByRole('button', { name: 'Disable' }).click();
  await row.getByText('disabled', { exact: true }).waitFor();
  t.pass('the row says disabled');
  await shot(page, '42-person-disabled');
  t.equal(await me(token), 401, 'disabling ended the session');
  t.equal((await graceLogin(newPassword)).status, 401, 'a disabled person cannot log in');
  await row.getByRole('button', { name: `Enable ${grace.email}` }).click();
  await row.getByRole('button', { name: `Disable ${grace.email}` }).waitFor();
  t.equal(await row.getByText('disabled', { exact: true }).count(), 0, 'enabled again');
  t.equal((await graceLogin(newPassword)).status, 200, 'logs in again');

  // -- My account: Grace changes her password in her own browser ----------------------------
  const other = (await graceLogin(newPassword)).body.token;
  const { page: gracePage } = await newPage(t);
  await gracePage.goto(svc.url);
  await gracePage.getByRole('heading', { name: 'Log in' }).waitFor();
  await gracePage.getByLabel('Email').fill(grace.email);
  await gracePage.getByLabel('Password').fill(newPassword);
  await gracePage.getByRole('button', { name: 'Log in' }).click();
  await gracePage.getByRole('heading', { name: 'Projects' }).waitFor();
  await gracePage.getByRole('link', { name: 'My account' }).click();
  await gracePage.getByRole('heading', { name: 'My account' }).waitFor();
  const form = gracePage.getByRole('form', { name: 'Change password' });
  await form.getByLabel('Current password').fill('not my password at all');
  await form.getByLabel('New password', { exact: true }).fill('grace chosen passphrase');
  await form.getByLabel('Confirm new password').fill('grace chosen passphrase');
  await form.getByRole('button', { name: 'Change password' }).click();
  await gracePage.getByRole('alert').filter({ hasText: 'The current password is wrong' }).waitFor();
  t.equal(await form.getByLabel('Current password').getAttribute('aria-invalid'), 'true', 'the current password is marked wrong');
  await form.getByLabel('Current password').fill(newPassword);
  await form.getByRole('button', { name: 'Change password' }).click();
  await gracePage.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();
  await shot(gracePage, '43-account-password');
  t.equal(await me(other), 401, "Grace's other session ended");
  t.equal((await graceLogin('grace chosen passphrase')).status, 200, 'the chosen password logs in');
  await gracePage.reload();
  await gracePage.getByRole('heading', { name: 'My account' }).waitFor();
  t.equal(await gracePage.getByRole('heading', { name: 'Log in' }).count(), 0, 'this browser stays signed in (its new session)');

  // -- delete ---------------------------------------------------------------------------
  await row.getByRole('button', { name: `Delete ${grace.email}` }).click();
  const del = page.getByRole('dialog', { name: 'Delete person' });
  const confirm = del.getByRole('button', { name: 'Delete person' });
  t.equal(await confirm.isDisabled(), true, 'the email must be typed first');
  await del.getByLabel(`Type "${grace.email}" to confirm`).fill(grace.email);
  await confirm.click();
  await row.waitFor({ state: 'detached' });
  t.pass('the row is gone');
  t.equal((await graceLogin('grace chosen passphrase')).status, 401, 'a deleted person cannot log in');
  await gracePage.getByRole('link', { name: 'Projects' }).click();
  await gracePage.getByRole('heading', { name: 'Log in' }).waitFor();
  t.pass("Grace's browser is sent to the login once her session is gone");
});

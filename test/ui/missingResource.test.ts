// A link to a project or a machine identity that does not exist (deleted, mistyped) in a
// real browser: the page shows the API's 404 message where the content would be, and
// nothing else breaks (any uncaught page error fails the test, see newPage).
import t from 'tap';
import type { Page } from 'playwright-core';
import { startTestService, testEnv } from '../helpers/service.js';
import { browserTest, loginThroughUi, newPage, shot, signupOverApi } from './helpers.js';

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

/** What the API answers the page's own session for `path`. */
async function apiAnswer(page: Page, path: string): Promise<{ status: number; message: string }> {
  return page.evaluate(async (p) => {
    const r = await fetch(p, { headers: { accept: 'application/json' } });
    return { status: r.status, message: ((await r.json()) as { message: string }).message };
  }, path);
}

browserTest(t, 'an unknown project or identity: the API 404 message in the page, no crash', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  await signupOverApi(svc.url);
  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();

  // -- a project -------------------------------------------------------------------------
  const project = await apiAnswer(page, `/api/v1/projects/${UNKNOWN}`);
  t.equal(project.status, 404, 'the API has no such project');
  await page.goto(`${svc.url}/projects/${UNKNOWN}/secrets`);
  const projectAlert = page.getByRole('main').getByRole('alert');
  await projectAlert.waitFor();
  t.equal((await projectAlert.textContent())?.trim(), project.message, "the page shows the API's message");
  t.equal(await page.getByRole('status').filter({ hasText: 'Loading' }).count(), 0, 'no spinner left behind');
  t.equal(await page.getByRole('heading', { level: 1 }).count(), 0, 'no project header');
  await shot(page, '50-unknown-project');

  // -- an identity -------------------------------------------------------------------------
  const identity = await apiAnswer(page, `/api/v1/identities/${UNKNOWN}`);
  t.equal(identity.status, 404, 'the API has no such identity');
  await page.goto(`${svc.url}/identities/${UNKNOWN}`);
  const identityAlert = page.getByRole('main').getByRole('alert');
  await identityAlert.waitFor();
  t.equal((await identityAlert.textContent())?.trim(), identity.message, "the page shows the API's message");
  t.equal((await page.getByRole('navigation', { name: 'Breadcrumb' }).locator('[aria-current="page"]').textContent())?.trim(), '…', 'the breadcrumb names no identity');
  t.equal(await page.getByRole('button', { name: 'Delete identity…' }).count(), 0, 'nothing to delete');
  await shot(page, '51-unknown-identity');

  // the app still works: back to the projects by the main navigation
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  t.pass('navigation still works');
});

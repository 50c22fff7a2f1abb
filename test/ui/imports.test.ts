// Secret imports in the secrets screen, in a real browser: add one (environment and
// path), see it listed with the keys it brings (values stay hidden), remove it.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot } from './helpers.js';

browserTest(t, 'imports: add, listed with their keys, remove', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const project = { id: seeded.projectId };
  await svc.services.folders.create(SYSTEM, { project, environment: 'staging', parentPath: '/', name: 'shared' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/shared', key: 'SHARED_URL', value: 'https://shared.example' });
  const defined = async () => (await svc.services.secretImports.list(SYSTEM, { project, environment: 'prod', path: '/' })).map((i) => `${i.importEnv.slug}:${i.importPath}`);

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=prod`);
  await page.getByRole('table', { name: 'Secrets in prod /', exact: true }).waitFor();
  t.equal(await page.getByRole('region', { name: 'Imports' }).count(), 0, 'no imports section while there are none');

  await page.getByRole('button', { name: 'Import folder' }).click();
  const dialog = page.getByRole('dialog', { name: 'Import folder' });
  await dialog.getByLabel('From environment').selectOption('staging');
  await dialog.getByLabel('From path').fill('/shared/');
  await dialog.getByRole('button', { name: 'Import', exact: true }).click();
  await dialog.waitFor({ state: 'hidden' });
  const row = page.getByRole('region', { name: 'Imports' }).locator('li[data-import="staging:/shared"]');
  await row.getByText('SHARED_URL').waitFor();
  t.notOk(((await page.content()).includes('https://shared.example')), 'the imported value is not in the page');
  t.same(await defined(), ['staging:/shared'], 'created through the API');
  await shot(page, '50-secret-imports');

  // A refused import (a cycle) says why and writes nothing.
  await svc.services.secretImports.create(SYSTEM, { project, environment: 'staging', path: '/shared', import: { environment: 'dev', path: '/' } });
  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=dev`);
  await page.getByRole('button', { name: 'Import folder' }).click();
  const cyc = page.getByRole('dialog', { name: 'Import folder' });
  await cyc.getByLabel('From environment').selectOption('prod');
  await cyc.getByRole('button', { name: 'Import', exact: true }).click();
  await cyc.getByRole('alert').filter({ hasText: 'Cyclic import' }).waitFor();
  await cyc.getByRole('button', { name: 'Cancel' }).click();

  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=prod`);
  await row.getByText('SHARED_URL').waitFor();
  await page.getByRole('button', { name: 'Remove import staging /shared' }).click();
  const confirm = page.getByRole('dialog', { name: 'Remove import' });
  await confirm.getByRole('button', { name: 'Remove import' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await page.getByRole('region', { name: 'Imports' }).waitFor({ state: 'detached' });
  t.same(await defined(), [], 'removed through the API');
});

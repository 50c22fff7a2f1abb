// The secrets screen updates by itself (issue 30 point 5): a change someone else makes to
// the folder on screen appears without a reload, through the project's event stream; a
// change elsewhere leaves the list alone; a change to a folder it imports refreshes the
// import's keys.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { browserTest, homelabService, loginThroughUi, newPage } from './helpers.js';

browserTest(t, 'secrets screen: another person\'s changes appear by themselves', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const project = { id: seeded.projectId };
  const here = { project, environment: 'prod', secretPath: '/' };
  await svc.services.folders.create(SYSTEM, { project, environment: 'staging', parentPath: '/', name: 'shared' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/shared', key: 'SHARED_ONE', value: 's1' });
  await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/shared' } });

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=prod`);
  const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  await table.waitFor();
  let gets = 0;
  page.on('request', (r) => {
    if (r.method() === 'GET' && r.url().includes('/api/v4/secrets?')) gets++;
  });

  // Elsewhere first: the list stays as it is (no reload for a folder not on screen).
  await svc.services.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'DEV_ONLY', value: 'd' });
  // Then here: the new key appears without any action in the page.
  await svc.services.secrets.create(SYSTEM, { ...here, key: 'ADDED_ELSEWHERE', value: 'hidden-value-1' });
  await table.getByText('ADDED_ELSEWHERE', { exact: true }).waitFor();
  t.equal(await table.getByText('DEV_ONLY').count(), 0);
  t.notOk((await page.content()).includes('hidden-value-1'), 'the value is not fetched for the list');
  await page.getByTestId('live-note').filter({ hasText: 'List updated' }).waitFor({ state: 'attached' });

  await svc.services.secrets.remove(SYSTEM, { ...here, key: 'ADDED_ELSEWHERE' });
  await table.getByText('ADDED_ELSEWHERE', { exact: true }).waitFor({ state: 'detached' });

  // A change in the imported folder refreshes the import's keys.
  await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/shared', key: 'SHARED_TWO', value: 's2' });
  await page.getByRole('region', { name: 'Imports' }).getByText('SHARED_TWO').waitFor();
  t.ok(gets >= 2, `the list and the imports were re-read (${gets} reads), not the page reloaded`);
});

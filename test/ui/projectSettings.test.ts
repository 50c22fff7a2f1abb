// Project settings in a real browser: General (rename, change the slug, an API error
// shown next to the form), environments (add, delete), and deleting the project: the
// name must be typed, and a project that holds secrets needs a second confirmation.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot } from './helpers.js';

browserTest(t, 'settings: rename, re-slug, environments, delete with confirmation', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { projectId } = seeded;
  await svc.services.projects.create(SYSTEM, { name: 'taken', slug: 'taken' });
  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();

  await page.goto(`${svc.url}/projects/${projectId}/settings`);
  const general = page.getByRole('form', { name: 'General settings' });
  await general.waitFor();
  t.equal(await general.getByLabel('Project name').inputValue(), 'homelab');
  t.equal(await general.getByLabel('Slug').inputValue(), 'homelab');

  // -- a slug that another project has: the API's error next to the form, nothing saved --
  await general.getByLabel('Slug').fill('taken');
  await general.getByRole('button', { name: 'Save changes' }).click();
  const clash = general.getByRole('alert');
  await clash.waitFor();
  t.match(await clash.textContent(), /taken/, 'the clash is explained in the form');
  t.equal((await svc.services.projects.get(SYSTEM, { id: projectId })).slug, 'homelab', 'nothing changed');

  // -- rename and re-slug ------------------------------------------------------------------
  await general.getByLabel('Project name').fill('Home Lab');
  await general.getByLabel('Slug').fill('home-lab');
  await general.getByRole('button', { name: 'Save changes' }).click();
  await general.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  await page.getByRole('heading', { name: 'Home Lab', level: 1 }).waitFor();
  const saved = await svc.services.projects.get(SYSTEM, { id: projectId });
  t.same({ name: saved.name, slug: saved.slug }, { name: 'Home Lab', slug: 'home-lab' }, 'saved through the API');
  await shot(page, '40-settings-renamed');

  // -- environments: add qa (slug follows the name), then delete it ----------------------
  const addEnv = page.getByRole('form', { name: 'Add an environment' });
  await addEnv.getByLabel('New environment name').fill('QA Tests');
  t.equal(await addEnv.getByLabel('Slug').inputValue(), 'qa-tests', 'the environment slug follows the name');
  await addEnv.getByRole('button', { name: 'Add environment' }).click();
  await page.getByRole('button', { name: 'Delete environment QA Tests' }).waitFor();
  t.ok((await svc.services.projects.get(SYSTEM, { id: projectId })).environments.some((e) => e.slug === 'qa-tests'), 'qa-tests exists');
  await page.getByRole('button', { name: 'Delete environment QA Tests' }).click();
  const envConfirm = page.getByRole('dialog', { name: 'Delete environment' });
  await envConfirm.getByRole('button', { name: 'Delete environment' }).click();
  await envConfirm.waitFor({ state: 'hidden' });
  await page.getByRole('button', { name: 'Delete environment QA Tests' }).waitFor({ state: 'detached' });
  t.notOk((await svc.services.projects.get(SYSTEM, { id: projectId })).environments.some((e) => e.slug === 'qa-tests'), 'qa-tests deleted');

  // -- delete the project: type its slug, then confirm again because it holds secrets ------
  await page.getByRole('button', { name: 'Delete project…' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete project' });
  const go = confirm.getByRole('button', { name: 'Delete project', exact: true });
  t.ok(await go.isDisabled(), 'disabled until the slug is typed');
  await confirm.getByLabel('Type "home-lab" to confirm').fill('home-la');
  t.ok(await go.isDisabled(), 'still disabled for a near miss');
  await confirm.getByLabel('Type "home-lab" to confirm').fill('home-lab');
  await go.click();
  await confirm.getByRole('alert').filter({ hasText: 'still holds secrets' }).waitFor();
  t.equal((await svc.services.projects.get(SYSTEM, { id: projectId })).slug, 'home-lab', 'not deleted without the second confirmation');
  await shot(page, '41-delete-project-force');
  await confirm.getByRole('button', { name: 'Delete project and its secrets' }).click();
  await page.waitForURL(/\/projects$/);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  t.equal(await page.getByRole('link', { name: 'Home Lab' }).count(), 0, 'gone from the list');
  await page.getByRole('link', { name: 'taken' }).waitFor();
  const lookup = await page.evaluate(`fetch('/api/v1/projects/${projectId}').then(r => r.status)`);
  t.equal(lookup, 404, 'the API no longer knows it');
});

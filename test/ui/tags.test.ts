// Tags in the secrets screen, in a real browser: chips on the secrets that carry them,
// the list filtered by a tag (the API's tagSlugs), a tag attached in the edit form.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot, waitForCount } from './helpers.js';

browserTest(t, 'tags: chips, filter by tag, attach in the edit form', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const project = { id: seeded.projectId };
  const db = await svc.services.tags.create(SYSTEM, { project, slug: 'db', color: 'red' });
  const chat = await svc.services.tags.create(SYSTEM, { project, slug: 'chat' });
  for (const key of ['CHAT_BOT_TOKEN', 'CHAT_WEBHOOK_ALERTS']) {
    await svc.services.secrets.update(SYSTEM, { project, environment: 'prod', secretPath: '/', key, tagIds: [chat.id] });
  }
  const tagsOf = async (key: string) =>
    (await svc.services.secrets.get({ kind: 'identity', identityId: seeded.identityId }, { project, environment: 'prod', secretPath: '/', secretName: key })).tags?.map((x) => x.slug) ?? [];

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=prod`);
  const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  await table.waitFor();
  await table.locator('tr[data-key="CHAT_BOT_TOKEN"] .tag-chip[data-tag="chat"]').waitFor();
  t.equal(await table.locator('.tag-chip').count(), 2, 'a chip on each tagged secret, none elsewhere');

  await page.getByLabel('Filter by tag').selectOption('chat');
  await waitForCount(page, 'table.secrets-table tbody tr', 2);
  t.same(await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { key: string } }).dataset.key)), ['CHAT_BOT_TOKEN', 'CHAT_WEBHOOK_ALERTS'], 'filtered to the tag');
  await shot(page, '51-tags-filter');
  await page.getByLabel('Filter by tag').selectOption('');
  await waitForCount(page, 'table.secrets-table tbody tr', 14);

  await page.getByRole('button', { name: 'Edit IDP_POSTGRES_PASSWORD' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit IDP_POSTGRES_PASSWORD' });
  await edit.getByRole('checkbox', { name: 'db' }).check();
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await edit.waitFor({ state: 'hidden' });
  await table.locator('tr[data-key="IDP_POSTGRES_PASSWORD"] .tag-chip[data-tag="db"]').waitFor();
  t.same(await tagsOf('IDP_POSTGRES_PASSWORD'), ['db'], 'saved through the API');
  t.same(await tagsOf('CHAT_BOT_TOKEN'), ['chat'], 'others unchanged');
  t.ok(db.id, 'db tag exists');

  // -- the project's tags: create one, delete one (its chips go) ----------------------------
  await page.getByRole('button', { name: 'Tags', exact: true }).click();
  const tags = page.getByRole('dialog', { name: 'Tags' });
  await tags.getByLabel('New tag').fill('web');
  await tags.getByRole('button', { name: 'Create tag' }).click();
  await tags.getByRole('list', { name: 'Project tags' }).getByText('web', { exact: true }).waitFor();
  const refused = tags.getByLabel('New tag');
  await refused.fill('Not A Slug');
  await tags.getByRole('button', { name: 'Create tag' }).click();
  await tags.getByRole('alert').filter({ hasText: 'slug' }).waitFor();
  await tags.getByRole('button', { name: 'Delete tag chat' }).click();
  await tags.getByRole('button', { name: 'Delete tag chat' }).waitFor({ state: 'detached' });
  t.same((await svc.services.tags.list(SYSTEM, project)).map((x) => x.slug), ['db', 'web'], 'created and deleted through the API');
  await page.keyboard.press('Escape');
  await table.locator('.tag-chip[data-tag="chat"]').first().waitFor({ state: 'detached' });
  t.same(await tagsOf('CHAT_BOT_TOKEN'), [], 'a deleted tag is carried by nothing');
});

// Keys marked as never changing (the seed's IDP_SECRET_KEY) in a real browser: the API
// refuses a change with 409, the UI says why and only a second, explicit confirmation
// sends the override; deleting a project that holds one asks three times.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { INVENTORY, login } from '../helpers/service.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot, waitForValue } from './helpers.js';

browserTest(t, 'protected keys: edit and delete need a second confirmation; a project delete a third', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { projectId } = seeded;
  const where = { project: { id: projectId }, environment: 'prod', secretPath: '/' };
  for (const key of ['IDP_SECRET_KEY', 'GATEWAY_TOKEN']) t.ok(await svc.services.secrets.protect(SYSTEM, { ...where, key }), `${key} marked`);
  /** What the operator (homelab-eso, member) reads of one key: its version and value, or the status. */
  const read = async (key: string) => {
    const token = await login(svc.url, seeded);
    const res = await fetch(`${svc.url}/api/v3/secrets/raw/${key}?workspaceSlug=homelab&environment=prod&secretPath=%2F`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) return { status: res.status };
    const { secret } = (await res.json()) as { secret: { version: number; secretValue: string } };
    return { status: 200, version: secret.version, value: secret.secretValue };
  };

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${projectId}/secrets?env=prod`);
  const table = page.getByRole('table', { name: 'Secrets in prod /', exact: true });
  await table.waitFor();

  // -- edit: refused with the reason, then "Save anyway" sends the override ---------------
  await page.getByRole('button', { name: 'Edit IDP_SECRET_KEY' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit IDP_SECRET_KEY' });
  await waitForValue(page, 'dialog[open] textarea', INVENTORY.IDP_SECRET_KEY!);
  await edit.getByLabel('Value').fill('f'.repeat(64));
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await edit.getByRole('alert').filter({ hasText: 'marked as never changing' }).waitFor();
  t.same(await read('IDP_SECRET_KEY'), { status: 200, version: 1, value: INVENTORY.IDP_SECRET_KEY }, 'not changed by the first save');
  await shot(page, '42-protected-key-edit');
  await edit.getByRole('button', { name: 'Save anyway' }).click();
  await edit.waitFor({ state: 'hidden' });
  await table.locator('tr[data-key="IDP_SECRET_KEY"]').getByText('v2').waitFor();
  t.same(await read('IDP_SECRET_KEY'), { status: 200, version: 2, value: 'f'.repeat(64) }, 'saved with the override');

  // -- a fresh edit of another protected key starts unconfirmed again --------------------
  await page.getByRole('button', { name: 'Edit GATEWAY_TOKEN' }).click();
  const edit2 = page.getByRole('dialog', { name: 'Edit GATEWAY_TOKEN' });
  await edit2.getByRole('button', { name: 'Save changes' }).waitFor();
  t.equal(await edit2.getByRole('button', { name: 'Save anyway' }).count(), 0, 'the override is not carried over');
  await edit2.getByRole('button', { name: 'Cancel' }).click();
  await edit2.waitFor({ state: 'hidden' });

  // -- delete one protected key: a second confirmation ------------------------------------
  await page.getByRole('button', { name: 'Delete GATEWAY_TOKEN' }).click();
  const del = page.getByRole('dialog', { name: 'Delete secret' });
  await del.getByRole('button', { name: 'Delete secret' }).click();
  await del.getByRole('alert').filter({ hasText: 'marked as never changing' }).waitFor();
  t.same(await read('GATEWAY_TOKEN'), { status: 200, version: 1, value: INVENTORY.GATEWAY_TOKEN }, 'still there after the first confirmation');
  await del.getByRole('button', { name: 'Delete protected key' }).click();
  await del.waitFor({ state: 'hidden' });
  await table.locator('tr[data-key="GATEWAY_TOKEN"]').waitFor({ state: 'detached' });
  t.same(await read('GATEWAY_TOKEN'), { status: 404 }, 'deleted');

  // -- delete the project: plain, then force (it holds secrets), then the override --------
  await page.goto(`${svc.url}/projects/${projectId}/settings`);
  await page.getByRole('button', { name: 'Delete project…' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete project' });
  await confirm.getByLabel('Type "homelab" to confirm').fill('homelab');
  await confirm.getByRole('button', { name: 'Delete project', exact: true }).click();
  await confirm.getByRole('alert').filter({ hasText: 'still holds secrets' }).waitFor();
  await confirm.getByRole('button', { name: 'Delete project and its secrets' }).click();
  await confirm.getByRole('alert').filter({ hasText: 'holds keys marked as never changing' }).waitFor();
  t.equal((await svc.services.projects.get(SYSTEM, { id: projectId })).slug, 'homelab', 'not deleted before the override');
  await shot(page, '43-delete-project-protected');
  await confirm.getByRole('button', { name: 'Delete project and its protected keys' }).click();
  await page.waitForURL(/\/projects$/);
  await t.rejects(svc.services.projects.get(SYSTEM, { id: projectId }), { code: 'NOT_FOUND' }, 'deleted with the override');
  const entries = await svc.services.store.sql<{ metadata: { immutableOverride?: boolean } }[]>`
    select metadata from audit_log where event_type = 'delete-secret' and secret_key = 'IDP_SECRET_KEY'`;
  t.ok(entries.some((e) => e.metadata.immutableOverride === true), 'the audit trail records the override');
});

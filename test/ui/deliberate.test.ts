// Access changes are deliberate (issue 32 point 1): moving through a member's role with the
// keyboard sends nothing; Save asks, naming who goes from which role to which, and only then
// sends exactly one PATCH. Dialogs, login and set-up start in their first field, never on ✕.
// The superadmin is not listed as a member one could demote or remove.
import t from 'tap';
import type { Page, Request } from 'playwright-core';
import { browserTest, homelabService, loginThroughUi, newPage } from './helpers.js';

/** The id of the focused element and of the control labelled `label` in `scope`. */
async function focusedIs(page: Page, scope: { getByLabel(l: string, o?: { exact: boolean }): { getAttribute(n: string): Promise<string | null> } }, label: string): Promise<boolean> {
  const id = await scope.getByLabel(label, { exact: true }).getAttribute('id');
  const active = await page.evaluate(() => (globalThis as any).document.activeElement?.id as string | undefined);
  return id !== null && id === active;
}

browserTest(t, 'a role changes only after Save and a confirmation; dialogs start in their first field', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { page } = await newPage(t);
  const writes: Request[] = [];
  page.on('request', (r) => {
    if (r.method() !== 'GET') writes.push(r);
  });

  await page.goto(svc.url);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  t.ok(await focusedIs(page, page, 'Email'), 'login starts in the Email field');
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  writes.length = 0;

  // -- a dialog opens on its first field, and Enter there submits instead of closing -----------
  await page.getByRole('button', { name: 'New project' }).click();
  const newProject = page.getByRole('dialog', { name: 'New project' });
  await newProject.waitFor();
  t.ok(await focusedIs(page, newProject, 'Project name'), 'New project starts in Project name, not on ✕');
  await page.keyboard.type('typed-straight-away');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'typed-straight-away', level: 1 }).waitFor();
  t.pass('typing then Enter created the project');
  // Its creator, the superadmin, is its admin member: shown, not offered for change or removal.
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Members' }).click();
  await page.getByText('administrator: every project').waitFor();
  t.equal(await page.getByRole('button', { name: 'Remove Ada Admin' }).count(), 0, 'the superadmin has no Remove button');
  t.equal(await page.getByLabel('Role of Ada Admin').count(), 0, 'nor a role select');
  writes.length = 0;

  // -- the role select: arrows send nothing -----------------------------------------------------
  await page.goto(`${svc.url}/projects/${seeded.projectId}/members`);
  const roleOf = page.getByLabel('Role of homelab-eso', { exact: true });
  await roleOf.waitFor();
  t.equal(await roleOf.inputValue(), 'member');
  await roleOf.focus();
  for (const key of ['ArrowDown', 'ArrowDown', 'ArrowUp']) await page.keyboard.press(key);
  t.equal(await roleOf.inputValue(), 'viewer', 'the select moved to viewer');
  await page.getByText('Not saved: member → viewer').waitFor();
  const membershipsUrl = `${svc.url}/api/v1/projects/${seeded.projectId}/memberships/identities`;
  const stored = async () => ((await (await fetch(membershipsUrl, { headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ') } })).json()) as any).identityMemberships[0].role as string;
  t.equal(await stored(), 'member', 'the server still has member');
  t.same(
    writes.map((r) => `${r.method()} ${r.url()}`),
    [],
    'arrow keys on the role select sent no request',
  );

  // -- Cancel in the confirmation sends nothing either -----------------------------------------
  await page.getByRole('button', { name: 'Save role of homelab-eso' }).click();
  const confirm = page.getByRole('dialog', { name: 'Change role' });
  await confirm.waitFor();
  t.match(await confirm.textContent(), /homelab-eso goes from member to viewer in homelab/, 'the confirmation names who, what and where');
  t.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent?.trim()), 'Cancel', 'a confirmation without fields starts on Cancel');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await confirm.waitFor({ state: 'hidden' });
  t.same(writes.length, 0, 'Cancel sent nothing');

  // -- Save + confirm: exactly one PATCH ---------------------------------------------------------
  await page.getByRole('button', { name: 'Save role of homelab-eso' }).click();
  await confirm.getByRole('button', { name: 'Change to viewer' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await page.getByText('Not saved').waitFor({ state: 'detached' });
  t.equal(await stored(), 'viewer', 'the server has viewer');
  t.same(
    writes.map((r) => [r.method(), new URL(r.url()).pathname, r.postData()]),
    [['PATCH', `/api/v1/projects/${seeded.projectId}/memberships/identities/${seeded.identityId}`, '{"role":"viewer"}']],
    'exactly one PATCH with the new role',
  );

  // -- Undo puts the select back and sends nothing -----------------------------------------------
  writes.length = 0;
  await roleOf.selectOption('no-access');
  await page.getByRole('button', { name: 'Undo role change of homelab-eso' }).click();
  t.equal(await roleOf.inputValue(), 'viewer', 'undone');
  t.same(writes.length, 0, 'Undo sent nothing');
});
